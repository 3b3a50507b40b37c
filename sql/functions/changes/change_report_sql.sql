-- report's rules, in one statement for every change: the status of the
-- committed targets of jobs of the change DEFINITION, by their audit.
-- A committed target is matching when its row is as its job left it:
-- every value the job wrote, the version it left, each expect column's
-- approved value (those the change does not write, where the target has
-- one: an undo's targets of a declared change have none) and the job's
-- tenant, each compared as a value of its column's type (never as text,
-- which may depend on the session); missing when no row has its key;
-- drifted otherwise. For an undo, whose written values are what the undone
-- job found, matching is the row as restored.
--
-- The statement returns {"matching": how many, "off": [[s, x, status,
-- key], ...]}, the targets that are not matching, s the job's place in the
-- list of jobs (from 1), x the target's in its job (from 1), in that
-- order, and the key as the audit row names it.
-- It reads the table of DEFINITION and, by its audit target, either:
-- - change_audit (a user's table): $1 is change_report_input(jobs), made by
--   chunks' owner, and the statement runs as the writer role, which may
--   not read chunks' schema (change_status);
-- - job_audit (orders_change, chunks' own orders): $1 is the list of job
--   ids, and the statement, run as chunks' owner, reads the jobs and their
--   audit rows itself (no list of every target in between: a campaign of
--   100,000 targets is read in one pass); job_audit keeps the key (id), the
--   expect column (qty) and the version left (new_revision), and what a
--   job wrote is its change's constants: set, or for an undo the when it
--   restores.
create or replace function {{ .schema }}.change_report_sql(definition jsonb) returns text
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_rel regclass := to_regclass(definition ->> 'table');
  v_keys text[] := change_key_columns(definition);
  v_written text[] := change_written(definition);
  v_expect text[] := array(select c from jsonb_array_elements_text(coalesce(definition -> 'expect', '[]')) as c
                            where c <> all (change_written(definition)));
  v_source text;
  v_match text;
begin
  if definition ->> 'audit' = 'job_audit' then
    v_source := format($s$
        select p.seq::integer as s, a.ordinal + 1 as x, j.tenant as n, a.new_revision::bigint as v, %s
          from jsonb_array_elements_text($1) with ordinality as p(job_id, seq)
          join jobs as j on j.job_id = p.job_id
          left join job_kind as k on k.job_id = j.job_id
          join job_audit as a on a.job_id = j.job_id$s$,
      (select string_agg(e, ', ')
         from (select format('a.%I as %I', c, 'k.' || c) as e from unnest(v_keys) as c
               union all
               select format('a.%I as %I, true as %I', c, 'e.' || c, 'e?' || c) from unnest(v_expect) as c
               union all
               select format('case when k.kind = %L then %L::%s else %L::%s end as %I', 'restore',
                             definition -> 'when' ->> c, change_column_type(v_rel, c),
                             definition -> 'set' ->> c, change_column_type(v_rel, c), 'w.' || c)
                 from unnest(v_written) as c) as l));
  else
    -- The facts come as arrays, one per column (change_report_input),
    -- unnested side by side: a value as text (its JSON value's text; JSON
    -- itself for a json or jsonb column), cast here to its column's type.
    -- (a change that deletes: also "img", each row's image as its undo put it back)
    select format($s$
        select i.s, i.x, i.n, i.v, i.u,%5$s %1$s
          from jsonb_to_record($1) as a(s integer[], x integer[], n text[], v bigint[], u boolean[],%6$s %2$s)
         cross join lateral unnest(a.s, a.x, a.n, a.v, a.u,%7$s %3$s) as i(s, x, n, v, u,%8$s %4$s)$s$,
             string_agg(format('(i.%I)::%s as %I', r.name, r.type, r.name)
                        || case when r.part = 'e' then format(', i.%I', 'e?' || r.col) else '' end, ', ' order by r.o),
             string_agg(format('%I %s[]', r.name, r.carrier)
                        || case when r.part = 'e' then format(', %I boolean[]', 'e?' || r.col) else '' end, ', ' order by r.o),
             string_agg(format('a.%I', r.name) || case when r.part = 'e' then format(', a.%I', 'e?' || r.col) else '' end,
                        ', ' order by r.o),
             string_agg(format('%I', r.name) || case when r.part = 'e' then format(', %I', 'e?' || r.col) else '' end,
                        ', ' order by r.o),
             case when definition ? 'delete' then ' i.img,' else '' end, case when definition ? 'delete' then ' img jsonb[],' else '' end,
             case when definition ? 'delete' then ' a.img,' else '' end, case when definition ? 'delete' then ' img,' else '' end)
      into v_source
      from change_report_columns(definition) as r;
  end if;
  -- The row is as its job left it: each check, typed.
  v_match := (select coalesce(string_agg(E'\n                                  and ' || t, ''), '')
       from (select format('not %s', column_distinct_sql(definition, c, format('r.%I', c), format('x.%I', 'w.' || c))) as t
               from unnest(v_written) as c
             union all
             select format('(not x.%I or not %s)', 'e?' || c, column_distinct_sql(definition, c, format('r.%I', c), format('x.%I', 'e.' || c)))
               from unnest(v_expect) as c
             union all
             select format('r.%I = x.v', definition ->> 'version') where definition ? 'version'
             union all
             select format('r.%I::text = x.n', definition ->> 'tenant') where definition ? 'tenant') as w);
  return format($q$
    select jsonb_build_object(
             'matching', count(*) filter (where m.ok),
             'off', coalesce(jsonb_agg(jsonb_build_array(x.s, x.x, case when r.%1$I is null then 'missing' else 'drifted' end, %6$s)
                                       order by x.s, x.x) filter (where not m.ok), '[]'))
      from (%2$s) as x
      left join %3$s as r on %4$s
     cross join lateral (select %7$s as ok) as m$q$,
    v_keys[1], v_source, v_rel,
    (select string_agg(format('r.%I %s x.%I', c, key_column_equality_sql(definition, c), 'k.' || c), ' and ' order by o)
       from unnest(v_keys) with ordinality as u(c, o)),
    v_match,
    -- the key as its audit row names it (change_key_of's shape)
    case when jsonb_typeof(definition -> 'key') = 'array'
         then format('jsonb_build_object(%s)', (select string_agg(format('%L, x.%I', c, 'k.' || c), ', ' order by o)
                                                  from unnest(v_keys) with ordinality as u(c, o)))
         else format('to_jsonb(x.%I)', 'k.' || v_keys[1]) end,
    -- A change that deletes: its target is matching while no row has its
    -- key (a row with it again is drifted); its undo's (x.u), while the
    -- row put back is there, as the undo left it.
    case when definition ? 'delete' then format('case when x.u then r.%1$I is not null and to_jsonb(r) = x.img else r.%1$I is null end', v_keys[1])
         else format('r.%I is not null%s', v_keys[1], v_match) end);
end
$$;
comment on function {{ .schema }}.change_report_sql(jsonb) is
  'chunks helper (change_status): the statement that gives the status of the committed targets of jobs of the change DEFINITION by their audit ({"matching": n, "off": [[s, x, status, key]]}: drifted or missing), comparing typed values; $1 is change_report_input(jobs) for a user''s table (run as the writer role), the job ids for orders (job_audit).';

-- The columns of change_report_sql's facts for a declared change's jobs
-- (DEFINITION): PART k each key column, e each expect column the change
-- does not write (with "e?COL": whether the target has it), w each column
-- it writes; NAME the fact's name (PART.COL), TYPE the column's type, and
-- CARRIER the array type that carries it: jsonb for a json or jsonb
-- column (a JSON string stays one), text otherwise.
create or replace function {{ .schema }}.change_report_columns(definition jsonb)
returns table(part text, col text, name text, type text, carrier text, o bigint)
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select c.part, c.col, c.part || '.' || c.col, format_type(a.atttypid, a.atttypmod),
         case when b.base_id in ('json'::regtype, 'jsonb'::regtype) then 'jsonb' else 'text' end,
         row_number() over (order by c.o)
    from (select 'k' as part, k as col, o from unnest(change_key_columns(definition)) with ordinality as x(k, o)
          union all
          select 'e', e, 1000 + o from jsonb_array_elements_text(coalesce(definition -> 'expect', '[]')) with ordinality as x(e, o)
           where e <> all (change_written(definition))
          union all
          select 'w', w, 2000 + o from unnest(change_written(definition)) with ordinality as x(w, o)) as c
    join pg_attribute as a on a.attrelid = to_regclass(definition ->> 'table') and a.attname = c.col
   cross join lateral base_type(a.atttypid, a.atttypmod) as b
$$;
comment on function {{ .schema }}.change_report_columns(jsonb) is
  'chunks helper: the per-column facts change_report_sql reads for a declared change DEFINITION (key, unwritten expect and written columns), each with its name, type and carrier (jsonb or text).';

-- The committed targets of the jobs JOB_IDS of the declared change
-- DEFINITION as change_report_sql takes them ($1), from their audit
-- (change_audit): one array per fact, all in one order: "s" the job's
-- place in JOB_IDS and "x" the target's in its job (both from 1), "n" its
-- job's tenant, "v" the version it left, and change_report_columns': each
-- key column's value and each expect column's (from the target), and each
-- value the job wrote (from the audit's after image). Arrays, not one
-- object a target: 1,000,000 committed targets are a few arrays to build
-- and to read back.
drop function if exists {{ .schema }}.change_report_input(text[]);
create or replace function {{ .schema }}.change_report_input(definition jsonb, job_ids text[]) returns jsonb
language plpgsql stable
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_result jsonb;
begin
  -- (chunks' functions build the statement: names by %L; the job ids are bound)
  -- @plpgsql_check_options: security_warnings = false
  execute format($q$
    select jsonb_build_object('s', coalesce(to_jsonb(array_agg(p.seq)), '[]'), 'x', coalesce(to_jsonb(array_agg(au.ordinal + 1)), '[]'),
                              'n', coalesce(to_jsonb(array_agg(j.tenant)), '[]'), 'v', coalesce(to_jsonb(array_agg(au.version_after)), '[]'),
                              'u', coalesce(to_jsonb(array_agg(coalesce(k.kind, '') = 'restore')), '[]'))
           || %s
           || jsonb_build_object(%s)
      from unnest($1) with ordinality as p(job_id, seq)
      join jobs as j on j.job_id = p.job_id
      left join job_kind as k on k.job_id = j.job_id
      -- (a declared change's targets are rows: joined with the audit by
      -- ordinal as two tables, not target by target)
      join change_targets as ct on ct.job_id = j.job_id
      join change_audit as au on au.job_id = ct.job_id and au.ordinal = ct.ordinal$q$,
    -- a change that deletes: each row's image (its undo's: as put back)
    case when change_report_input.definition ? 'delete' then $i$jsonb_build_object('img', coalesce(to_jsonb(array_agg(au.after)), '[]'))$i$
         else $i$'{}'::jsonb$i$ end,
    (select string_agg(format('%L, coalesce(to_jsonb(array_agg(%s %s %L)), ''[]'')', r.name,
                              case r.part when 'w' then 'au.after' else 'ct.target' end,
                              case r.carrier when 'jsonb' then '->' else '->>' end, r.col)
                       || case when r.part = 'e' then format(', %L, coalesce(to_jsonb(array_agg(ct.target ? %L)), ''[]'')', 'e?' || r.col, r.col)
                               else '' end, ', ' order by r.o)
       from change_report_columns(change_report_input.definition) as r))
    into v_result using change_report_input.job_ids;
  return v_result;
end
$$;
comment on function {{ .schema }}.change_report_input(jsonb, text[]) is
  'chunks helper: the committed targets of the jobs JOB_IDS of the declared change DEFINITION, from their audit (change_audit), as change_report_sql reads them: one array per fact (s, x, n, v, and change_report_columns'').';

-- change_report_sql's answer for the jobs JOB_IDS of the change
-- DEFINITION: a user's table read as the writer role (writer_run), with
-- the audit's facts handed over (change_report_input); orders read as
-- chunks' owner, by the job ids (only chunks' owner can put code on
-- orders, and the writer may not read it).
create or replace function {{ .schema }}.change_status(definition jsonb, job_ids text[]) returns jsonb
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_result jsonb;
begin
  if change_status.definition ->> 'audit' = 'job_audit' then
    -- As writer_exec: chunks' functions build the statement (identifiers
    -- by %I, values bound), and plpgsql_check checks them.
    -- @plpgsql_check_options: security_warnings = false
    execute change_report_sql(change_status.definition) into v_result using to_jsonb(change_status.job_ids);
    return v_result;
  end if;
  return writer_run(change_report_sql(change_status.definition), change_report_input(change_status.definition, change_status.job_ids), null);
end
$$;
comment on function {{ .schema }}.change_status(jsonb, text[]) is
  'chunks helper: change_report_sql''s {"matching", "off": [[s, x, status, key]]} for the jobs JOB_IDS of the change DEFINITION: a user''s table read as the writer role, orders as chunks'' owner.';
