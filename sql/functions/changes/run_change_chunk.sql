-- run_chunk's path for a job of a declared change (job_change), on the
-- job row run_chunk has locked: the stored job must be sound (tenant,
-- chunk_size, next_index on a chunk boundary, change_audit exactly
-- targets[0:next_index] by key), still its approval (job_approval), and
-- its change still the definition it was approved under (changes.digest)
-- and able to run (run_chunk read both with the job); then the
-- change's generated function changes the chunk's rows as the writer role
-- and returns what it changed, which is audited here, as chunks' owner,
-- with next_index moved in the same statement. The one dynamic statement
-- per chunk is the call of that function.
drop function if exists {{ .schema }}.run_change_chunk(text, text, jsonb, integer, integer, text, text, text, text, text, integer, text);
create or replace function {{ .schema }}.run_change_chunk(job_id text, tenant text, targets jsonb, chunk_size integer,
                                                          next_index integer, change text, function_name text,
                                                          definition jsonb, problem text, a_kind text, a_tenant text,
                                                          a_targets_sha256 text, a_chunk_size integer, kind text)
returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
set enable_seqscan = off
as $$
declare
  v_n integer;
  v_end integer;
  v_problem text;
  v_key text;
  v_function text;
  v_bad bigint;
  v_audit_rows bigint;
  v_slice jsonb;
  v_def jsonb;
  v_rows jsonb;
  v_matched bigint;
  v_count integer;
  v_processed jsonb;
  v_targets jsonb;
  -- An undo (job_kind restore) runs the change's inverse; its approval is of kind restore.
  v_restore constant boolean := run_change_chunk.kind = 'restore';
  v_kind constant text := case when v_restore then 'restore' else 'change' end;
