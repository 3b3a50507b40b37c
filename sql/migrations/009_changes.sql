-- Declared changes (README "Your own tables"): a change of the user's own
-- table, declared once as data by the schema's owner (define_change), and
-- the jobs and audit of such changes. The contract's three tables keep
-- exactly their columns.
--
-- changes: one row per declared change. DEFINITION is the object
-- define_change validated, as jsonb; DIGEST the sha256 (hex) of its jsonb
-- text, which is canonical. FUNCTION_NAME is the static function generated
-- for it (apply_<name>, in this schema).
create table if not exists {{ .schema }}.changes(
  name text primary key check (name ~ '^[a-z][a-z0-9_]{0,39}$'),
  definition jsonb not null,
  digest text not null check (digest ~ '^[0-9a-f]{64}$'),
  function_name text not null,
  defined_at timestamptz not null default now(),
  defined_by text not null default session_user
);

-- job_change: the change of a job registered by register_change, and the
-- digest of the definition it was approved under. No foreign key to
-- changes: a change redefined or dropped by hand is found by run_chunk,
-- which refuses the job (CH409), rather than prevented here.
create table if not exists {{ .schema }}.job_change(
  job_id text primary key references {{ .schema }}.jobs(job_id) on delete cascade,
  change text not null,
  digest text not null check (digest ~ '^[0-9a-f]{64}$')
);
create index if not exists job_change_change on {{ .schema }}.job_change(change);

-- change_audit: one row per changed target of a change job, written in the
-- commit that changed it (job_audit's counterpart). KEY is the target's key
-- as text; BEFORE and AFTER hold every column the change writes (set and
-- set_from_target), VERSION_* the version column when the change has one.
create table if not exists {{ .schema }}.change_audit(
  job_id text not null references {{ .schema }}.jobs(job_id),
  ordinal integer not null check (ordinal >= 0),
  key text not null,
  version_before bigint,
  version_after bigint,
  before jsonb not null,
  after jsonb not null,
  at timestamptz not null default now(),
  primary key (job_id, ordinal),
  unique (job_id, key)
);

-- A change job's approval is of kind 'change'.
alter table {{ .schema }}.job_approval drop constraint if exists job_approval_kind_check;
alter table {{ .schema }}.job_approval add constraint job_approval_kind_check check (kind in ('cancel', 'restore', 'change'));
alter table {{ .schema }}.job_approval drop constraint if exists job_approval_recorded_from_check;
alter table {{ .schema }}.job_approval add constraint job_approval_recorded_from_check
  check (recorded_from in ('register', 'register_undo', 'campaign_create', 'migration', 'register_change'));
