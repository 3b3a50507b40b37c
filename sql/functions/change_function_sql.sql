-- The static function of a declared change (define_change), as SQL text:
-- {{ .schema }}.apply_<name>(job_id, tenant, first_ordinal, targets), which
-- applies the change to TARGETS (one chunk's slice of the job's targets,
-- targets[first_ordinal:]) the way change_orders does for orders: lock the
-- rows in key order, compare each with its target and the change's "when"
-- in one statement (CH409 naming the key and the first column that
-- differs), update them, and write one change_audit row each with the
-- before and after of every written column. Every identifier is quoted
-- with %I, every type is format_type's, every constant a quoted literal
-- cast to its column's type: nothing of the definition is ever SQL text.
-- No EXECUTE in the generated body: its statements are planned once.
-- The table is read by "key = any (array(select key from t))", an index
-- condition for any number of targets: a join with t, which the planner
-- guesses at 100 rows, was planned as a hash join over a scan of the whole
-- table (a chunk of one target read all 5,000 rows of a small table).
-- With RESTORE, the inverse used by an undo (register_undo):
-- apply_<name>(job_id, tenant, first_ordinal, targets, restore boolean),
-- whose targets are {key, version?, "?after", "?before"} (the values the
-- undone job wrote and those it found, from change_audit): each row must
-- still have the after values (and the version), naming the column that
-- differs, and gets the before values back with version + 1, audited the
-- same way. DEFINITION was validated by define_change.
create or replace function {{ .schema }}.change_function_sql(definition jsonb, restore boolean) returns text
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_def jsonb := change_function_sql.definition;
  v_fn text := 'apply_' || (v_def ->> 'name');
  v_ident text[] := parse_ident(v_def ->> 'table');
  v_rel regclass;
  v_table text;
  v_key text := v_def ->> 'key';
  v_version text := v_def ->> 'version';
  v_compared text;      -- the columns the check reads, as a select list of r
  v_written text[];     -- the columns the change writes (set, then set_from_target)
  v_t text;
  v_checks text := '';
  v_sets text;
  v_sql text;
begin
  select c.oid into v_rel
    from pg_class as c join pg_namespace as n on n.oid = c.relnamespace
   where n.nspname = v_ident[1] and c.relname = v_ident[2];
  v_table := format('%I.%I', v_ident[1], v_ident[2]);

  v_written := array(select k from jsonb_object_keys(coalesce(v_def -> 'set', '{}')) as k order by k)
               || array(select k from jsonb_object_keys(coalesce(v_def -> 'set_from_target', '{}')) as k order by k);

  -- The targets, the columns the check reads and the check itself
  -- (change_sql_parts; the inverse's, change_restore_parts, with its update).
  if change_function_sql.restore then
    select r.targets_cte, r.compared, r.problem, r.sets into v_t, v_compared, v_checks, v_sets
      from change_restore_parts(v_def, format('%I.targets', v_fn), format('%I.tenant', v_fn), v_written) as r;
  else
    select p.targets_cte, p.compared, p.problem into v_t, v_compared, v_checks
      from change_sql_parts(v_def, format('%I.targets', v_fn), format('%I.tenant', v_fn)) as p;
    -- The update: constants as typed literals, set_from_target from the targets, version + 1.
    select string_agg(s, ', ' order by o) into v_sets
      from (select format('%I = %L::%s', e.key, e.value #>> '{}', format_type(a.atttypid, a.atttypmod)) as s, 1 as o, e.key as k
              from jsonb_each(coalesce(v_def -> 'set', '{}')) as e
              join pg_attribute as a on a.attrelid = v_rel and a.attname = e.key
            union all
            select format('%I = t.%I', e.key, e.value), 2, e.key from jsonb_each_text(coalesce(v_def -> 'set_from_target', '{}')) as e
            union all
            select format('%1$I = r.%1$I + 1', v_version), 3, v_version where v_version is not null
            order by 2, 3) as x;
  end if;

  -- The body is passed as one quoted literal (%L), so no text of the
  -- definition can end it, as it could end a dollar quote.
  v_sql := format($f$
declare
  v_problem text;
  v_count bigint;
begin%13$s
  -- Lock the rows in key order, then compare each with its target.
  with %2$s,
  locked as materialized (
    select %3$s
      from %4$s as r
     where r.%5$I = any (array(select t.%5$I from t))
     order by r.%5$I
       for update of r
  )
  select s.problem into v_problem
    from (select t."?ordinal" as o,
                 %6$s as problem
            from t left join locked as l on l.%5$I = t.%5$I) as s
   where s.problem is not null
   order by s.o
   limit 1;
  if v_problem is not null then
    raise exception '%%', v_problem using errcode = 'CH409';
  end if;

  -- Update, and audit the before and after of every written column.
  with %2$s,
  b as materialized (
    select %7$s
      from %4$s as r
     where r.%5$I = any (array(select t.%5$I from t))
  ),
  u as (
    update %4$s as r
       set %8$s
      from t
     where r.%5$I = any (array(select t.%5$I from t)) and r.%5$I = t.%5$I%9$s
    returning %7$s
  )
  insert into {{ .schema }}.change_audit (job_id, ordinal, key, version_before, version_after, before, after)
  select %1$I.job_id, %1$I.first_ordinal + (t."?ordinal" - 1)::integer, t.%5$I::text, %10$s, %11$s, %12$s
    from t
    join b on b.%5$I = t.%5$I
    join u on u.%5$I = t.%5$I;
  get diagnostics v_count = row_count;
  if v_count <> jsonb_array_length(%1$I.targets) then
    -- Cannot happen while the rows are locked; checked so it can never pass silently.
    raise exception 'changed %% of %% rows', v_count, jsonb_array_length(%1$I.targets) using errcode = 'CH409';
  end if;
end
$f$,
    v_fn, v_t,
    v_compared,
    v_table, v_key, v_checks,
    (select string_agg(format('r.%I', c), ', ') from unnest(array[v_key] || v_written || v_version) as c where c is not null),
    v_sets,
    case when v_version is not null then format(' and r.%1$I = t.%1$I', v_version) else '' end,
    case when v_version is not null then format('b.%I', v_version) else 'null::bigint' end,
    case when v_version is not null then format('u.%I', v_version) else 'null::bigint' end,
    (select format('jsonb_build_object(%s), jsonb_build_object(%s)',
                   string_agg(format('%L, b.%I', c, c), ', '), string_agg(format('%L, u.%I', c, c), ', '))
       from unnest(v_written) as c),
    -- The inverse is only ever an undo's (run_change_chunk passes true).
    case when change_function_sql.restore then format(E'\n  if %I.restore is not true then\n    raise exception %L using errcode = %L;\n  end if;',
                                                      v_fn, 'restore: must be true (the inverse of a change runs an undo''s chunk)', '22023')
         else '' end);
  return format($f$create or replace function {{ .schema }}.%I(job_id text, tenant text, first_ordinal integer, targets jsonb%s)
returns void
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
set enable_seqscan = off
as %L$f$, v_fn, case when change_function_sql.restore then ', restore boolean' else '' end, v_sql);
end
$$;
comment on function {{ .schema }}.change_function_sql(jsonb, boolean) is
  'chunks helper: the CREATE FUNCTION text of the static function apply_<name> of a validated change DEFINITION (identifiers by %I, types by format_type, constants as typed literals), for define_change; with RESTORE, its inverse apply_<name>(..., restore boolean) that an undo runs (the after values expected, the before values set, version + 1).';
