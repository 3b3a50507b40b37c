-- Fleet mode: one heartbeat row per live worker process, for chunks status
-- and the status page. A worker upserts its row about once a second
-- (worker_heartbeat) with what it is doing: running, idle, or throttled
-- with the reason; it deletes the row when it stops cleanly (worker_gone).
-- A row not seen for a while belongs to a worker that died: worker_status
-- shows only the live ones.
create table if not exists {{ .schema }}.workers(
  worker_id text primary key,
  host text not null,
  pid integer not null,
  started_at timestamptz not null,
  last_seen timestamptz not null,
  chunks bigint not null default 0,
  state text not null check (state in ('running', 'idle', 'throttled')),
  reason text
);
