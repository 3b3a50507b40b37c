-- register_undo's part that builds and records the undo, for a job of any
-- change (CHANGE and DIGEST: its declared change and the digest it was
-- approved under; both NULL for a job of orders, whose change is
-- orders_change()), on the job row register_undo has locked, after its
-- rules (an undo is not undone, a job is undone once, the job is sound and
-- still its approval, and cannot make progress). STORED is the targets of
-- the undo NEW_JOB_ID when it is already registered (nothing is written
-- then), else NULL.
--
-- The undo's targets are JOB_ID's committed targets that are still as it
-- left them (report's matching: change_status), each its target's key and
-- expect fields with the version JOB_ID left, and, when its audit keeps
-- them (change_audit), the values JOB_ID wrote ("?after") and found
-- ("?before"): for orders, {"id", "qty", "revision": approved + 1}. It is
-- a job of the same change (job_change, same digest), kind restore
-- (job_kind, job_approval), run by run_chunk with the change's inverse:
-- the before values back (orders: pending), version + 1. Drifted and
-- missing targets are listed and left alone.
drop function if exists {{ .schema }}.register_change_undo(text, text, text, jsonb, integer, integer, text, text, jsonb);
create or replace function {{ .schema }}.register_undo_job(job_id text, new_job_id text, tenant text, targets jsonb,
                                                           chunk_size integer, next_index integer, change text,
                                                           digest text, stored jsonb)
returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_def jsonb;
  v_orders constant boolean := register_undo_job.change is null;
  v_version text;
  v_version_type regtype;
  v_targets jsonb;
  v_lists jsonb;
  v_status jsonb;
  v_problem text;
begin
  if v_orders then
    v_def := orders_change();
  else
    select c.definition into v_def from changes as c
     where c.name = register_undo_job.change and c.digest = register_undo_job.digest and c.retired_at is null;
    if not found then
      raise exception 'job %: its change % was redefined or dropped since it was approved', register_undo_job.job_id,
        register_undo_job.change using errcode = 'CH409';
    end if;
  end if;
  v_version := v_def ->> 'version';
  select f.typid into v_version_type from change_fields(v_def) as f where f.role = 'version';

  -- Report's status of each committed target (change_status: a user's
  -- table read as the writer role): each is restored (matching, or a
  -- target of the stored undo), drifted or missing.
  v_status := change_status(v_def, array[register_undo_job.job_id]);
  select jsonb_agg(c.target order by c.ord) filter (where c.status = 'restore'),
         jsonb_build_object(
           'targets', coalesce(jsonb_agg(c.k order by c.ord) filter (where c.status = 'restore'), '[]'),
           'drifted', coalesce(jsonb_agg(c.k order by c.ord) filter (where c.status = 'drifted'), '[]'),
           'missing', coalesce(jsonb_agg(c.k order by c.ord) filter (where c.status = 'missing'), '[]'))
    into v_targets, v_lists
    from (select x.ord, change_key_of(v_def, x.e) as k,
                 (select jsonb_object_agg(c, x.e -> c)
                    from unnest(change_key_columns(v_def)
                                || array(select jsonb_array_elements_text(coalesce(v_def -> 'expect', '[]')))) as c)
                 || case when v_version is null then '{}'::jsonb
                         else jsonb_build_object(v_version, coalesce(a.version_after, (x.e ->> v_version)::bigint + 1)) end
                 || case when a.job_id is null then '{}'::jsonb else jsonb_build_object('?after', a.after, '?before', a.before) end
                   as target,
                 case when register_undo_job.stored is not null
                           and register_undo_job.stored @> jsonb_build_array((select jsonb_object_agg(c, x.e -> c) from unnest(change_key_columns(v_def)) as c)) then 'restore'
                      when s.e ->> 2 = 'missing' then 'missing'
                      when register_undo_job.stored is null and s.e is null then 'restore'
                      else 'drifted' end as status
            from jsonb_array_elements(register_undo_job.targets) with ordinality as x(e, ord)
            left join change_audit as a on not v_orders and a.job_id = register_undo_job.job_id and a.ordinal = x.ord - 1
            left join jsonb_array_elements(v_status -> 'off') as s(e) on (s.e ->> 1)::bigint = x.ord
           where x.ord <= register_undo_job.next_index
             -- (a target set aside was never changed: skip_target)
             and not exists (select from job_skips as sk where sk.job_id = register_undo_job.job_id and sk.ordinal = x.ord - 1)) as c;

  if register_undo_job.stored is not null then
    return jsonb_build_object('job_id', register_undo_job.new_job_id, 'undoes', register_undo_job.job_id, 'created', false)
           || case when v_orders then '{}'::jsonb else jsonb_build_object('change', register_undo_job.change) end || v_lists;
  end if;
  if register_undo_job.next_index = 0 then
    raise exception 'job %: nothing to undo: no chunk of it is committed', register_undo_job.job_id using errcode = 'CH409';
  end if;
  if v_targets is null then
    raise exception 'job %: nothing to undo: none of its % committed % is as it left it (drifted %, missing %)',
      register_undo_job.job_id, register_undo_job.next_index, case when v_orders then 'orders' else 'rows' end,
      v_lists -> 'drifted', v_lists -> 'missing' using errcode = 'CH409';
  end if;
  -- A row at the largest version its column holds (an order: the largest
  -- revision an order can have) cannot change again.
  select case when v_orders
              then format('order %s: revision is %s, the largest an order can have: it cannot be restored', t.e ->> 'id', t.e ->> v_version)
              else format('%s: %s is %s, the largest its column (%s) holds: it cannot be restored',
                          (select string_agg(format('%s %s', c, t.e ->> c), ', ' order by o) from unnest(change_key_columns(v_def)) with ordinality as u(c, o)),
                          v_version, t.e -> v_version, v_version_type) end
    into v_problem
    from jsonb_array_elements(v_targets) with ordinality as t(e, ord)
   where (t.e ->> v_version)::numeric >= case when v_orders then limit_of('revision_max') + 1
                                              when v_version_type = 'smallint'::regtype then 32767
                                              when v_version_type = 'integer'::regtype then 2147483647
                                              else 9223372036854775807 end
   order by t.ord
   limit 1;
  if v_problem is not null then
    raise exception 'job %: %', register_undo_job.job_id, v_problem using errcode = 'CH409';
  end if;

  if not record_job(register_undo_job.new_job_id, register_undo_job.tenant, v_targets, register_undo_job.chunk_size,
                    'restore', 'register_undo', not v_orders) then
    raise exception 'job %: already registered, and not as the undo of %', register_undo_job.new_job_id,
      register_undo_job.job_id using errcode = 'CH409';
  end if;
  insert into job_kind (job_id, kind, undoes) values (register_undo_job.new_job_id, 'restore', register_undo_job.job_id);
  if not v_orders then
    insert into job_change (job_id, change, digest)
    values (register_undo_job.new_job_id, register_undo_job.change, register_undo_job.digest);
  end if;
  -- Two people: the undo is a new plan, proposed when its change's policy
  -- says so and always when the job it undoes was two-person.
  perform propose_jobs(array[register_undo_job.new_job_id], register_undo_job.change, is_two_person(register_undo_job.job_id));
  return jsonb_build_object('job_id', register_undo_job.new_job_id, 'undoes', register_undo_job.job_id, 'created', true)
         || case when v_orders then '{}'::jsonb else jsonb_build_object('change', register_undo_job.change) end || v_lists;
end
$$;
comment on function {{ .schema }}.register_undo_job(text, text, text, jsonb, integer, integer, text, text, jsonb) is
  'chunks helper: register_undo''s part for a job of any change (CHANGE NULL: orders), on the job row it locked: the undo NEW_JOB_ID of JOB_ID''s committed targets still as it left them (report''s matching), a job of the same change of kind restore that the change''s inverse runs; returns register_undo''s answer (with "change" for a declared change; STORED: the already registered undo''s targets, nothing written). CH409: the change redefined or dropped, nothing to undo, a version at its column''s largest.';
