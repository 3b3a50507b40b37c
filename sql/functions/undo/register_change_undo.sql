-- register_undo's part for a job of a declared change (job_change), on the
-- job row register_undo has locked, after its rules (an undo is not undone,
-- a job is undone once, the job is still its approval and cannot make
-- progress). STORED is the targets of the undo NEW_JOB_ID when it is
-- already registered (nothing is written then), else NULL. The undo's
-- targets are JOB_ID's committed rows that are still as it left them
-- (report's matching, and of its tenant), each as {key, version (the one
-- JOB_ID left, when the change has one), "?after" (the values JOB_ID
-- wrote), "?before" (the values it found)}, from change_audit. It is a job
-- of the same change (job_change, same digest), kind restore (job_kind,
-- job_approval), run by run_chunk with the change's inverse: the before
-- values back, version + 1, audited in change_audit. Drifted and missing
-- rows are listed and left alone. One statement over the user's table,
-- built from the definition, run as the writer role (writer_run).
create or replace function {{ .schema }}.register_change_undo(job_id text, new_job_id text, tenant text, targets jsonb,
                                                              chunk_size integer, next_index integer, change text,
                                                              digest text, stored jsonb)
returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_def jsonb;
  v_version text;
  v_version_type regtype;
  v_n integer;
  v_bad bigint;
  v_audit_rows bigint;
  v_targets jsonb;
  v_lists jsonb;
  v_input jsonb;
  v_status jsonb;
  v_problem text;
