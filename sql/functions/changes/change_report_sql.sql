-- The statement that report_change, campaign_change_report and
-- register_change_undo run as the writer role (writer_run) for the declared
-- change DEFINITION: it reads the user's table, and nothing of chunks'.
-- $1 is a jsonb list of committed targets, each {"o": its place, "k": its
-- key, "a": the values its job wrote (change_audit.after), "v": the
-- version its job left (change_audit.version_after)}; $2 is NULL or
-- {"tenant": T}, the tenant the row must still belong to. It returns
-- [[o, status], ...]: missing when no row has the key; matching when the
-- row still has every value the job wrote and, with a version, the version
-- it left (and belongs to T), each compared as a value of its column's
-- type (never as text, which may depend on the session); drifted otherwise.
-- For an undo, whose audit's after is what the undone job found, matching
-- is the row as restored.
create or replace function {{ .schema }}.change_report_sql(definition jsonb) returns text
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_rel regclass := to_regclass(definition ->> 'table');
  v_keys text[] := change_key_columns(definition);
  v_written text[];
begin
  v_written := change_written(definition);
  return format($q$
    select coalesce(jsonb_agg(jsonb_build_array(x.o, case when r.%1$I is null then 'missing'
                                                          when %2$s %3$s %4$s then 'matching'
                                                          else 'drifted' end)), '[]')
      from jsonb_to_recordset($1) as x(o integer, k jsonb, a jsonb, v bigint)
      left join %5$s as r on %6$s$q$,
    v_keys[1],
    (select string_agg(format('r.%I is not distinct from %s', c, typed_field_sql('x.a', c, change_column_type(v_rel, c))), ' and ')
       from unnest(v_written) as c),
    case when definition ? 'version' then format('and r.%I = x.v', definition ->> 'version') else '' end,
    case when definition ? 'tenant' then format('and ($2 is null or r.%I::text = $2 ->> %L)', definition ->> 'tenant', 'tenant') else '' end,
    v_rel,
    -- Each key column as a value of its type: the key itself, or its field.
    (select string_agg(format('r.%I %s (x.k #>> %L)::%s', c, key_column_equality_sql(definition, c),
                              case when jsonb_typeof(definition -> 'key') = 'array' then array[c] else '{}'::text[] end,
                              change_column_type(v_rel, c)), ' and ' order by o)
       from unnest(v_keys) with ordinality as u(c, o)));
end
$$;
comment on function {{ .schema }}.change_report_sql(jsonb) is
  'chunks helper (report_change, campaign_change_report, register_change_undo): the statement, run as the writer role, that gives the status (matching, drifted or missing) of committed targets of jobs of the declared change DEFINITION ($1: [{o, k, a, v}], $2: NULL or {"tenant"}), comparing typed values.';

-- The committed targets of jobs as change_report_sql takes them ($1): each
-- job's targets[0:next_index] with the after values and version its audit
-- holds, "o" numbering them across JOB_IDS in their order, "s" the job's
-- place in JOB_IDS and "x" the target's in its job (both from 1).
create or replace function {{ .schema }}.change_report_input(job_ids text[]) returns jsonb
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select coalesce(jsonb_agg(jsonb_build_object('o', a.n, 's', a.seq, 'x', a.ord, 'k', a.k, 'a', a.after, 'v', a.version_after) order by a.n), '[]')
    from (select row_number() over (order by p.seq, x.ord) as n, p.seq, x.ord, change_key_of(jc.definition, x.e) as k, au.after, au.version_after
            from unnest(change_report_input.job_ids) with ordinality as p(job_id, seq)
            join jobs as j on j.job_id = p.job_id
            join job_change as c on c.job_id = j.job_id
            join changes as jc on jc.name = c.change
           cross join lateral jsonb_array_elements(j.targets) with ordinality as x(e, ord)
            join change_audit as au on au.job_id = j.job_id and au.ordinal = x.ord - 1
           where x.ord <= j.next_index) as a
$$;
comment on function {{ .schema }}.change_report_input(text[]) is
  'chunks helper: the committed targets of the jobs JOB_IDS (of one declared change) with their audit''s after values and version, numbered "o" in the jobs'' order then the targets'', as change_report_sql reads them.';
