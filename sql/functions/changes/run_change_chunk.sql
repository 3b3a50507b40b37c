-- run_chunk's path for a job of a declared change (job_change), on the
-- job row run_chunk has locked. Its proof is per chunk (docs/contract.md
-- "A declared change's chunk"), so a chunk costs the same at the first
-- target of a job of 10,000 as at the last:
-- - the job's shape: its targets and chunk size (change_jobs) within the
--   limits, its tenant valid, 0 <= next_index <= its targets;
-- - still its approval (job_approval: kind, tenant, chunk size) and its
--   change still the definition it was approved under (changes.digest),
--   able to run (run_chunk read both with the job);
-- - its progress: next_index is where its last committed chunk ended
--   (change_chunks), and no audit row lies at or after it (change_audit);
-- - the chunk's range, read by primary key, is exactly its targets;
--   those an operator set aside (job_skips) are passed over.
-- The whole audit and the approved targets' sha256 are proved by verify
-- (change_job_problem), report and undo, not at each chunk. Then the
-- change's generated function changes the chunk's rows as the writer role
-- and returns what it changed, which is audited here, as chunks' owner,
-- with next_index moved and the chunk recorded in the same statement.
-- ROWS caps the chunk below the approved chunk size (a worker's adaptive
-- size; NULL: none; run_job_chunk checked it is at least 1). The one
-- dynamic statement per chunk is the call of the change's function.
drop function if exists {{ .schema }}.run_change_chunk(text, text, jsonb, integer, integer, text, text, jsonb, text, text, text, text, integer, text);
create or replace function {{ .schema }}.run_change_chunk(job_id text, tenant text, n_targets integer, chunk_size integer,
                                                          next_index integer, change text, function_name text,
                                                          definition jsonb, problem text, a_kind text, a_tenant text,
                                                          a_chunk_size integer, kind text, rows integer)
returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
set enable_seqscan = off
as $$
declare
  v_n constant integer := run_change_chunk.n_targets;
  v_end integer;
  v_size integer;
  v_problem text;
  v_key text;
  v_function text;
  v_slice jsonb;
  v_def jsonb;
  v_ordinals integer[];
  v_keys text[];
  v_versions_before bigint[];
  v_versions_after bigint[];
  v_befores jsonb[];
  v_afters jsonb[];
  v_matched bigint;
  v_count integer;
  v_processed jsonb;
  v_last_end integer;
  v_beyond boolean;
  v_skipped integer[];
  v_from integer;
  v_to integer;
  v_o integer[];
  v_k text[];
  v_vb bigint[];
  v_va bigint[];
  v_b jsonb[];
  v_a jsonb[];
  -- An undo (job_kind restore) runs the change's inverse; its approval is of kind restore.
  v_restore constant boolean := run_change_chunk.kind = 'restore';
  v_kind constant text := case when v_restore then 'restore' else 'change' end;
