-- The rule of a declared change's name (it becomes part of a function's
-- name, apply_<name>): 1 to 40 lower-case ASCII letters, digits or _,
-- starting with a letter. 22023 naming FIELD otherwise.
create or replace function {{ .schema }}.check_change_name(value text, field text) returns void
language plpgsql immutable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
begin
  if check_change_name.value is null or check_change_name.value !~ '^[a-z][a-z0-9_]{0,39}$' then
    raise exception '%: must be 1 to 40 lower-case ASCII letters, digits or _, starting with a letter, got %',
      check_change_name.field, excerpt(check_change_name.value, true) using errcode = '22023';
  end if;
end
$$;
comment on function {{ .schema }}.check_change_name(text, text) is
  'chunks helper: raises 22023 naming FIELD unless VALUE is a declared change''s name (1 to 40 of a-z, 0-9, _, starting with a letter).';
