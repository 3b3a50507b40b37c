-- Fleet mode: a worker's heartbeat records how far the jobs it ran got, for
-- the rate and ETA of chunks status and the status page (job_progress).
create or replace function {{ .schema }}.record_progress(samples jsonb) returns integer
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_recorded integer;
begin
  if record_progress.samples is null or jsonb_typeof(record_progress.samples) <> 'array'
     or jsonb_array_length(record_progress.samples) > 10000 then
    raise exception 'samples: must be a list of at most 10000 {"job_id", "next_index", "ago_ms"}, got %',
      coalesce(left(record_progress.samples::text, 40), 'null') using errcode = '22023';
  end if;
  if exists (select
               from jsonb_array_elements(record_progress.samples) as e
              where jsonb_typeof(e) <> 'object' or jsonb_typeof(e -> 'job_id') is distinct from 'string'
                 or jsonb_typeof(e -> 'next_index') is distinct from 'number'
                 or jsonb_typeof(e -> 'ago_ms') is distinct from 'number'
                 or (e ->> 'next_index')::numeric not between 0 and 2147483647
                 or (e ->> 'ago_ms')::numeric not between 0 and 86400000) then
    raise exception 'samples: each must be {"job_id": text, "next_index": 0 or more, "ago_ms": 0 to 86400000}'
      using errcode = '22023';
  end if;
  -- The newest point moves on only when a sample is newer and the job moved:
  -- a worker's older sample of the same job is left out. A sample behind the
  -- row is of a new job registered under an old id: it starts over. Every
  -- minute of progress, the base moves to mid and mid to the new point.
  insert into job_progress as p (job_id, next_index, at, mid_next_index, mid_at, base_next_index, base_at)
  select s.job_id, s.next_index, s.at, s.next_index, s.at, s.next_index, s.at
    from (select distinct on (e ->> 'job_id') e ->> 'job_id' as job_id, (e ->> 'next_index')::integer as next_index,
                 now() - (e ->> 'ago_ms')::bigint * interval '1 millisecond' as at
            from jsonb_array_elements(record_progress.samples) as e
           order by e ->> 'job_id', (e ->> 'next_index')::integer desc) as s
  on conflict (job_id) do update
     set next_index = excluded.next_index,
         at = excluded.at,
         mid_next_index = case when excluded.next_index < p.next_index or excluded.at - p.mid_at >= interval '1 minute'
                               then excluded.next_index else p.mid_next_index end,
         mid_at = case when excluded.next_index < p.next_index or excluded.at - p.mid_at >= interval '1 minute'
                       then excluded.at else p.mid_at end,
         base_next_index = case when excluded.next_index < p.next_index then excluded.next_index
                                when excluded.at - p.mid_at >= interval '1 minute' then p.mid_next_index
                                else p.base_next_index end,
         base_at = case when excluded.next_index < p.next_index then excluded.at
                        when excluded.at - p.mid_at >= interval '1 minute' then p.mid_at
                        else p.base_at end
   where excluded.at > p.at and excluded.next_index <> p.next_index;
  get diagnostics v_recorded = row_count;
  -- The campaigns of these jobs: how far each is now, at most every 5 s
  -- (campaign_status's recent rate), and nothing older than 15 minutes.
  with sampled as (
    select distinct cj.campaign
      from jsonb_array_elements(record_progress.samples) as e
      join campaign_jobs as cj on cj.job_id = e ->> 'job_id'
  ), gone as (
    delete from campaign_progress as p
     where p.campaign in (select s.campaign from sampled as s) and p.at < clock_timestamp() - interval '15 minutes'
  )
  insert into campaign_progress (campaign, at, committed)
  select s.campaign, clock_timestamp(), (select coalesce(sum(j.next_index), 0)
                                           from campaign_jobs as cj join jobs as j on j.job_id = cj.job_id
                                          where cj.campaign = s.campaign)
    from sampled as s
   where not exists (select from campaign_progress as p
                      where p.campaign = s.campaign and p.at > clock_timestamp() - interval '5 seconds')
  on conflict do nothing;
  return v_recorded;
end
$$;
comment on function {{ .schema }}.record_progress(jsonb) is
$c$Records the progress a worker saw, for the rate and ETA of job_status and status_page: SAMPLES is
[{"job_id", "next_index", "ago_ms"}, ...], each job's next_index after a chunk this worker
committed, ago_ms milliseconds ago. Updates the job's row in job_progress when the sample is newer
and the job moved (an older sample of the same job is left out; one behind the row starts the job
over, as a new job under an old id). The rate spans the last one to two minutes of progress: every
minute of it, the oldest point moves up. It also samples the campaigns of those jobs
(campaign_progress: their committed targets now, at most every 5 s, kept 15 minutes), for
campaign_status's recent rate. chunks worker calls it with each heartbeat. Returns the
number of job rows written. Errors: 22023 malformed samples (at most 10000).$c$;
