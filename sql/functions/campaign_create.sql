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
  perform check_campaign_spec(campaign_create.name, campaign_create.tenant, campaign_create.chunk_size, campaign_create.queue_window);
  if v_n = 0 then
    raise exception 'targets: the approval is empty' using errcode = '22023';
  end if;
  if v_n > 1000000 then
    raise exception 'targets: at most 1000000 per campaign, got %', v_n using errcode = '22023';
  end if;
  if coalesce(cardinality(campaign_create.revisions), 0) <> v_n or coalesce(cardinality(campaign_create.qtys), 0) <> v_n then
    raise exception 'targets: ids, revisions and qtys must have the same length, got %, %, %', v_n,
      coalesce(cardinality(campaign_create.revisions), 0), coalesce(cardinality(campaign_create.qtys), 0)
      using errcode = '22023';
  end if;
  -- The first bad value, by index (0-based, as the file's entries are).
  select u.ord - 1 as i, u.id, u.revision, u.qty into v_bad
    from unnest(campaign_create.ids, campaign_create.revisions, campaign_create.qtys) with ordinality as u(id, revision, qty, ord)
   where u.id is null or u.id < 1 or u.revision is null or u.revision not between 0 and 2147483646
      or u.qty is null or u.qty not between 1 and 1000
   order by u.ord limit 1;
  if found then
    raise exception 'targets[%]: %', v_bad.i,
      case when v_bad.id is null or v_bad.id < 1 then format('id: must be between 1 and 2147483647, got %s', coalesce(v_bad.id::text, 'null'))
           when v_bad.revision is null or v_bad.revision not between 0 and 2147483646 then format('revision: must be between 0 and 2147483646, got %s', coalesce(v_bad.revision::text, 'null'))
           else format('qty: must be between 1 and 1000, got %s', coalesce(v_bad.qty::text, 'null')) end
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

  -- Every job holds a whole number of chunks, at most 64 targets.
  v_per_job := 64 - 64 % campaign_create.chunk_size;
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
    (select jsonb_agg(jsonb_build_object('id', u.id, 'revision', u.revision, 'qty', u.qty) order by u.id)
       from unnest(campaign_create.ids, campaign_create.revisions, campaign_create.qtys) as u(id, revision, qty)),
    'cancel', campaign_create.queue_window);
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
