-- A target set aside by an operator (issue 38: "one moved row stalls its
-- whole job"): the decision that one approved target of a declared
-- change's job will not be changed, on the record: which target (its
-- ordinal and key), why, who, when, and what the change's check said of
-- its row then (NULL: it matched). Written once (skip_target), on the job
-- row locked as a chunk locks it, before the chunk that holds the target
-- commits; that chunk and every later one pass over it. The job's
-- approval (change_targets, job_approval) is not touched: a skip is an
-- amendment beside it. A skip stands in for the target's audit row in
-- the job's proof (change_audit_problem), and nothing else does.
create table if not exists {{ .schema }}.job_skips(
  job_id text not null references {{ .schema }}.jobs(job_id),
  ordinal integer not null check (ordinal >= 0),
  key text not null,
  reason text not null check (length(reason) between 1 and 500),
  found text,
  skipped_by text not null,
  skipped_at timestamptz not null default now(),
  primary key (job_id, ordinal)
);
