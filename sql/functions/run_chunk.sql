create or replace function {{ .schema }}.run_chunk(job_id text) returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
set lock_timeout = '500ms'
as $$
declare
  v_job jobs;
  v_n integer;
  v_end integer;
  v_problem text;
  v_ids integer[];
  v_revisions integer[];
  v_qtys integer[];
begin
  perform check_name(run_chunk.job_id, 'job_id');
  -- The job row lock is the fence: it is taken before the range is chosen, so
  -- two callers of one job run its chunks one after the other, never twice.
  select j.* into v_job from jobs as j where j.job_id = run_chunk.job_id for update;
  if not found then
    raise exception 'job %: not found', run_chunk.job_id using errcode = 'CH409';
  end if;

  -- CONTRACT §4: the stored job must be sound before anything is written.
  if jsonb_typeof(v_job.targets) is distinct from 'array' or jsonb_array_length(v_job.targets) not between 1 and 64 then
    v_problem := 'targets is not a list of 1 to 64 targets';
  elsif v_job.tenant !~ '^[A-Za-z0-9_-]{1,64}$' then
    v_problem := format('tenant %s is not valid', to_jsonb(v_job.tenant));
  elsif v_job.chunk_size not between 1 and 10 then
    v_problem := format('chunk_size %s is not between 1 and 10', v_job.chunk_size);
  else
    v_n := jsonb_array_length(v_job.targets);
    if v_job.next_index > v_n then
      v_problem := format('next_index %s is beyond the %s targets', v_job.next_index, v_n);
    elsif v_job.next_index % v_job.chunk_size <> 0 and v_job.next_index <> v_n then
      v_problem := format('next_index %s is not a multiple of chunk_size %s', v_job.next_index, v_job.chunk_size);
    end if;
  end if;
  if v_problem is not null then
    raise exception 'job %: %', v_job.job_id, v_problem using errcode = 'CH409';
  end if;
  v_end := least(v_job.next_index + v_job.chunk_size, v_n);

  -- One statement checks every target (valid, strictly ascending ids) and the
  -- audit (exactly targets[0:next_index], no extras), and picks out the range.
  select (array_agg(c.problem order by c.pos) filter (where c.problem is not null))[1],
         array_agg((c.e -> 'id')::integer order by c.pos) filter (where c.problem is null and c.pos >= v_job.next_index and c.pos < v_end),
         array_agg((c.e -> 'revision')::integer order by c.pos) filter (where c.problem is null and c.pos >= v_job.next_index and c.pos < v_end),
         array_agg((c.e -> 'qty')::integer order by c.pos) filter (where c.problem is null and c.pos >= v_job.next_index and c.pos < v_end)
    into v_problem, v_ids, v_revisions, v_qtys
    from (select coalesce(t.pos, a.ordinal) as pos, t.e,
                 case
                   when t.pos is null then
                     format('audit row %s is extra (next_index is %s)', a.ordinal, v_job.next_index)
                   when t.target_problem is not null then
                     'stored ' || t.target_problem
                   when t.pos > 0 and (jsonb_typeof(t.prev) <> 'number' or (t.e -> 'id')::numeric <= (t.prev)::numeric) then
                     format('stored targets are not sorted by id without duplicates: targets[%s].id is %s after %s',
                            t.pos, t.e -> 'id', t.prev)
                   when t.pos < v_job.next_index and a.ordinal is null then
                     format('audit row %s is missing (next_index is %s)', t.pos, v_job.next_index)
                   when t.pos >= v_job.next_index and a.ordinal is not null then
                     format('audit row %s is extra (next_index is %s)', t.pos, v_job.next_index)
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
                    from jsonb_array_elements(v_job.targets) with ordinality as x(e, ord)) as t
            full join (select au.ordinal, au.id, au.previous_revision, au.new_revision, au.qty
                         from job_audit as au
                        where au.job_id = v_job.job_id) as a
              on a.ordinal = t.pos
          offset 0) as c; -- offset 0: judge each row once, not once per aggregate
  if v_problem is not null then
    raise exception 'job %: %', v_job.job_id, v_problem using errcode = 'CH409';
  end if;

  if v_job.next_index = v_n then
    return jsonb_build_object('processed', '[]'::jsonb, 'next_index', v_n, 'done', true);
  end if;

  perform cancel_orders(v_job.tenant, v_ids, v_revisions, v_qtys);                -- after-orders
  insert into job_audit (job_id, ordinal, id, previous_revision, new_revision, qty)  -- after-audit
  select v_job.job_id, v_job.next_index + (a.i - 1)::integer, a.id, a.revision, a.revision + 1, a.qty
    from unnest(v_ids, v_revisions, v_qtys) with ordinality as a(id, revision, qty, i);
  update jobs as j set next_index = v_end where j.job_id = v_job.job_id;           -- after-checkpoint
  return jsonb_build_object('processed', to_jsonb(v_ids), 'next_index', v_end, 'done', v_end = v_n);
end
$$;
comment on function {{ .schema }}.run_chunk(text) is
$c$Runs the next chunk of a job in the caller's transaction: one call, one chunk.
Locks the job row (FOR UPDATE; lock waits bounded at 500 ms by this function's own
lock_timeout), proves the stored job sound (valid sorted targets, 0 <= next_index <= n on a
chunk boundary, audit rows exactly targets[0:next_index]), cancels the orders of
[next_index, next_index + chunk_size) as cancel_chunk does, writes one audit row each and
moves next_index. Returns {"processed": [ids], "next_index": n, "done": bool};
a finished job returns {"processed": [], "done": true} and changes nothing.
From psql in autocommit, SELECT run_chunk('job') is one transaction that commits one chunk.
Errors: 22023 bad job_id; CH409 unknown or unsound job, or an order that does not match;
55P03 lock timeout.$c$;
