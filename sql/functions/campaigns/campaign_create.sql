-- Campaigns: one approval of any size registered as many jobs, in ONE
-- statement-set inside the caller's transaction (README "Campaigns").
-- Set-based: the targets come as three arrays, the jobs, their queue rows
-- and their campaign membership are each one INSERT ... SELECT, and the
-- fleet is notified once.
create or replace function {{ .schema }}.campaign_create(name text, tenant text, chunk_size integer,
                                                         ids integer[], revisions integer[], qtys integer[],
                                                         queue_window integer default 16) returns jsonb
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_n integer := coalesce(cardinality(campaign_create.ids), 0);
  v_per_job integer;
  v_jobs integer;
  v_digest text;
  v_bad record;
  v_result jsonb;
begin
  perform check_campaign_spec(campaign_create.name, campaign_create.tenant, campaign_create.chunk_size, campaign_create.queue_window, false);
  perform check_campaign_targets(v_n);
  if coalesce(cardinality(campaign_create.revisions), 0) <> v_n or coalesce(cardinality(campaign_create.qtys), 0) <> v_n then
    raise exception 'targets: ids, revisions and qtys must have the same length, got %, %, %', v_n,
      coalesce(cardinality(campaign_create.revisions), 0), coalesce(cardinality(campaign_create.qtys), 0)
      using errcode = '22023';
  end if;
  -- The first bad value, by index (0-based, as the file's entries are).
  select u.ord - 1 as i, u.id, u.revision, u.qty into v_bad
    from unnest(campaign_create.ids, campaign_create.revisions, campaign_create.qtys) with ordinality as u(id, revision, qty, ord)
   where not target_in_range(u.id, u.revision, u.qty)
   order by u.ord limit 1;
  if found then
    raise exception 'targets[%]: %', v_bad.i,
      coalesce(range_problem('id', v_bad.id), range_problem('revision', v_bad.revision), range_problem('qty', v_bad.qty))
      using errcode = '22023';
  end if;
  select d.id, d.first, d.second into v_bad
    from (select u.id, lag(u.ord) over (order by u.id, u.ord) - 1 as first, u.ord - 1 as second,
                 lag(u.id) over (order by u.id, u.ord) as prev
            from unnest(campaign_create.ids) with ordinality as u(id, ord)) as d
   where d.prev = d.id
   order by d.second limit 1;
  if found then
    raise exception 'targets[%]: duplicate id % (first at targets[%])', v_bad.second, v_bad.id, v_bad.first
      using errcode = '22023';
  end if;

  v_per_job := campaign_job_size(campaign_create.chunk_size, false);
  v_jobs := (v_n + v_per_job - 1) / v_per_job;
  select encode(sha256(convert_to(campaign_create.tenant || '/' || campaign_create.chunk_size || '/'
                                  || string_agg(u.id || ':' || u.revision || ':' || u.qty, ',' order by u.id), 'UTF8')), 'hex')
    into v_digest
    from unnest(campaign_create.ids, campaign_create.revisions, campaign_create.qtys) as u(id, revision, qty);

  -- The campaign row first: a concurrent create of the same name waits here.
  v_result := campaign_record(campaign_create.name, campaign_create.tenant, campaign_create.chunk_size, v_jobs, v_n, v_digest,
                              campaign_create.queue_window);
  if v_result is null then
    raise exception 'campaign %: %', campaign_create.name, campaign_difference(campaign_create.name, campaign_create.tenant,
      campaign_create.chunk_size, campaign_create.ids, campaign_create.revisions, campaign_create.qtys)
      using errcode = 'CH409';
  end if;
  if not (v_result -> 'created')::boolean then
    return v_result;
  end if;

  perform campaign_record_jobs(campaign_create.name, campaign_create.tenant, campaign_create.chunk_size,
    array(select jsonb_build_object('id', u.id, 'revision', u.revision, 'qty', u.qty)
            from unnest(campaign_create.ids, campaign_create.revisions, campaign_create.qtys) as u(id, revision, qty)
           order by u.id),
    'cancel', campaign_create.queue_window);
  -- Two people: every job proposed at once, approved at once (campaign_approve).
  perform propose_jobs(array(select campaign_job_id(campaign_create.name, s.seq)
                               from generate_series(0, v_jobs - 1) as s(seq)), null, false);
  return v_result;
end
$$;
comment on function {{ .schema }}.campaign_create(text, text, integer, integer[], integer[], integer[], integer) is
$c$Records a campaign: one approval of any number of targets (IDS, REVISIONS, QTYS, index by
index), split after sorting by id into jobs of a whole number of chunks, at most 64 targets
(60 at chunk_size 10), with ids NAME-000001, NAME-000002, ... in id order. Jobs, campaign record
(campaigns: tenant, chunk size, job and target counts, sha256 digest, created_at) and
membership (campaign_jobs) and each job's approval (job_approval) are written set-based in the caller's transaction, the first
QUEUE_WINDOW jobs are queued, and queue_channel() is notified once.
Returns {"name", "created", "jobs", "targets", "digest"}; created is false when the same
approval is already recorded under NAME (nothing changes).
Errors: 22023 bad input, naming the index (targets[i]) of the first bad value or duplicate id;
CH409 a different campaign under NAME (names the first difference), or a job id it needs
already taken by another job.$c$;