begin
  select c.definition into v_def from changes as c
   where c.name = register_change_undo.change and c.digest = register_change_undo.digest;
  if not found then
    raise exception 'job %: its change % was redefined or dropped since it was approved', register_change_undo.job_id,
      register_change_undo.change using errcode = 'CH409';
  end if;
  v_version := v_def ->> 'version';
  select f.typid into v_version_type from change_fields(v_def) as f where f.role = 'version';

  if register_change_undo.stored is null then
    -- CONTRACT §4: the undo is built from the job's audit, so it must be
    -- exactly targets[0:next_index], by ordinal and key.
    v_n := case when jsonb_typeof(register_change_undo.targets) = 'array' then jsonb_array_length(register_change_undo.targets) end;
    if v_n is null or register_change_undo.next_index not between 0 and v_n then
      raise exception 'job %: the stored job is not sound', register_change_undo.job_id using errcode = 'CH409';
    end if;
    select count(*) filter (where not c.ok), (select count(*) from change_audit as au where au.job_id = register_change_undo.job_id)
      into v_bad, v_audit_rows
      from (select a.ordinal is not null and a.key = change_key_text(v_def, t.e) as ok
              from jsonb_array_elements(register_change_undo.targets) with ordinality as t(e, ord)
              left join change_audit as a on a.job_id = register_change_undo.job_id and a.ordinal = t.ord - 1
             where t.ord <= register_change_undo.next_index) as c;
    if v_bad > 0 or v_audit_rows <> register_change_undo.next_index then
      raise exception 'job %: the stored job is not sound: its audit (change_audit) is not exactly targets[0:%]',
        register_change_undo.job_id, register_change_undo.next_index using errcode = 'CH409';
    end if;
  end if;

  -- The committed targets and their audit (chunks' tables, read here),
  -- then their rows (the user's table, read as the writer role): each is
  -- restored (matching and still of the tenant, or a target of the stored
  -- undo), drifted or missing.
  v_input := change_report_input(array[register_change_undo.job_id]);
  v_status := writer_run(change_report_sql(v_def), v_input, jsonb_build_object('tenant', register_change_undo.tenant));
  select jsonb_agg(c.target order by c.ord) filter (where c.status = 'restore'),
         jsonb_build_object(
           'targets', coalesce(jsonb_agg(c.k order by c.ord) filter (where c.status = 'restore'), '[]'),
           'drifted', coalesce(jsonb_agg(c.k order by c.ord) filter (where c.status = 'drifted'), '[]'),
           'missing', coalesce(jsonb_agg(c.k order by c.ord) filter (where c.status = 'missing'), '[]'))
    into v_targets, v_lists
    from (select x.ord, change_key_of(v_def, x.e) as k,
                 (select jsonb_object_agg(c, x.e -> c) from unnest(change_key_columns(v_def)) as c)
                 || case when v_version is not null then jsonb_build_object(v_version, a.version_after) else '{}'::jsonb end
                 || jsonb_build_object('?after', a.after, '?before', a.before) as target,
                 case when register_change_undo.stored is not null
                           and register_change_undo.stored @> jsonb_build_array((select jsonb_object_agg(c, x.e -> c) from unnest(change_key_columns(v_def)) as c)) then 'restore'
                      when s.e ->> 1 = 'missing' then 'missing'
                      when register_change_undo.stored is null and s.e ->> 1 = 'matching' then 'restore'
                      else 'drifted' end as status
            from jsonb_array_elements(register_change_undo.targets) with ordinality as x(e, ord)
            join change_audit as a on a.job_id = register_change_undo.job_id and a.ordinal = x.ord - 1
            join jsonb_array_elements(v_status) as s(e) on (s.e ->> 0)::bigint = x.ord
           where x.ord <= register_change_undo.next_index) as c;

  if register_change_undo.stored is not null then
    return jsonb_build_object('job_id', register_change_undo.new_job_id, 'undoes', register_change_undo.job_id, 'created', false,
                              'change', register_change_undo.change) || v_lists;
  end if;
  if register_change_undo.next_index = 0 then
    raise exception 'job %: nothing to undo: no chunk of it is committed', register_change_undo.job_id using errcode = 'CH409';
  end if;
  if v_targets is null then
    raise exception 'job %: nothing to undo: none of its % committed rows is as it left it (drifted %, missing %)',
      register_change_undo.job_id, register_change_undo.next_index, v_lists -> 'drifted', v_lists -> 'missing' using errcode = 'CH409';
  end if;
  -- A row at the largest version its column holds cannot change again.
  select format('%s: %s is %s, the largest its column (%s) holds: it cannot be restored',
                (select string_agg(format('%s %s', c, t.e ->> c), ', ' order by o) from unnest(change_key_columns(v_def)) with ordinality as u(c, o)), v_version,
                t.e -> v_version, v_version_type)
    into v_problem
    from jsonb_array_elements(v_targets) with ordinality as t(e, ord)
   where (t.e ->> v_version)::numeric >= case v_version_type when 'smallint'::regtype then 32767
                                                             when 'integer'::regtype then 2147483647
                                                             else 9223372036854775807 end
   order by t.ord
   limit 1;
  if v_problem is not null then
    raise exception 'job %: %', register_change_undo.job_id, v_problem using errcode = 'CH409';
  end if;

  if not record_job(register_change_undo.new_job_id, register_change_undo.tenant, v_targets, register_change_undo.chunk_size,
                    'restore', 'register_undo') then
    raise exception 'job %: already registered, and not as the undo of %', register_change_undo.new_job_id,
      register_change_undo.job_id using errcode = 'CH409';
  end if;
  insert into job_kind (job_id, kind, undoes) values (register_change_undo.new_job_id, 'restore', register_change_undo.job_id);
  insert into job_change (job_id, change, digest)
  values (register_change_undo.new_job_id, register_change_undo.change, register_change_undo.digest);
  return jsonb_build_object('job_id', register_change_undo.new_job_id, 'undoes', register_change_undo.job_id, 'created', true,
                            'change', register_change_undo.change) || v_lists;
end
$$;
comment on function {{ .schema }}.register_change_undo(text, text, text, jsonb, integer, integer, text, text, jsonb) is
  'chunks helper: register_undo''s part for a job of a declared change, on the job row it locked: the undo NEW_JOB_ID of JOB_ID''s committed rows still as it left them (targets: key, version, "?after", "?before" from change_audit), a job of the same change of kind restore that the change''s inverse runs; returns register_undo''s answer with the change''s name ("change"; STORED: the already registered undo''s targets, nothing written). CH409: the change redefined or dropped, an unsound audit, nothing to undo, a version at its column''s largest.';
