-- Campaigns of a declared change (README "Campaigns"): campaign_create for
-- the targets of the change CHANGE. Each target is validated as
-- register_change validates a job's (change_target: exactly the change's
-- fields, each a value of its column; LABELS[i] names it in errors, by
-- default targets[i]), keys are unique, and the whole approval is sorted by
-- key and split into jobs of the change (job_change with the definition's
-- digest, job_approval kind change), recorded set-based in the caller's
-- transaction with the campaign, its membership and its queue window, as
-- campaign_create records a campaign of orders. With TENANTS (TENANT
-- NULL), one campaign over many tenants: TENANTS[i] is the tenant of
-- TARGETS[i], the approval is sorted by tenant, then key, and each job
-- holds the targets of one tenant.
drop function if exists {{ .schema }}.campaign_create_change(text, text, text, integer, jsonb, text[], integer);
create or replace function {{ .schema }}.campaign_create_change(name text, change text, tenant text, chunk_size integer,
                                                                targets jsonb, labels text[] default null,
                                                                queue_window integer default 16,
                                                                tenants text[] default null) returns jsonb
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_change record;
  v_def jsonb;
  v_n integer;
  v_sorted jsonb[];
  v_bad_ord bigint;
  v_bad_key text;
  v_bad_first bigint;
  v_per_job integer;
  v_jobs integer;
  v_ords integer[];
  v_tenants text[];
  v_tenant text;
  v_digest text;
  v_result jsonb;
