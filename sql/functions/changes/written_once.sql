-- An approved job's targets and shape are written once, by register: a
-- chunk reads only its own range and does not hash the whole list again
-- (verify and report do), so a rewrite is refused when it is made. A row
-- deleted by hand is found by the chunk whose range it was in.
create or replace function {{ .schema }}.refuse_rewrite() returns trigger
language plpgsql
set search_path = {{ .schema }}, pg_temp
as $$
begin
  raise exception '%: an approved job''s targets are written once, by register; register a new job instead', tg_table_name
    using errcode = 'CH409';
end
$$;
comment on function {{ .schema }}.refuse_rewrite() is
  'chunks helper (trigger): refuses any UPDATE of change_jobs and change_targets (CH409): an approved job''s targets are written once, by register.';
-- Made once (a migrate again changes nothing), on both tables.
do $$
declare
  v_table text;
begin
  foreach v_table in array array['change_jobs', 'change_targets'] loop
    if not exists (select from pg_trigger as t
                    where t.tgrelid = format('%I.%I', '{{ .schema }}', v_table)::regclass and t.tgname = 'written_once') then
      execute format('create trigger written_once before update on %I.%I for each row execute function %I.refuse_rewrite()',
                     '{{ .schema }}', v_table, '{{ .schema }}');
    end if;
  end loop;
end
$$;
