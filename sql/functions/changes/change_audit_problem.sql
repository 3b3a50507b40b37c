-- Whether the audit of JOB_ID, a job of the declared change DEFINITION, is
-- exactly TARGETS[0:NEXT_INDEX] by ordinal and key (docs/contract.md §4,
-- as run_chunk proves it of job_audit): NULL when it is, else the words
-- of the conflict. One range scan of change_audit.
create or replace function {{ .schema }}.change_audit_problem(job_id text, definition jsonb, targets jsonb, next_index integer)
returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select format('the stored job is not sound: its audit (change_audit) is not exactly targets[0:%s]', change_audit_problem.next_index)
    from change_audit as a
   where a.job_id = change_audit_problem.job_id
  having count(*) filter (where a.ordinal not between 0 and change_audit_problem.next_index - 1
                             or a.key is distinct from change_key_text(change_audit_problem.definition,
                                                                       change_audit_problem.targets -> a.ordinal)) > 0
      or count(*) <> change_audit_problem.next_index
$$;
comment on function {{ .schema }}.change_audit_problem(text, jsonb, jsonb, integer) is
  'chunks helper (report''s and register_undo''s checks): NULL when the change_audit rows of JOB_ID are exactly TARGETS[0:NEXT_INDEX] by ordinal and key, else the conflict in words.';