begin
  if campaign_create_change.tenants is not null and campaign_create_change.tenant is not null then
    raise exception 'tenant: give one tenant, or each target''s (tenants), not both' using errcode = '22023';
  end if;
  perform check_campaign_spec(campaign_create_change.name, coalesce(campaign_create_change.tenant, campaign_create_change.tenants[1]),
                              campaign_create_change.chunk_size, campaign_create_change.queue_window, true);
  select * into v_change from change_named(campaign_create_change.change, 'change');
  v_def := v_change.definition;
  if campaign_create_change.tenants is null then
    perform check_change_tenant(v_def, campaign_create_change.tenant);
  elsif not v_def ? 'tenant' then
    raise exception 'tenants: change % has no tenant column; its campaign has one tenant', v_change.name using errcode = '22023';
  end if;
  if jsonb_typeof(campaign_create_change.targets) is distinct from 'array' then
    raise exception 'targets: must be a list, got %', coalesce(jsonb_typeof(campaign_create_change.targets), 'null')
      using errcode = '22023';
  end if;
  v_n := jsonb_array_length(campaign_create_change.targets);
  perform check_campaign_targets(v_n);
  if campaign_create_change.labels is not null and cardinality(campaign_create_change.labels) <> v_n then
    raise exception 'labels: must name each of the % targets, got %', v_n, cardinality(campaign_create_change.labels)
      using errcode = '22023';
  end if;
  if campaign_create_change.tenants is not null then
    if cardinality(campaign_create_change.tenants) <> v_n then
      raise exception 'tenants: must name the tenant of each of the % targets, got %', v_n, cardinality(campaign_create_change.tenants)
        using errcode = '22023';
    end if;
    -- Each tenant a name, and a value of the tenant column (the first bad one named by its target).
    for v_tenant in select distinct t from unnest(campaign_create_change.tenants) as t loop
      begin
        perform check_name(v_tenant, 'tenant');
        perform check_change_tenant(v_def, v_tenant);
      exception when invalid_parameter_value then
        raise exception '%: %', (select coalesce(campaign_create_change.labels[x.o], format('targets[%s]', x.o - 1))
                                   from unnest(campaign_create_change.tenants) with ordinality as x(t, o)
                                  where x.t is not distinct from v_tenant order by x.o limit 1), sqlerrm
          using errcode = '22023';
      end;
    end loop;
  end if;

  -- Each target as register_change takes it (change_target_list: the first
  -- bad one is named), sorted by key, compared as the key columns' types;
  -- no key twice (naming both places).
  select l.sorted, l.duplicate, l.words, l.first, l.ords into v_sorted, v_bad_ord, v_bad_key, v_bad_first, v_ords
    from change_target_list(v_def, campaign_create_change.targets, campaign_create_change.labels) as l;
  if v_bad_ord is not null then
    raise exception '%: duplicate % (first at %)',
      coalesce(campaign_create_change.labels[v_bad_ord], format('targets[%s]', v_bad_ord - 1)), v_bad_key,
      coalesce(campaign_create_change.labels[v_bad_first], format('targets[%s]', v_bad_first - 1))
      using errcode = '22023';
  end if;
  -- Many tenants: by tenant (as "C" sorts their text), then key; each
  -- sorted target's tenant beside it.
  if campaign_create_change.tenants is not null then
    select array_agg(x.e order by x.t collate "C", x.i), array_agg(x.t order by x.t collate "C", x.i)
      into v_sorted, v_tenants
      from (select s.e, s.i, campaign_create_change.tenants[s.o] as t
              from unnest(v_sorted, v_ords) with ordinality as s(e, o, i)) as x;
  end if;

  v_per_job := campaign_job_size(campaign_create_change.chunk_size, true);
  -- The digest: the tenant (or, for many, each target's beside it), the
  -- chunk size, the change and its digest, and the sorted targets.
  select encode(sha256(convert_to(coalesce(campaign_create_change.tenant, '*') || '/' || campaign_create_change.chunk_size || '/'
                                  || v_change.name || ':' || v_change.digest || '/'
                                  || string_agg(coalesce(v_tenants[x.ord] || '=', '') || x.o::text, ',' order by x.ord), 'UTF8')), 'hex')
    into v_digest
    from unnest(v_sorted) with ordinality as x(o, ord);
  v_jobs := campaign_job_count(v_n, v_per_job, v_tenants);

  -- The campaign row first: a concurrent create of the same name waits here.
  v_result := campaign_record(campaign_create_change.name, campaign_create_change.tenant, campaign_create_change.chunk_size, v_jobs, v_n, v_digest,
                              campaign_create_change.queue_window);
  if v_result is null then
    raise exception 'campaign %: %', campaign_create_change.name,
      campaign_change_difference(campaign_create_change.name, v_change.name, campaign_create_change.tenant,
                                 campaign_create_change.chunk_size, to_jsonb(v_sorted))
      using errcode = 'CH409';
  end if;
  if not (v_result -> 'created')::boolean then
    return v_result;
  end if;

  perform campaign_record_jobs(campaign_create_change.name, campaign_create_change.tenant, campaign_create_change.chunk_size,
                               v_sorted, 'change', campaign_create_change.queue_window, v_tenants);
  insert into job_change (job_id, change, digest)
  select campaign_job_id(campaign_create_change.name, s.seq), v_change.name, v_change.digest
    from generate_series(0, v_jobs - 1) as s(seq);
  -- Two people: every job proposed at once, approved at once (campaign_approve).
  perform propose_jobs(array(select campaign_job_id(campaign_create_change.name, s.seq) from generate_series(0, v_jobs - 1) as s(seq)),
                       v_change.name, false);
  return v_result;
end
$$;
comment on function {{ .schema }}.campaign_create_change(text, text, text, integer, jsonb, text[], integer, text[]) is
$c$Records a campaign of the declared change CHANGE: campaign_create's campaign (name, tenant,
chunk size, queue window, jobs NAME-000001, ... of at most 100 chunks and 10,000 targets in key order, the first
QUEUE_WINDOW queued, queue_channel() notified once) whose TARGETS are objects with exactly the
change's fields (key, version, expect columns, set_from_target fields), each validated as
register_change validates a job's and named in errors by LABELS[i] (default targets[i]).
Each job is a job of the change (job_change, with the definition's digest; job_approval kind
change). The digest covers the tenant, the chunk size, the change and its digest, and the
sorted targets. With TENANTS instead of TENANT (TENANT NULL), one campaign over many tenants:
TENANTS[i] is the tenant of TARGETS[i] (each a value of the change's tenant column), the
approval is sorted by tenant then key, each job holds one tenant's targets, and the digest
covers each target's tenant. Returns {"name", "created", "jobs", "targets", "digest"}; created
is false when the same approval is already recorded under NAME.
Errors: 22023 bad input (names the target and its field, a duplicate key and both places, an
unknown change, a tenant that is no value of the tenant column, tenants for a change with no
tenant column, or both TENANT and TENANTS); CH409 a different campaign
under NAME (names the first difference) or a job id it needs already taken.$c$;
