-- Whether the record of JOB_ID, a job of the declared change DEFINITION,
-- is exactly TARGETS[0:NEXT_INDEX] (docs/contract.md "What verify
-- proves"): each ordinal below NEXT_INDEX has one audit row
-- (change_audit) or one skip (job_skips: an operator set it aside) with
-- its target's key, never both, and no audit row lies after it (a skip
-- may: set aside before its chunk ran); its chunks (change_chunks) run one
-- after another from 0 to NEXT_INDEX. NULL when it is, else the words of
-- the conflict. One range scan of each.
create or replace function {{ .schema }}.change_audit_problem(job_id text, definition jsonb, targets jsonb, next_index integer)
returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select coalesce(
    (select format('the stored job is not sound: its audit (change_audit) is not exactly targets[0:%s]', change_audit_problem.next_index)
       from (select au.ordinal, au.key from change_audit as au where au.job_id = change_audit_problem.job_id
             union all
             select s.ordinal, s.key from job_skips as s
              where s.job_id = change_audit_problem.job_id and s.ordinal < change_audit_problem.next_index) as a
     having count(*) filter (where a.ordinal not between 0 and change_audit_problem.next_index - 1
                                -- (a one-column key read directly: change_key_text is not inlined)
                                or a.key is distinct from case when jsonb_typeof(change_audit_problem.definition -> 'key') = 'string'
                                                               then change_audit_problem.targets -> a.ordinal ->> (change_audit_problem.definition ->> 'key')
                                                               else change_key_text(change_audit_problem.definition,
                                                                                    change_audit_problem.targets -> a.ordinal) end) > 0
         or count(*) <> change_audit_problem.next_index or count(distinct a.ordinal) <> count(*)),
    (select format('the stored job is not sound: its chunks (change_chunks) do not run one after another from 0 to next_index %s',
                   change_audit_problem.next_index)
       from (select c.first_ordinal, c.size, sum(c.size) over (order by c.first_ordinal) - c.size as starts_at
               from change_chunks as c
              where c.job_id = change_audit_problem.job_id) as c
     having count(*) filter (where c.first_ordinal <> c.starts_at) > 0
         or coalesce(sum(c.size), 0) <> change_audit_problem.next_index))
$$;
comment on function {{ .schema }}.change_audit_problem(text, jsonb, jsonb, integer) is
  'chunks helper (verify''s, report''s and register_undo''s checks): NULL when the change_audit rows of JOB_ID with its skips (job_skips) below NEXT_INDEX are exactly TARGETS[0:NEXT_INDEX] by ordinal and key, one each and its change_chunks run one after another from 0 to NEXT_INDEX, else the conflict in words.';
