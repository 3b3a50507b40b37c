-- Whether the record of JOB_ID, a job of the declared change DEFINITION,
-- is exactly TARGETS[0:NEXT_INDEX] (docs/contract.md "What verify
-- proves"): its audit (change_audit) one row per ordinal below NEXT_INDEX,
-- each with its target's key, and nothing after; its chunks
-- (change_chunks) one after another from 0 to NEXT_INDEX. NULL when it
-- is, else the words of the conflict. One range scan of each.
create or replace function {{ .schema }}.change_audit_problem(job_id text, definition jsonb, targets jsonb, next_index integer)
returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select coalesce(
    (select format('the stored job is not sound: its audit (change_audit) is not exactly targets[0:%s]', change_audit_problem.next_index)
       from change_audit as a
      where a.job_id = change_audit_problem.job_id
     having count(*) filter (where a.ordinal not between 0 and change_audit_problem.next_index - 1
                                -- (a one-column key read directly: change_key_text is not inlined)
                                or a.key is distinct from case when jsonb_typeof(change_audit_problem.definition -> 'key') = 'string'
                                                               then change_audit_problem.targets -> a.ordinal ->> (change_audit_problem.definition ->> 'key')
                                                               else change_key_text(change_audit_problem.definition,
                                                                                    change_audit_problem.targets -> a.ordinal) end) > 0
         or count(*) <> change_audit_problem.next_index),
    (select format('the stored job is not sound: its chunks (change_chunks) do not run one after another from 0 to next_index %s',
                   change_audit_problem.next_index)
       from (select c.first_ordinal, c.size, sum(c.size) over (order by c.first_ordinal) - c.size as starts_at
               from change_chunks as c
              where c.job_id = change_audit_problem.job_id) as c
     having count(*) filter (where c.first_ordinal <> c.starts_at) > 0
         or coalesce(sum(c.size), 0) <> change_audit_problem.next_index))
$$;
comment on function {{ .schema }}.change_audit_problem(text, jsonb, jsonb, integer) is
  'chunks helper (verify''s, report''s and register_undo''s checks): NULL when the change_audit rows of JOB_ID are exactly TARGETS[0:NEXT_INDEX] by ordinal and key and its change_chunks run one after another from 0 to NEXT_INDEX, else the conflict in words.';
