create or replace function {{ .schema }}.register(plan jsonb) returns boolean
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_keys constant text[] := array['job_id', 'tenant', 'targets', 'chunk_size', 'allow_partial'];
  v_key text;
  v_targets jsonb;
  v_chunk_size jsonb := register.plan -> 'chunk_size';
  v_existing jobs;
begin
  if jsonb_typeof(register.plan) is distinct from 'object' then
    raise exception 'plan: must be an object with the keys job_id, tenant, targets, chunk_size, allow_partial, got %',
      coalesce(jsonb_typeof(register.plan), 'null') using errcode = '22023';
  end if;
  select k into v_key from jsonb_object_keys(register.plan) as k where k <> all (v_keys) order by k limit 1;
  if v_key is not null then
    raise exception 'plan: unexpected key %', excerpt(v_key, true) using errcode = '22023';
  end if;
  select k into v_key from unnest(v_keys) with ordinality as u(k, ord) where not register.plan ? u.k order by u.ord limit 1;
  if v_key is not null then
    raise exception 'plan: missing key %', to_jsonb(v_key) using errcode = '22023';
  end if;
  foreach v_key in array array['job_id', 'tenant'] loop
    if jsonb_typeof(register.plan -> v_key) <> 'string' then
      raise exception '%: must be a string, got %', v_key, jsonb_typeof(register.plan -> v_key) using errcode = '22023';
    end if;
    perform check_name(register.plan ->> v_key, v_key);
  end loop;
  v_targets := normalized_targets(register.plan -> 'targets', 'targets');
  if jsonb_typeof(v_chunk_size) <> 'number' or scale(v_chunk_size::numeric) <> 0 then
    raise exception 'chunk_size: must be an integer, got %', excerpt(v_chunk_size::text, false) using errcode = '22023';
  end if;
  if v_chunk_size::numeric not between 1 and 10 then
    raise exception 'chunk_size: must be between 1 and 10, got %', excerpt(v_chunk_size::text, false) using errcode = '22023';
  end if;
  if register.plan -> 'allow_partial' <> 'true'::jsonb then
    raise exception 'allow_partial: must be true (each chunk commits on its own), got %',
      excerpt((register.plan -> 'allow_partial')::text, false)
      using errcode = '22023';
  end if;

  insert into jobs as j (job_id, tenant, targets, chunk_size, next_index)
  values (register.plan ->> 'job_id', register.plan ->> 'tenant', v_targets, v_chunk_size::integer, 0)
  on conflict (job_id) do nothing;
  if found then
    -- Fleet mode: a new job is runnable in the same commit that records it,
    -- and the workers listening on queue_channel() hear of it then.
    insert into job_queue (job_id, visible_at) values (register.plan ->> 'job_id', clock_timestamp());
    perform pg_notify(queue_channel(), register.plan ->> 'job_id');
    return true;
  end if;

  -- The id is taken: the same approval again is not an error, anything else is.
  -- Progress (next_index) is never touched here.
  select j.* into v_existing from jobs as j where j.job_id = register.plan ->> 'job_id';
  if not found then
    raise exception 'job %: was removed while registering', register.plan ->> 'job_id' using errcode = 'CH409';
  end if;
  if v_existing.tenant <> register.plan ->> 'tenant' then
    raise exception 'job %: already registered for tenant %, not %', v_existing.job_id,
      excerpt(v_existing.tenant, true), excerpt(register.plan ->> 'tenant', true) using errcode = 'CH409';
  end if;
  if v_existing.chunk_size <> v_chunk_size::integer then
    raise exception 'job %: already registered with chunk_size %, not %', v_existing.job_id,
      v_existing.chunk_size, v_chunk_size using errcode = 'CH409';
  end if;
  if v_existing.targets <> v_targets then
    raise exception 'job %: already registered with different targets', v_existing.job_id using errcode = 'CH409';
  end if;
  return false;
end
$$;
comment on function {{ .schema }}.register(jsonb) is
$c$Records an approved job; returns true when new, false when the same approval is already there.
PLAN is {"job_id", "tenant", "targets": [{"id", "revision", "qty"}, ...], "chunk_size": 1..10,
"allow_partial": true}; targets are stored sorted by id with next_index 0.
A new job also joins the fleet's queue (job_queue), visible at once, and queue_channel() is
notified with its id, in the same transaction.
The same job_id with the same tenant, targets and chunk_size changes nothing (false);
with anything different it is CH409. Progress is never reset.
Errors: 22023 bad input (names the field); CH409 a different job under this id.$c$;
