-- The names of a declared change's generated functions (generate_change),
-- each saying what it does: apply_<name> applies the change to a chunk of
-- a job, restore_<name> (its inverse) restores the rows of a chunk of an
-- undo, preview_<name> judges targets without changing or locking
-- anything. No function of chunks starts with these words, and no two
-- changes' names can meet (each word starts with its own letter).
create or replace function {{ .schema }}.change_function_names(name text, out apply text, out restore text, out preview text)
language sql immutable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select 'apply_' || name, 'restore_' || name, 'preview_' || name
$$;
comment on function {{ .schema }}.change_function_names(text) is
  'chunks helper: the names of the generated functions of the declared change NAME: apply_<name> (the change), restore_<name> (its inverse), preview_<name> (its read-only check).';