begin
  v_n := case when jsonb_typeof(run_change_chunk.targets) = 'array' then jsonb_array_length(run_change_chunk.targets) end;
  v_problem := case
    when v_n is null or v_n not between 1 and limit_of('targets_max') then
      format('the stored job is not sound: its targets are not a list of 1 to %s targets', limit_of('targets_max'))
    when not is_name(run_change_chunk.tenant) then format('stored tenant %s is not valid', excerpt(run_change_chunk.tenant, true))
    when not in_range('chunk_size', run_change_chunk.chunk_size) then
      format('stored chunk_size %s is not between %s and %s', run_change_chunk.chunk_size, limit_of('chunk_size_min'),
             limit_of('chunk_size_max'))
    when run_change_chunk.next_index not between 0 and v_n then
      format('next_index %s is beyond the %s targets', run_change_chunk.next_index, v_n)
    when run_change_chunk.next_index % run_change_chunk.chunk_size <> 0 and run_change_chunk.next_index <> v_n then
      format('next_index %s is not a multiple of chunk_size %s', run_change_chunk.next_index, run_change_chunk.chunk_size)
  end;
  if v_problem is not null then
    raise exception 'job %: %', run_change_chunk.job_id, v_problem using errcode = 'CH409';
  end if;
  -- The targets (a list, checked above), decompressed once: a job's stored
  -- targets are compressed (TOAST), and each use of the parameter would
  -- decompress them again; the same value.
  v_targets := run_change_chunk.targets || '[]'::jsonb;

  -- Still the approval, and still the change it was approved under.
  v_problem := approval_problem(run_change_chunk.job_id, v_kind, run_change_chunk.tenant, v_targets,
                                run_change_chunk.chunk_size, run_change_chunk.a_kind, run_change_chunk.a_tenant,
                                run_change_chunk.a_targets_sha256, run_change_chunk.a_chunk_size);
  if v_problem is not null then
    raise exception '%', v_problem using errcode = 'CH409';
  end if;
  -- Its change, still the definition it was approved under (run_chunk
  -- read it by the digest approved: FUNCTION_NAME NULL when there is none),
  -- able to run (PROBLEM, run_chunk's: its functions exist and its key is
  -- still unique on the table alone), and no temporary object in the
  -- session that code on the table could read instead of its own. Whether
  -- the functions are still as chunks made them (owner, settings, grants)
  -- is asked at register, check and migrate, not here: only their owner,
  -- the writer, can alter them, and their guard refuses to run as anyone
  -- else, so an altered function still runs as the writer, with no right
  -- that code on the table lacks (docs/limits-and-decisions.md "What a
  -- chunk checks").
  if run_change_chunk.function_name is null then
    raise exception 'job %: its change % was redefined or dropped since it was approved', run_change_chunk.job_id,
      run_change_chunk.change using errcode = 'CH409';
  end if;
  v_function := run_change_chunk.function_name;
  v_def := run_change_chunk.definition;
  -- A key of one column is read directly (v_key); a composite key's, by change_key_of.
  v_key := case when jsonb_typeof(v_def -> 'key') = 'string' then v_def ->> 'key' end;
  v_problem := run_change_chunk.problem;
  if v_problem is null and pg_my_temp_schema() <> 0 then
    v_problem := (select t from temp_objects_problem() as t);
  end if;
  if v_problem is not null then
    raise exception 'job %: change % cannot run: %', run_change_chunk.job_id, run_change_chunk.change, v_problem
      using errcode = 'CH409';
  end if;

  -- The audit is exactly targets[0:next_index], by ordinal and key: as
  -- many rows as next_index, each at an ordinal below it (one row per
  -- ordinal: the primary key) with its target's key. One range scan.
  select count(*), count(*) filter (where a.ordinal not between 0 and run_change_chunk.next_index - 1
                                       or a.key is distinct from coalesce(v_targets -> a.ordinal ->> v_key, change_key_text(v_def, v_targets -> a.ordinal)))
    into v_audit_rows, v_bad
    from change_audit as a
   where a.job_id = run_change_chunk.job_id;
  if v_bad > 0 or v_audit_rows <> run_change_chunk.next_index then
    raise exception 'job %: the stored job is not sound: its audit (change_audit) is not exactly targets[0:%]',
      run_change_chunk.job_id, run_change_chunk.next_index using errcode = 'CH409';
  end if;

  if run_change_chunk.next_index = v_n then
    return jsonb_build_object('processed', '[]'::jsonb, 'next_index', v_n, 'done', true);
  end if;
  v_end := least(run_change_chunk.next_index + run_change_chunk.chunk_size, v_n);
  select jsonb_agg(v_targets -> i order by i), jsonb_agg(coalesce(v_targets -> i -> v_key, change_key_of(v_def, v_targets -> i)) order by i) into v_slice, v_processed
    from generate_series(run_change_chunk.next_index, v_end - 1) as i;
  -- The change's function (an undo's: its inverse, restore_<name>), as the
  -- writer: it changes the rows and returns what it changed; the audit is
  -- written here, as chunks' owner, and must be exactly this chunk's
  -- targets, by ordinal and key.
  if v_restore then
    v_function := 'restore_' || run_change_chunk.change; -- change_function_names
  end if;
  execute format('select %I.%I($1, $2, $3, $4)', '{{ .schema }}', v_function)
    into v_rows using run_change_chunk.job_id, run_change_chunk.tenant, run_change_chunk.next_index, v_slice;
  -- Exactly the chunk's targets, one row each, by ordinal and key: the
  -- count before anything is written (a key that named two rows gives
  -- more), the ordinals and keys as the rows are written (one statement).
  v_count := coalesce(jsonb_array_length(v_rows), -1); -- NULL (never from the generated body) is refused too
  if v_count = v_end - run_change_chunk.next_index then
    with audit as (
      insert into change_audit (job_id, ordinal, key, version_before, version_after, before, after)
      select run_change_chunk.job_id, r.ordinal, r.key, r.version_before, r.version_after, r.before, r.after
        from jsonb_to_recordset(v_rows) as r(ordinal integer, key text, version_before bigint, version_after bigint,
                                             before jsonb, after jsonb)
      returning ordinal, key
    ), moved as (
      update jobs as j set next_index = v_end where j.job_id = run_change_chunk.job_id
    )
    select count(*) into v_matched
      from audit as a
     where a.ordinal between run_change_chunk.next_index and v_end - 1
       and a.key is not distinct from coalesce(v_targets -> a.ordinal ->> v_key, change_key_text(v_def, v_targets -> a.ordinal));
  end if;
  if v_count <> v_end - run_change_chunk.next_index or v_matched <> v_count then
    raise exception 'job %: change %''s function returned % audit rows that are not exactly the chunk''s % targets%',
      run_change_chunk.job_id, run_change_chunk.change, v_count, v_end - run_change_chunk.next_index,
      coalesce(': ' || (select k from change_key_problem(v_def) as k),
               case when v_count > v_end - run_change_chunk.next_index
                    then ': a key named more than one row (is it still unique in its table, and in no child table?)' else '' end)
      using errcode = 'CH409';
  end if;
  return jsonb_build_object('processed', v_processed, 'next_index', v_end, 'done', v_end = v_n);
end
$$;
comment on function {{ .schema }}.run_change_chunk(text, text, jsonb, integer, integer, text, text, jsonb, text, text, text, text, integer, text) is
  'chunks helper: run_chunk''s path for a job of a declared change, on the job row run_chunk locked: proves the job sound, still its approval and its change still the definition it was approved under (CH409 otherwise), runs the change''s generated function on the next chunk (KIND restore, an undo: its inverse) and moves next_index; returns run_chunk''s {"processed": [keys], "next_index", "done"}.';
