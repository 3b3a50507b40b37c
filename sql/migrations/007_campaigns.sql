-- Campaigns (README "Campaigns"): one approval of any size, frozen as many
-- jobs of at most 64 targets, registered in one transaction and run and
-- reported as one. The contract's three tables keep exactly their columns.
--
-- campaigns: the record of the whole approval. digest is sha256 over the
-- tenant, the chunk size and every target sorted by id, so an identical
-- re-creation is recognized without reading the jobs. queue_window is how
-- many of its unfinished jobs the fleet's queue holds at once (fairness:
-- a campaign never fills the queue); released is how many of its jobs,
-- in seq order, have been put in the queue so far. undoes names the
-- campaign an undo campaign (campaign_undo) undoes; a campaign is undone once.
create table if not exists {{ .schema }}.campaigns(
  name text primary key,
  tenant text not null,
  chunk_size integer not null check (chunk_size between 1 and 10),
  job_count integer not null check (job_count > 0),
  target_count integer not null check (target_count > 0),
  digest text not null,
  queue_window integer not null check (queue_window > 0),
  released integer not null check (released between 0 and job_count),
  paused boolean not null default false,
  created_at timestamptz not null default now(),
  undoes text unique references {{ .schema }}.campaigns(name),
  check (undoes <> name)
);

-- campaign_jobs: which job is which part of which campaign. seq 0 holds the
-- lowest ids. (campaign, seq) is the index every campaign-level operation
-- reads, so none of them scans another campaign's jobs.
create table if not exists {{ .schema }}.campaign_jobs(
  job_id text primary key references {{ .schema }}.jobs(job_id),
  campaign text not null references {{ .schema }}.campaigns(name),
  seq integer not null check (seq >= 0),
  unique (campaign, seq)
);
