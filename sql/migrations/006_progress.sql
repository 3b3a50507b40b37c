-- Fleet mode: each job's recent progress, for the rate and ETA that chunks
-- status and the status page show. One row per job that a fleet worker has
-- moved forward, so the table stays as small as jobs: a worker's heartbeat
-- (record_progress, about once a second) updates the rows of the jobs it
-- committed chunks of since its last heartbeat.
--
-- (next_index, at) is the newest progress seen: the job reached next_index
-- at that time. (base_next_index, base_at) and (mid_next_index, mid_at) are
-- two older points: the rate is measured from base to the newest point, and
-- when the newest point is a minute past mid, base moves to mid and mid to
-- the newest point, so the rate always spans the last one to two minutes of
-- progress. No foreign key to jobs: a heartbeat never waits for the job row
-- that a chunk in flight holds.
create table if not exists {{ .schema }}.job_progress(
  job_id text primary key,
  next_index integer not null check (next_index >= 0),
  at timestamptz not null,
  mid_next_index integer not null,
  mid_at timestamptz not null,
  base_next_index integer not null,
  base_at timestamptz not null
);
