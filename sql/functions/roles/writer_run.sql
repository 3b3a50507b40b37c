-- Runs STATEMENT as the writer role, with $1 = A and $2 = B, and returns
-- its one jsonb value: every read of a user's table, and every cast to one
-- of its columns' types (a domain's check is code its owner wrote), that a
-- function of chunks makes outside a chunk (define, register, check,
-- report, undo). STATEMENT is built by chunks' functions (identifiers by
-- %I, values bound) and must not name anything of chunks' schema: the
-- writer may not read it. Refuses while the session holds temporary
-- objects (they could stand in for what the code on the table reads).
create or replace function {{ .schema }}.writer_run(statement text, a jsonb, b jsonb) returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_problem text;
  v_result jsonb;
begin
  v_problem := coalesce((select t from temp_objects_problem() as t),
                        (select f from writer_function_problem('{{ .schema }}.writer_exec(text, jsonb, jsonb)') as f));
  if v_problem is not null then
    raise exception 'chunks cannot read the user''s table: %', v_problem using errcode = 'CH409';
  end if;
  v_result := writer_exec(writer_run.statement, writer_run.a, writer_run.b);
  return v_result;
end
$$;
comment on function {{ .schema }}.writer_run(text, jsonb, jsonb) is
  'chunks helper: STATEMENT (one jsonb value; $1 A, $2 B) run as the writer role through writer_exec, after checking that writer_exec is as chunks made it and that the session holds no temporary object; CH409 otherwise.';

-- Why this session must not run code on a user's table, or NULL: it holds
-- temporary tables, views or types, which an unqualified name in a trigger
-- or policy would find (pg_temp is searched for relations and types
-- whatever search_path says). chunks' own statements never need any.
-- A set-returning SQL function of one row at most, with no SET clause and
-- each name qualified, so that the planner inlines it into the FROM of its
-- caller. run_chunk asks it only in a session that has a temporary schema
-- (pg_my_temp_schema() <> 0); writer_run and check always.
create or replace function {{ .schema }}.temp_objects_problem() returns setof text
language sql stable
as $$
  select format('this session has temporary objects (%s); code on the table (a trigger, a policy) could read them instead of the tables it means, so run chunks from a session without any (DISCARD TEMP)',
                string_agg(x.name, ', ' order by x.name))
    from (select c.relname::text as name from pg_catalog.pg_class as c
           where pg_my_temp_schema() <> 0 and c.relnamespace = pg_my_temp_schema()
          union all
          select t.typname::text from pg_catalog.pg_type as t
           where pg_my_temp_schema() <> 0 and t.typnamespace = pg_my_temp_schema() and t.typrelid = 0 and t.typelem = 0) as x
  having count(*) > 0
$$;
comment on function {{ .schema }}.temp_objects_problem() is
  'chunks helper: why this session may not run code on a user''s table (it holds temporary relations or types, named): one row, or none. Inlined into its caller''s FROM.';

-- The text of writer_exec, the writer's one dynamic function (writer_run
-- calls it): STATEMENT with $1 A and $2 B, as the writer WRITER.
create or replace function {{ .schema }}.writer_exec_sql(writer text) returns text
language sql immutable
set search_path = {{ .schema }}, pg_temp
as $$
  select format($f$create or replace function {{ .schema }}.writer_exec(statement text, a jsonb, b jsonb) returns jsonb
language plpgsql volatile security definer
%s
as %L$f$, writer_set_clauses(), format($b$
declare
  v_result jsonb;
begin%s
  -- The one dynamic statement of the writer, by design: its callers build
  -- it (identifiers by %%I, values bound as $1 and $2), and plpgsql_check
  -- checks them; this function only runs it as the writer.
  -- @plpgsql_check_options: security_warnings = false
  execute statement into v_result using a, b;
  return v_result;
end
$b$, writer_guard_sql(writer_exec_sql.writer, null)))
$$;
comment on function {{ .schema }}.writer_exec_sql(text) is
  'chunks helper: the CREATE FUNCTION text of writer_exec(statement, a, b), the dynamic statement runner owned by the writer role WRITER (writer_run calls it).';
