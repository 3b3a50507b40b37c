-- Fleet mode: the NOTIFY channel of this schema's queue. One channel per
-- schema, so workers of two installations in one database never wake each
-- other. A channel name is at most 63 bytes; a longer one is cut, and two
-- schemas that then share a channel only cost each other a spurious wakeup.
create or replace function {{ .schema }}.queue_channel() returns text
language sql immutable security definer
set search_path = {{ .schema }}, pg_temp
as $$
  select left('chunks_{{ .schema }}', 63)
$$;
comment on function {{ .schema }}.queue_channel() is
$c$The LISTEN/NOTIFY channel of this schema's job queue: 'chunks_' followed by the schema name,
cut to 63 bytes. register, register_undo, resume_job, pause_job_after, campaign_create and
campaign_resume notify it (with the job id, or the campaign's name) when jobs become runnable;
chunks worker listens on it.$c$;