begin
  v_problem := case
    when v_n is null then 'the stored job is not sound: its targets are not recorded (change_jobs has no row for it)'
    when not is_name(run_change_chunk.tenant) then format('stored tenant %s is not valid', excerpt(run_change_chunk.tenant, true))
    when run_change_chunk.chunk_size not between limit_of('chunk_size_min') and limit_of('change_chunk_size_max') then
      format('stored chunk_size %s is not between %s and %s', run_change_chunk.chunk_size, limit_of('chunk_size_min'),
             limit_of('change_chunk_size_max'))
    when run_change_chunk.next_index not between 0 and v_n then
      format('next_index %s is beyond the %s targets', run_change_chunk.next_index, v_n)
  end;
  if v_problem is not null then
    raise exception 'job %: %', run_change_chunk.job_id, v_problem using errcode = 'CH409';
  end if;

  -- Still the approval (job_approval's kind, tenant and chunk size, in
  -- digest_approval_problem's words), and still the change it was approved
  -- under. The targets are not hashed at each chunk (both digests are
  -- given alike): change_targets is written once, by register, an UPDATE
  -- of it is refused, and verify and report prove its sha256.
  v_problem := digest_approval_problem(run_change_chunk.job_id, v_kind, run_change_chunk.tenant, null, '', run_change_chunk.chunk_size,
                                       run_change_chunk.a_kind, run_change_chunk.a_tenant, '', run_change_chunk.a_chunk_size);
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

  -- Its progress: next_index is where the last recorded chunk ended, and
  -- nothing is audited at or after it. Two index probes.
  select coalesce((select c.first_ordinal + c.size from change_chunks as c
                    where c.job_id = run_change_chunk.job_id order by c.first_ordinal desc limit 1), 0),
         exists (select from change_audit as a where a.job_id = run_change_chunk.job_id and a.ordinal >= run_change_chunk.next_index)
    into v_last_end, v_beyond;
  if v_last_end <> run_change_chunk.next_index or v_beyond then
    raise exception '%', format('job %s: the stored job is not sound: next_index is %s, but its last committed chunk ended at %s%s',
      run_change_chunk.job_id, run_change_chunk.next_index, v_last_end,
      case when v_beyond then format(' and change_audit has rows at or after %s', run_change_chunk.next_index) else '' end)
      using errcode = 'CH409';
  end if;

  if run_change_chunk.next_index = v_n then
    return jsonb_build_object('processed', '[]'::jsonb, 'next_index', v_n, 'done', true);
  end if;
  -- A worker's adaptive size caps the chunk below its approved size, never above.
  v_size := least(coalesce(run_change_chunk.rows, run_change_chunk.chunk_size), run_change_chunk.chunk_size);
  v_end := least(run_change_chunk.next_index + v_size, v_n);
  -- The targets of the range an operator set aside (skip_target): passed
  -- over, never changed. One index probe; none, nearly always.
  select array_agg(s.ordinal order by s.ordinal) into v_skipped
    from job_skips as s
   where s.job_id = run_change_chunk.job_id and s.ordinal >= run_change_chunk.next_index and s.ordinal < v_end;
  v_skipped := coalesce(v_skipped, '{}');
  -- The chunk's targets, by primary key: exactly [next_index, end).
  select jsonb_agg(t.target order by t.ordinal),
         coalesce(jsonb_agg(coalesce(t.target -> v_key, change_key_of(v_def, t.target)) order by t.ordinal)
                    filter (where t.ordinal <> all (v_skipped)), '[]'),
         count(*)
    into v_slice, v_processed, v_count
    from change_targets as t
   where t.job_id = run_change_chunk.job_id and t.ordinal >= run_change_chunk.next_index and t.ordinal < v_end;
  if v_count <> v_end - run_change_chunk.next_index then
    raise exception 'job %: the stored job is not sound: change_targets holds % of its targets [%:%]', run_change_chunk.job_id,
      v_count, run_change_chunk.next_index, v_end using errcode = 'CH409';
  end if;
  -- The change's function (an undo's: its inverse, restore_<name>), as the
  -- writer: it changes the rows and returns what it changed; the audit is
  -- written here, as chunks' owner, and must be exactly this chunk's
  -- targets, by ordinal and key.
  if v_restore then
    v_function := 'restore_' || run_change_chunk.change; -- change_function_names
  end if;
  -- The rows come back as arrays, one element per changed row (as one
  -- jsonb list they cost a 1,000-row chunk about 10 ms more to build).
  -- Who asked, for the table's own triggers (docs/your-own-tables.md "Who
  -- ran it"): they run as the writer, so current_user names the writer;
  -- these name the session's user, the job and the change, in this
  -- transaction, for the function's statement only (a value the caller set
  -- before is overwritten, and all three are empty again after it).
  perform set_config('chunks.actor', session_user, true), set_config('chunks.job_id', run_change_chunk.job_id, true),
          set_config('chunks.change', run_change_chunk.change, true);
  if cardinality(v_skipped) = 0 then
    execute format('select * from %I.%I($1, $2, $3, $4)', '{{ .schema }}', v_function)
      into v_ordinals, v_keys, v_versions_before, v_versions_after, v_befores, v_afters
      using run_change_chunk.job_id, run_change_chunk.tenant, run_change_chunk.next_index, v_slice;
  else
    -- Around the skipped targets: one call for each run of targets between
    -- them, in key order (so rows are still locked in ascending key order).
    v_ordinals := '{}'; v_keys := '{}'; v_versions_before := '{}'; v_versions_after := '{}'; v_befores := '{}'; v_afters := '{}';
    v_from := run_change_chunk.next_index;
    foreach v_to in array v_skipped || v_end loop
      if v_to > v_from then
        execute format('select * from %I.%I($1, $2, $3, $4)', '{{ .schema }}', v_function)
          into v_o, v_k, v_vb, v_va, v_b, v_a
          using run_change_chunk.job_id, run_change_chunk.tenant, v_from,
                (select jsonb_agg(e order by o) from jsonb_array_elements(v_slice) with ordinality as x(e, o)
                  where o - 1 + run_change_chunk.next_index >= v_from and o - 1 + run_change_chunk.next_index < v_to);
        v_ordinals := v_ordinals || v_o; v_keys := v_keys || v_k; v_versions_before := v_versions_before || v_vb;
        v_versions_after := v_versions_after || v_va; v_befores := v_befores || v_b; v_afters := v_afters || v_a;
      end if;
      v_from := v_to + 1;
    end loop;
  end if;
  perform set_config('chunks.actor', '', true), set_config('chunks.job_id', '', true), set_config('chunks.change', '', true);
  -- Exactly the chunk's targets, one row each, by ordinal and key: the
  -- count before anything is written (a key that named two rows gives
  -- more), the ordinals and keys as the rows are written (one statement,
  -- with the checkpoint and the chunk's record). Arrays of unequal length
  -- (never from the generated body) are refused too.
  v_count := case when cardinality(v_ordinals) = cardinality(v_keys) and cardinality(v_ordinals) = cardinality(v_versions_before)
                       and cardinality(v_ordinals) = cardinality(v_versions_after) and cardinality(v_ordinals) = cardinality(v_befores)
                       and cardinality(v_ordinals) = cardinality(v_afters)
                  then cardinality(v_ordinals) else -1 end;
  if v_count = v_end - run_change_chunk.next_index - cardinality(v_skipped) then
    with audit as (
      insert into change_audit (job_id, ordinal, key, version_before, version_after, before, after)
      select run_change_chunk.job_id, r.ordinal, r.key, r.version_before, r.version_after, r.before, r.after
        from unnest(v_ordinals, v_keys, v_versions_before, v_versions_after, v_befores, v_afters)
             as r(ordinal, key, version_before, version_after, before, after)
      returning ordinal, key
    ), moved as (
      update jobs as j set next_index = v_end where j.job_id = run_change_chunk.job_id
    ), recorded as (
      insert into change_chunks (job_id, first_ordinal, size)
      values (run_change_chunk.job_id, run_change_chunk.next_index, v_end - run_change_chunk.next_index)
    )
    select count(*) into v_matched
      from audit as a
     where a.ordinal between run_change_chunk.next_index and v_end - 1 and a.ordinal <> all (v_skipped)
       and a.key is not distinct from coalesce(v_slice -> (a.ordinal - run_change_chunk.next_index) ->> v_key,
                                               change_key_text(v_def, v_slice -> (a.ordinal - run_change_chunk.next_index)));
  end if;
  if v_count <> v_end - run_change_chunk.next_index - cardinality(v_skipped) or v_matched <> v_count then
    raise exception 'job %: change %''s function returned % audit rows that are not exactly the chunk''s % targets%',
      run_change_chunk.job_id, run_change_chunk.change, v_count, v_end - run_change_chunk.next_index - cardinality(v_skipped),
      coalesce(': ' || (select k from change_key_problem(v_def) as k),
               case when v_count > v_end - run_change_chunk.next_index - cardinality(v_skipped)
                    then ': a key named more than one row (is it still unique in its table, and in no child table?)' else '' end)
      using errcode = 'CH409';
  end if;
  return jsonb_build_object('processed', v_processed, 'next_index', v_end, 'done', v_end = v_n);
end
$$;
comment on function {{ .schema }}.run_change_chunk(text, text, integer, integer, integer, text, text, jsonb, text, text, text, integer, text, integer) is
  'chunks helper: run_chunk''s path for a job of a declared change, on the job row run_chunk locked: proves the job''s shape, approval (kind, tenant, chunk size), change (still the definition approved) and progress (next_index where its last chunk ended, nothing audited beyond) per chunk (CH409 otherwise), runs the change''s generated function on its next chunk (at most ROWS targets, a worker''s adaptive size; NULL: its chunk size; KIND restore, an undo: its inverse), audits them, records the chunk (change_chunks) and moves next_index; returns run_chunk''s {"processed": [keys], "next_index", "done"}.';
