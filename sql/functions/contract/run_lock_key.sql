-- Fleet mode: the advisory lock key that marks a job's chunk in flight.
-- run_chunk takes it (transaction-level, never waiting) once it holds the
-- job row, so job_status can tell "running" from pg_locks without touching
-- a row. The seed is this schema's job_queue table, so two installations in
-- one database never share keys. A plain SQL expression with the table
-- named in full (the name is resolved once, when the function is made), so
-- that callers inline it: it has no SET clause on purpose.
create or replace function {{ .schema }}.run_lock_key(job_id text) returns bigint
language sql stable parallel safe
as $$
  select hashtextextended(job_id, '{{ .schema }}.job_queue'::regclass::oid::bigint)
$$;
comment on function {{ .schema }}.run_lock_key(text) is
$c$The advisory lock key (bigint) that run_chunk holds, for its transaction, while it runs a chunk
of JOB_ID; job_status reads it in pg_locks to say "running". Seeded by this schema's job_queue
oid, so schemas in one database never share keys.$c$;
