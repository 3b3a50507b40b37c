-- A register plan (CONTRACT §3), validated in register's documented order
-- (README "Decisions"): keys (unexpected first, then missing), job_id,
-- tenant, targets, chunk_size, allow_partial. Returns the approval as
-- {"job_id", "tenant", "targets" (normalized: a new list sorted by id),
-- "chunk_size" (an integer)}, for register and check_plan. With a declared
-- change's DEFINITION (register_change), the targets are that change's
-- (change_targets, sorted by key); NULL: orders' {id, revision, qty}.
create or replace function {{ .schema }}.valid_plan(plan jsonb, definition jsonb) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_keys constant text[] := array['job_id', 'tenant', 'targets', 'chunk_size', 'allow_partial'];
  v_key text;
  v_targets jsonb;
  v_chunk_size jsonb := valid_plan.plan -> 'chunk_size';
begin
  if jsonb_typeof(valid_plan.plan) is distinct from 'object' then
    raise exception 'plan: must be an object with the keys job_id, tenant, targets, chunk_size, allow_partial, got %',
      coalesce(jsonb_typeof(valid_plan.plan), 'null') using errcode = '22023';
  end if;
  select k into v_key from jsonb_object_keys(valid_plan.plan) as k where k <> all (v_keys) order by k limit 1;
  if v_key is not null then
    raise exception 'plan: unexpected key %', excerpt(v_key, true) using errcode = '22023';
  end if;
  select k into v_key from unnest(v_keys) with ordinality as u(k, ord) where not valid_plan.plan ? u.k order by u.ord limit 1;
  if v_key is not null then
    raise exception 'plan: missing key %', to_jsonb(v_key) using errcode = '22023';
  end if;
  foreach v_key in array array['job_id', 'tenant'] loop
    if jsonb_typeof(valid_plan.plan -> v_key) <> 'string' then
      raise exception '%: must be a string, got %', v_key, jsonb_typeof(valid_plan.plan -> v_key) using errcode = '22023';
    end if;
    perform check_name(valid_plan.plan ->> v_key, v_key);
  end loop;
  v_targets := case when valid_plan.definition is null then normalized_targets(valid_plan.plan -> 'targets', 'targets')
                    else change_targets(valid_plan.definition, valid_plan.plan -> 'targets', 'targets') end;
  if jsonb_typeof(v_chunk_size) <> 'number' or scale(v_chunk_size::numeric) <> 0 then
    raise exception 'chunk_size: must be an integer, got %', excerpt(v_chunk_size::text, false) using errcode = '22023';
  end if;
  if valid_plan.definition is null and not in_range('chunk_size', v_chunk_size::numeric) then
    raise exception '%', range_problem('chunk_size', v_chunk_size::numeric) using errcode = '22023';
  end if;
  -- A declared change's chunks may be bigger (limits()' change_chunk_size_max).
  if valid_plan.definition is not null
     and v_chunk_size::numeric not between limit_of('chunk_size_min') and limit_of('change_chunk_size_max') then
    raise exception 'chunk_size: must be between % and %, got %', limit_of('chunk_size_min'), limit_of('change_chunk_size_max'),
      v_chunk_size::numeric using errcode = '22023';
  end if;
  if valid_plan.plan -> 'allow_partial' <> 'true'::jsonb then
    raise exception 'allow_partial: must be true (each chunk commits on its own), got %', excerpt((valid_plan.plan -> 'allow_partial')::text, false)
      using errcode = '22023';
  end if;
  return jsonb_build_object('job_id', valid_plan.plan ->> 'job_id', 'tenant', valid_plan.plan ->> 'tenant',
                            'targets', v_targets, 'chunk_size', v_chunk_size::integer);
end
$$;
comment on function {{ .schema }}.valid_plan(jsonb, jsonb) is
  'chunks helper: validates a register PLAN (22023 naming the field, in register''s order) and returns {"job_id", "tenant", "targets" (sorted by id; with a change DEFINITION, its targets sorted by key), "chunk_size"}.';

create or replace function {{ .schema }}.valid_plan(plan jsonb) returns jsonb
language sql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
  select {{ .schema }}.valid_plan(plan, null)
$$;
comment on function {{ .schema }}.valid_plan(jsonb) is
  'chunks helper: validates a register PLAN of orders (valid_plan(plan, null)).';
