-- Why a stored job's targets and audit break docs/contract.md §4: the first problem
-- in target order, in words, or NULL when they are sound. run_chunk's fast
-- check only knows "not sound"; this slower query, run only then, names
-- what (register_undo runs it on the job it undoes). Each target is judged
-- (target_problem) before its values are read, so a tampered entry is
-- reported, never cast. The tenant, chunk_size and next_index's bounds are
-- job_shape_problem's. PL/pgSQL, so that its plan is kept for the session
-- (a SQL function with a SET clause is planned again at every call: 2 to
-- 3 ms of report's time, which runs it on every call).
create or replace function {{ .schema }}.job_problem(job_id text, targets jsonb, next_index integer) returns text
language plpgsql stable
set search_path = {{ .schema }}, pg_temp
as $$
begin
  return (select case
    when jsonb_typeof(job_problem.targets) is distinct from 'array'
      then format('stored targets is not a list of 1 to %s targets', limit_of('targets_max'))
    when jsonb_array_length(job_problem.targets) not between 1 and limit_of('targets_max')
      then format('stored targets is not a list of 1 to %s targets', limit_of('targets_max'))
    else (select c.problem
       from (select coalesce(t.pos, a.ordinal) as pos,
                    case
                      when t.pos is null then
                        format('audit row %s is extra (next_index is %s)', a.ordinal, job_problem.next_index)
                      when t.target_problem is not null then
                        'stored ' || t.target_problem
                      when t.pos > 0 and (jsonb_typeof(t.prev) <> 'number' or (t.e -> 'id')::numeric <= (t.prev)::numeric) then
                        format('stored targets are not sorted by id without duplicates: targets[%s].id is %s after %s',
                               t.pos, t.e -> 'id', t.prev)
                      when t.pos < job_problem.next_index and a.ordinal is null then
                        format('audit row %s is missing (next_index is %s)', t.pos, job_problem.next_index)
                      when t.pos >= job_problem.next_index and a.ordinal is not null then
                        format('audit row %s is extra (next_index is %s)', t.pos, job_problem.next_index)
                      when a.ordinal is not null
                           and (a.id, a.previous_revision, a.new_revision, a.qty)
                               is distinct from ((t.e -> 'id')::integer, (t.e -> 'revision')::integer,
                                                 (t.e -> 'revision')::integer + 1, (t.e -> 'qty')::integer) then
                        format('audit row %s is (id %s, revision %s -> %s, qty %s), approved (id %s, revision %s -> %s, qty %s)',
                               t.pos, a.id, a.previous_revision, a.new_revision, a.qty,
                               t.e -> 'id', t.e -> 'revision', (t.e -> 'revision')::integer + 1, t.e -> 'qty')
                    end as problem
               from (select (x.ord - 1)::integer as pos, x.e, lag(x.e -> 'id') over (order by x.ord) as prev,
                            target_problem(x.e, 'targets', x.ord - 1) as target_problem
                       from jsonb_array_elements(job_problem.targets) with ordinality as x(e, ord)) as t
               full join (select au.ordinal, au.id, au.previous_revision, au.new_revision, au.qty
                            from job_audit as au
                           where au.job_id = job_problem.job_id) as a
                 on a.ordinal = t.pos
             offset 0) as c
      where c.problem is not null
      order by c.pos
      limit 1)
  end);
end
$$;
comment on function {{ .schema }}.job_problem(text, jsonb, integer) is
  'chunks helper: the first way the targets and audit of the stored job JOB_ID (TARGETS, NEXT_INDEX) break docs/contract.md §4, for a CH409 message; NULL when they are sound.';
