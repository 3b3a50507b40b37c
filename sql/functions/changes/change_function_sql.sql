-- The static function of a declared change (define_change), as SQL text:
-- {{ .schema }}.apply_<name>(job_id, tenant, first_ordinal, targets), which
-- applies the change to TARGETS (one chunk's slice of the job's targets,
-- targets[first_ordinal:]) the way change_orders does for orders: one
-- statement updates every row that can take the change (its WHERE is the
-- check of the row against its target and the change's "when"), each
-- locked by its update in key order, and returns one row each for
-- change_audit (ordinal, key, the version before and after, the before and
-- after of every written column), which run_change_chunk writes as chunks'
-- owner: the function runs as the writer role (generate_change), which may
-- not touch chunks' tables; only when it changed
-- fewer rows than TARGETS are the rest locked in key order and compared
-- (CH409 naming the key and the first column that differs), all or none.
-- Every identifier is quoted
-- with %I, every type is format_type's, every constant a quoted literal
-- cast to its column's type: nothing of the definition is ever SQL text.
-- No EXECUTE in the generated body: its statements are planned once.
-- The table is read by "key = any (array(select key from t))", an index
-- condition for any number of targets: a join with t, which the planner
-- guesses at 100 rows, was planned as a hash join over a scan of the whole
-- table (a chunk of one target read all 5,000 rows of a small table).
-- With RESTORE, the inverse used by an undo (register_undo):
-- restore_<name>(job_id, tenant, first_ordinal, targets),
-- whose targets are {key, version?, "?after", "?before"} (the values the
-- undone job wrote and those it found, from change_audit): each row must
-- still have the after values (and the version), naming the column that
-- differs, and gets the before values back with version + 1, returned for
-- the audit the same way. DEFINITION was validated by define_change; WRITER
-- is the role that will own the function (its guard, writer_guard_sql).
drop function if exists {{ .schema }}.change_function_sql(jsonb, boolean);
create or replace function {{ .schema }}.change_function_sql(definition jsonb, restore boolean, writer text) returns text
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_def jsonb := change_function_sql.definition;
  v_fn text := (select case when change_function_sql.restore then f.restore else f.apply end
                  from change_function_names(v_def ->> 'name') as f);
  v_ident text[] := parse_ident(v_def ->> 'table');
  v_rel regclass;
  v_table text;
  v_version text := v_def ->> 'version';
  v_compared text;      -- the columns the check reads, as a select list of r
  v_written text[];     -- the columns the change writes (set, then set_from_target)
  v_t text;
  v_checks text := '';
  v_sets text;
  v_apply text;
  v_u text;             -- the statement's CTE u: the update, or the delete
  v_delete constant boolean := change_function_sql.definition ? 'delete' and not change_function_sql.restore;
  v_sql text;
begin
  select c.oid into v_rel
    from pg_class as c join pg_namespace as n on n.oid = c.relnamespace
   where n.nspname = v_ident[1] and c.relname = v_ident[2];
  v_table := format('%I.%I', v_ident[1], v_ident[2]);

  v_written := change_written(v_def);

  -- The targets, the columns the check reads and the check itself
  -- (change_sql_parts; the inverse's, change_restore_parts, with its update).
  if change_function_sql.restore then
    select r.targets_cte, r.compared, r.problem, r.sets into v_t, v_compared, v_checks, v_sets
      from change_restore_parts(v_def, format('%I.targets', v_fn), format('%I.tenant', v_fn), v_written) as r;
  else
    select p.targets_cte, p.compared, p.problem into v_t, v_compared, v_checks
      from change_sql_parts(v_def, format('%I.targets', v_fn), format('%I.tenant', v_fn)) as p;
    -- The update: constants as typed literals, set_from_target from the targets,
    -- set_now the transaction's time, version + 1.
    select string_agg(s, ', ' order by o) into v_sets
      from (select format('%I = %L::%s', e.key, e.value #>> '{}', format_type(a.atttypid, a.atttypmod)) as s, 1 as o, e.key as k
              from jsonb_each(coalesce(v_def -> 'set', '{}')) as e
              join pg_attribute as a on a.attrelid = v_rel and a.attname = e.key
            union all
            select format('%I = t.%I', e.key, e.value), 2, e.key from jsonb_each_text(coalesce(v_def -> 'set_from_target', '{}')) as e
            union all
            -- set_now: the chunk's transaction time, read in the writer's
            -- pinned TimeZone (UTC) for a timestamp or date column.
            select format('%I = pg_catalog.now()::%s', e, format_type(a.atttypid, a.atttypmod)), 3, e
              from jsonb_array_elements_text(coalesce(v_def -> 'set_now', '[]')) as e
              join pg_attribute as a on a.attrelid = v_rel and a.attname = e
            union all
            select format('%1$I = l.%1$I + 1', v_version), 4, v_version where v_version is not null
            order by 2, 3) as x;
  end if;

  -- One chunk's change as one statement, the generated body's twice (below):
  -- the targets not yet in V_DONE (their "?ordinal"s) whose rows can take
  -- the change now are updated, added to V_DONE and their audit rows to V_ROWS. The WHERE is
  -- the check itself (its CASE is NULL: the row can take the change), over
  -- the row l being updated, so the update changes exactly the rows the
  -- check passes, and PostgreSQL re-evaluates it on the newest version of a
  -- row that a concurrent transaction changed. Rows are visited by "key =
  -- any (array(...))" (an index condition, see above), which a btree scans
  -- in ascending key order, with the targets sorted by key (register_change
  -- stores them so), enable_seqscan and enable_bitmapscan off (and jit
  -- off: a scan the planner cannot avoid, such as an archive's without an
  -- index at undo, costs 1e10 under enable_seqscan off, and PostgreSQL 13
  -- to 17 then JIT-compiled the chunk's statement, 0.9 s of a 1 ms chunk):
  -- each row is locked by its update in ascending key order, as a FOR
  -- UPDATE in key order would, with one heap record instead of a lock record and an
  -- update. The before values come from b, the same row by its ctid (and
  -- its tableoid: a ctid names a row of one partition only), read
  -- with the statement's snapshot; "b.ctid = l.ctid" holds only while l is
  -- that very version: when a concurrent transaction changed the row after
  -- the snapshot, l is re-read as its newest version, whose ctid is another,
  -- and the row is left unchanged (b's values would be stale). So every
  -- before value audited is the one the update replaced, for any column
  -- type, without a separate statement.
  if v_delete then
    -- A change that deletes: the rows that can take it now are deleted, by
    -- the same WHERE, and each deleted version's full image (every column,
    -- generated ones too, as the row type makes it jsonb) is returned for
    -- the audit (RETURNING gives the version deleted, re-read when a
    -- concurrent transaction changed it), and inserted into the archive in
    -- the same statement. No column is written: "?after" is {}.
    v_u := format($f$
  u as (
    delete from %1$s as l
     using t
     where %2$s
       and %3$s and t."?ordinal" <> all (v_done)
       and %4$s is null
    returning t."?ordinal" as "?ordinal", %5$s as "?key", %6$s as "?version_before", null::bigint as "?version_after",
              to_jsonb(l) || %8$s as "?before", '{}'::jsonb as "?after"
  )%7$s$f$,
      v_table, change_key_any_sql(v_def, 'l', 'from t where t."?ordinal" <> all (v_done)'), change_key_equal_sql(v_def, 'l', 't'),
      v_checks, (change_key_sql(v_def, 't')).as_text,
      case when v_version is not null then format('l.%I', v_version) else 'null::bigint' end,
      case when v_def ? 'archive' then format($f$,
  archived as (
    insert into %1$s overriding system value
    select r.* from u cross join lateral jsonb_populate_record(null::%1$s, u."?before") as r
  )$f$, (v_def ->> 'archive')::regclass) else '' end,
      change_cascade_sql(v_def, 'image'));
  elsif change_function_sql.restore and v_def ? 'delete' then
    -- The undo of a change that deletes: each row whose key is still
    -- absent is put back from its image (the audit's "?before"), every
    -- column but the generated ones as it was (identity columns too:
    -- overriding system value), and taken out of the archive, in one
    -- statement; the inserted row is returned for the audit ("?after").
    v_u := format($f$
  ins as (
    insert into %1$s as l (%2$s) overriding system value
    select %3$s
      from t
     where t."?ordinal" <> all (v_done)
       and not exists (select from %1$s as r where %4$s)
    returning l.*
  ),
  u as (
    select t."?ordinal" as "?ordinal", %5$s as "?key", null::bigint as "?version_before", %6$s as "?version_after",
           '{}'::jsonb as "?before", to_jsonb(ins) as "?after"
      from ins join t on %7$s
  )%8$s$f$,
      v_table,
      (select string_agg(format('%I', a.attname), ', ' order by a.attnum) from pg_attribute as a
        where a.attrelid = v_rel and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''),
      (select string_agg(typed_field_sql('t."?before"', a.attname, format_type(a.atttypid, a.atttypmod)), ', ' order by a.attnum)
         from pg_attribute as a where a.attrelid = v_rel and a.attnum > 0 and not a.attisdropped and a.attgenerated = ''),
      change_key_equal_sql(v_def, 'r', 't'), (change_key_sql(v_def, 't')).as_text,
      case when v_version is not null then format('ins.%I', v_version) else 'null::bigint' end,
      change_key_equal_sql(v_def, 'ins', 't'),
      case when v_def ? 'archive' then format($f$,
  unarchived as (
    delete from %1$s as a using u join t on t."?ordinal" = u."?ordinal" where %2$s
  )$f$, (v_def ->> 'archive')::regclass, change_key_equal_sql(v_def, 'a', 't')) else '' end
      || change_cascade_sql(v_def, 'restore'));
  else
    v_u := format($f$
  u as (
    update %1$s as l
       set %2$s
      from t, %1$s as b
     where %3$s
       and %6$s and t."?ordinal" <> all (v_done)
       and b.tableoid = l.tableoid and b.ctid = l.ctid
       and %4$s is null
    returning t."?ordinal" as "?ordinal", %7$s as "?key", %5$s
  )$f$,
      v_table, v_sets, change_key_any_sql(v_def, 'l', 'from t where t."?ordinal" <> all (v_done)'), v_checks,
      format('%s as "?version_before", %s as "?version_after", %s',
             case when v_version is not null then format('b.%I', v_version) else 'null::bigint' end,
             case when v_version is not null then format('l.%I', v_version) else 'null::bigint' end,
             (select format('jsonb_build_object(%s) as "?before", jsonb_build_object(%s) as "?after"',
                            string_agg(format('%L, b.%I', c, c), ', '), string_agg(format('%L, l.%I', c, c), ', '))
                from unnest(v_written) as c)),
      change_key_equal_sql(v_def, 'l', 't'), (change_key_sql(v_def, 't')).as_text);
  end if;
  v_apply := format($f$
  with %2$s,%3$s
  select v_done || coalesce(array_agg(u."?ordinal"), '{}'),
         %1$I.ordinals || coalesce(array_agg((%1$I.first_ordinal + (u."?ordinal" - 1))::integer), '{}'),
         %1$I.keys || coalesce(array_agg(u."?key"), '{}'),
         %1$I.versions_before || coalesce(array_agg(u."?version_before"::bigint), '{}'),
         %1$I.versions_after || coalesce(array_agg(u."?version_after"::bigint), '{}'),
         %1$I.befores || coalesce(array_agg(u."?before"), '{}'),
         %1$I.afters || coalesce(array_agg(u."?after"), '{}')
    into v_done, %1$I.ordinals, %1$I.keys, %1$I.versions_before, %1$I.versions_after, %1$I.befores, %1$I.afters
    from u;$f$,
    v_fn, v_t, v_u);

  -- The body is passed as one quoted literal (%L), so no text of the
  -- definition can end it, as it could end a dollar quote.
  -- use_variable: a column of the user's table named like a variable
  -- here (v_done) is never what an unqualified name means; the generated
  -- SQL qualifies every column it reads (l., b., t., r.).
  v_sql := format($f$
#variable_conflict use_variable
declare
  v_problem text;
  v_done bigint[] := '{}'::bigint[];
begin%8$s
  %1$I.ordinals := '{}'; %1$I.keys := '{}'; %1$I.versions_before := '{}'; %1$I.versions_after := '{}';
  %1$I.befores := '{}'; %1$I.afters := '{}';
  -- The change, in one statement (see change_function_sql).%6$s
  -- More rows than targets (a key that names two rows) are returned too:
  -- run_change_chunk refuses them, saying why.
  if cardinality(v_done) >= jsonb_array_length(%1$I.targets) then
    return;
  end if;

  -- Fewer rows changed than targets: lock the rest in key order, then
  -- compare each with its target, naming the first that differs (the
  -- caller's statement, failing, undoes the rows already changed).
  with %2$s,
  locked as materialized (
    select %3$s
      from %4$s as r
     where %5$s
     order by %10$s
       for update of r
  )
  select s.problem into v_problem
    from (select t."?ordinal" as o,
                 %7$s as problem
            from t left join locked as l on %11$s
           where t."?ordinal" <> all (v_done)) as s
   where s.problem is not null
   order by s.o
   limit 1;
  if v_problem is not null then
    raise exception '%%', v_problem using errcode = 'CH409';
  end if;

  -- Every row left can take the change and is locked: each was changed by
  -- a concurrent transaction after the first statement's snapshot. The same
  -- statement again reads them afresh.%6$s
  if cardinality(v_done) < jsonb_array_length(%1$I.targets) then
    -- Every row left matched and was locked, yet the update did not
    -- change it: a BEFORE trigger skipped it (returned NULL), or a policy
    -- hid it from the update. Named, so it never passes silently.
    raise exception '%%', (with %2$s
                           select format('%%s: the row matches but the update did not change it (a trigger on the table skipped it, or a row security policy hides it from the writer %%s)',
                                         string_agg(%9$s, '; ' order by t."?ordinal"), current_user)
                             from t
                            where t."?ordinal" <> all (v_done))
      using errcode = 'CH409';
  end if;%12$s
end
$f$,
    v_fn, v_t,
    v_compared,
    v_table, change_key_any_sql(v_def, 'r', 'from t where t."?ordinal" <> all (v_done)'), v_apply,
    v_checks,
    writer_guard_sql(change_function_sql.writer, format('%I.job_id', v_fn)),
    change_key_words_sql(v_def, 't'), change_key_order_sql(v_def, 'r'), change_key_equal_sql(v_def, 'l', 't'),
    -- A row another table still references (ON DELETE RESTRICT or NO
    -- ACTION) is a conflict naming that table and the key, not a raw 23503.
    case when v_delete then $h$
exception when foreign_key_violation or restrict_violation then
  get stacked diagnostics v_problem = pg_exception_detail;
  raise exception '%', format('%s (a change that deletes leaves a row that another table references)', v_problem)
    using errcode = 'CH409';$h$ else '' end);
  return format($f$create or replace function {{ .schema }}.%I(job_id text, tenant text, first_ordinal integer, targets jsonb,
  out ordinals integer[], out keys text[], out versions_before bigint[], out versions_after bigint[], out befores jsonb[], out afters jsonb[])
language plpgsql volatile security definer
%s
set enable_seqscan = off
set enable_bitmapscan = off
set jit = off
as %L$f$, v_fn, writer_set_clauses(), v_sql);
end
$$;
comment on function {{ .schema }}.change_function_sql(jsonb, boolean, text) is
  'chunks helper: the CREATE FUNCTION text of the static function apply_<name> of a validated change DEFINITION (identifiers by %I, types by format_type, constants as typed literals), run as the writer role WRITER, returning the audit rows of what it changed as arrays, one element per row (ordinals, keys, versions_before, versions_after, befores, afters); with RESTORE, its inverse restore_<name>(job_id, tenant, first_ordinal, targets) that an undo runs (the after values expected, the before values set, version + 1).';
