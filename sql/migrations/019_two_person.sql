-- Two people (docs/safety.md "Two people"): a plan proposed by one role
-- runs only after another role approves exactly what was proposed.
--
-- approval_policy: set by the schema's owner only (set_policy). scope ''
-- is the whole schema (every job, orders included); any other scope is a
-- declared change's name, whose row overrides the schema's. A job is
-- two-person when the policy says so at the moment it is recorded; it
-- stays two-person whatever the policy says later.
create table if not exists {{ .schema }}.approval_policy(
  scope text primary key,
  two_person boolean not null,
  set_by text not null default session_user,
  set_at timestamptz not null default now()
);

-- proposals: what one role proposed and, once approved, who approved it,
-- when, the digest approved and the optional SSH signature of it. Only the
-- owner writes it (approve is SECURITY DEFINER), and no one approves what
-- they proposed (the check below holds for the owner too).
--   action 'run': the job itself (register, register_undo, campaign_create):
--     its chunks run only once this is approved; a job with such a row is a
--     two-person job, and its skips, abandon and undo are proposed too.
--   action 'skip': skip_target's KEY and REASON (detail), done on approval.
--   action 'abandon': abandon_job's REASON (detail), done on approval.
-- digest is what approve must be given: for 'run' the job's approval digest
-- (job_digest); for the others the sha256 of the proposal's own text.
create table if not exists {{ .schema }}.proposals(
  id bigint generated always as identity primary key,
  job_id text not null references {{ .schema }}.jobs(job_id) on delete cascade,
  action text not null check (action in ('run', 'skip', 'abandon')),
  detail jsonb not null default '{}'::jsonb,
  digest text not null check (digest ~ '^[0-9a-f]{64}$'),
  proposed_by text not null,
  proposed_at timestamptz not null default now(),
  approved_by text,
  approved_at timestamptz,
  signature text,
  check ((approved_by is null) = (approved_at is null)),
  check (approved_by <> proposed_by),
  check (signature is null or approved_by is not null)
);
-- One run proposal a job; the queue's picker reads the waiting ones by job.
create unique index if not exists proposals_run on {{ .schema }}.proposals(job_id) where action = 'run';
create index if not exists proposals_waiting on {{ .schema }}.proposals(job_id) where approved_at is null;
