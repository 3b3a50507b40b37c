-- The settings every function that the writer owns pins (writer_function_sql,
-- change_function_sql, change_check_sql): no schema but pg_catalog (and the
-- session's pg_temp last, which run_change_chunk and writer_run refuse to
-- hold anything), and the session settings a value's text depends on, so a
-- constant, a target and an audited value read and print the same in every
-- session (issue 35, item 8). run_change_chunk and writer_function_problem
-- compare a function's settings with these.
create or replace function {{ .schema }}.writer_config() returns text[]
language sql immutable parallel safe
as $$
  select array['search_path=pg_catalog, pg_temp', 'TimeZone=UTC', 'DateStyle=ISO, MDY', 'IntervalStyle=postgres',
               'extra_float_digits=3']
$$;
comment on function {{ .schema }}.writer_config() is
  'chunks helper: the settings (pg_proc.proconfig entries) that every function owned by the writer role pins: search_path pg_catalog then pg_temp, TimeZone UTC, DateStyle ISO, MDY, IntervalStyle postgres, extra_float_digits 3.';

-- writer_config() as the SET clauses of a CREATE FUNCTION (TestWriterConfig
-- checks that a function made with them has exactly writer_config()).
create or replace function {{ .schema }}.writer_set_clauses() returns text
language sql immutable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select string_agg('set ' || replace(c, '=', ' = ') , E'\n')
    from unnest(array['search_path=pg_catalog, pg_temp', 'TimeZone=''UTC''', 'DateStyle=''ISO, MDY''', 'IntervalStyle=postgres',
                      'extra_float_digits=3']) as c
$$;
comment on function {{ .schema }}.writer_set_clauses() is
  'chunks helper: writer_config() as the SET clauses of a CREATE FUNCTION, one a line.';

-- The first statement of every function the writer owns: it runs only as
-- the writer. Its owner could make it SECURITY INVOKER (ALTER FUNCTION needs
-- no more than ownership); then it would run as its caller, chunks' owner,
-- and this refuses. The operator is pg_catalog's, whatever search_path the
-- function was given.
create or replace function {{ .schema }}.writer_guard_sql(writer text, about text) returns text
language sql immutable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select format(E'\n  if current_user operator(pg_catalog.<>) %L::pg_catalog.name then\n    raise exception %L%s using errcode = %L;\n  end if;',
                writer_guard_sql.writer,
                'chunks: a function of the writer role ' || writer_guard_sql.writer || ' runs only as that role; it was altered (chunks migrate makes it again)'
                || case when writer_guard_sql.about is not null then ' (%)' else '' end,
                case when writer_guard_sql.about is not null then ', ' || writer_guard_sql.about else '' end,
                '42501')
$$;
comment on function {{ .schema }}.writer_guard_sql(text, text) is
  'chunks helper: the PL/pgSQL guard that opens every function owned by the writer role WRITER: 42501 unless current_user is WRITER (the function was made SECURITY INVOKER by its owner), naming ABOUT (a text expression, or NULL) in its message.';

-- An excerpt of the text expression EXPR, inline (the writer's functions
-- call nothing of chunks' schema, on which the writer has no right): as
-- excerpt(EXPR, false) says it.
create or replace function {{ .schema }}.excerpt_sql(expr text) returns text
language sql immutable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select format($e$(case when (%1$s) is null then 'null' when length(%1$s) <= 64 then (%1$s) else left(%1$s, 64) || '… (' || length(%1$s) || ' characters)' end)$e$,
                excerpt_sql.expr)
$$;
comment on function {{ .schema }}.excerpt_sql(text) is
  'chunks helper: SQL text of excerpt(EXPR, false) written out inline, for the functions the writer role owns.';

-- EXPR (SQL text of a value of column COL of table REL, as text), shown in
-- a conflict only to a session whose login role may SELECT that column
-- (session_user: the operator, whoever the function runs as): check and
-- run name what differs to anyone who may run them, and its value only to
-- who may read it (docs/roles.md "What an operator reads"). Evaluated only
-- when the conflict is.
create or replace function {{ .schema }}.shown_sql(rel text, col text, expr text) returns text
language sql immutable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select format('(case when pg_catalog.has_column_privilege(session_user, %L, %L, %L) then %s else %L end)',
                shown_sql.rel, shown_sql.col, 'SELECT', shown_sql.expr, '? (you may not SELECT ' || shown_sql.col || ')')
$$;
comment on function {{ .schema }}.shown_sql(text, text, text) is
  'chunks helper: SQL text of the value EXPR of column COL of table REL in a conflict message, or "? (you may not SELECT COL)" when the session''s login role may not read that column.';
