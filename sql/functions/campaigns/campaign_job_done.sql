-- Campaigns: the fleet's fairness window. When a job of a campaign finishes
-- (run_next_chunk removes it from the queue), the campaign's next job, by
-- seq, joins the queue at the back, in the same transaction. So a campaign
-- holds at most queue_window rows of the queue at any time, and a job
-- registered after it waits behind at most that many of its jobs, never
-- behind all of them. One keyed lookup for a job of no campaign.
create or replace function {{ .schema }}.campaign_job_done(job_id text) returns void
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_campaign text;
  v_seq integer;
begin
  select cj.campaign into v_campaign from campaign_jobs as cj where cj.job_id = campaign_job_done.job_id;
  if not found then
    return;
  end if;
  -- The next job by seq that was not abandoned while it waited (abandon_job)
  -- takes the place; an abandoned one is passed over, released as it is.
  loop
    update campaigns as c set released = c.released + 1
     where c.name = v_campaign and c.released < c.job_count
    returning c.released - 1 into v_seq;
    exit when v_seq is null;
    insert into job_queue as q (job_id, visible_at, paused, pause_reason, paused_at, paused_by)
    select cj.job_id, clock_timestamp(), c.paused,
           case when c.paused then 'campaign paused by an operator' end,
           case when c.paused then clock_timestamp() end,
           case when c.paused then session_user end
      from campaign_jobs as cj
      join campaigns as c on c.name = cj.campaign
     where cj.campaign = v_campaign and cj.seq = v_seq
       and not exists (select from job_ends as e where e.job_id = cj.job_id)
    on conflict on constraint job_queue_pkey do nothing;
    exit when found;
    exit when exists (select from campaign_jobs as cj where cj.campaign = v_campaign and cj.seq = v_seq
                        and not exists (select from job_ends as e where e.job_id = cj.job_id));
  end loop;
end
$$;
comment on function {{ .schema }}.campaign_job_done(text) is
  'chunks helper (run_next_chunk, abandon_job): when JOB_ID, a finished or abandoned job, belongs to a campaign, queues the campaign''s next unreleased job that was not abandoned (paused if the campaign is), keeping at most queue_window of its jobs in the queue.';
