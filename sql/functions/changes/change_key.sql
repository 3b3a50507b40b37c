-- A declared change's key (README "Your own tables"): "key" is one column
-- or a list of columns (a composite key). These helpers are the one place
-- that knows its two shapes. A one-column key's value is the column's
-- value as JSON (a number for an integer key, else a string); a list's is
-- an object of its columns ({"tenant_id": 7, "order_no": 12}). The text a
-- key is kept as (change_audit.key) is that JSON value's text: the
-- string's own text, or the object's. DEFINITION was validated by
-- define_change.

-- The key's columns, in the definition's order.
create or replace function {{ .schema }}.change_key_columns(definition jsonb) returns text[]
language sql immutable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select case jsonb_typeof(definition -> 'key')
           when 'array' then array(select c from jsonb_array_elements_text(definition -> 'key') with ordinality as x(c, o) order by o)
           else array[definition ->> 'key'] end
$$;
comment on function {{ .schema }}.change_key_columns(jsonb) is
  'chunks helper: the key columns of the declared change DEFINITION ("key": a column, or a list of them), in order.';

-- The key of TARGET (an object of a target's fields) as JSON.
create or replace function {{ .schema }}.change_key_of(definition jsonb, target jsonb) returns jsonb
language sql immutable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select case jsonb_typeof(definition -> 'key')
           when 'array' then (select jsonb_object_agg(c, target -> c) from jsonb_array_elements_text(definition -> 'key') as c)
           else target -> (definition ->> 'key') end
$$;
comment on function {{ .schema }}.change_key_of(jsonb, jsonb) is
  'chunks helper: the key of the target TARGET of the declared change DEFINITION as JSON: the column''s value, or an object of the key''s columns.';

-- The key of TARGET as change_audit keeps it.
create or replace function {{ .schema }}.change_key_text(definition jsonb, target jsonb) returns text
language sql immutable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select case jsonb_typeof(definition -> 'key')
           when 'array' then (select jsonb_object_agg(c, target -> c) from jsonb_array_elements_text(definition -> 'key') as c)::text
           else target ->> (definition ->> 'key') end
$$;
comment on function {{ .schema }}.change_key_text(jsonb, jsonb) is
  'chunks helper: the key of the target TARGET of the declared change DEFINITION as change_audit keeps it: the value''s text, or the object''s.';

-- SQL text of the key of the row or target ALIAS (typed columns) as JSON,
-- and as the text change_audit keeps (to_jsonb: the same text as the
-- stored targets' values, whatever the session prints).
create or replace function {{ .schema }}.change_key_sql(definition jsonb, alias text, out as_json text, out as_text text)
language sql immutable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select case jsonb_typeof(definition -> 'key')
           when 'array' then format('jsonb_build_object(%s)', (select string_agg(format('%L, %s.%I', c, alias, c), ', ' order by o)
                                                             from jsonb_array_elements_text(definition -> 'key') with ordinality as x(c, o)))
           else format('to_jsonb(%s.%I)', alias, definition ->> 'key') end,
         case jsonb_typeof(definition -> 'key')
           when 'array' then format('jsonb_build_object(%s)::text', (select string_agg(format('%L, %s.%I', c, alias, c), ', ' order by o)
                                                                   from jsonb_array_elements_text(definition -> 'key') with ordinality as x(c, o)))
           else format('(to_jsonb(%s.%I) #>> %L)', alias, definition ->> 'key', '{}') end
$$;
comment on function {{ .schema }}.change_key_sql(jsonb, text) is
  'chunks helper: SQL text of the key of ALIAS (a row or typed target) of the declared change DEFINITION, as JSON and as change_audit''s text.';

-- SQL text naming the key of ALIAS in a message: "id 3", or for a
-- composite key "tenant_id 7, order_no 12" (each value as its type prints).
-- The contract's cancellation (orders_change(), "words": "order") names an
-- order as order_problem does: "order 3".
create or replace function {{ .schema }}.change_key_words_sql(definition jsonb, alias text) returns text
language sql immutable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select case when definition ->> 'words' = 'order'
              then format('format(%L, %s.%I)', 'order %s', alias, (change_key_columns(definition))[1])
              else (select format('format(%L, %s)', string_agg('%s %s', ', ' order by o), string_agg(format('%L, %s.%I', c, alias, c), ', ' order by o))
                      from unnest(change_key_columns(definition)) with ordinality as x(c, o)) end
$$;
comment on function {{ .schema }}.change_key_words_sql(jsonb, text) is
  'chunks helper: SQL text naming the key of ALIAS of the declared change DEFINITION in a message ("id 3"; "tenant_id 7, order_no 12"; the contract''s "order 3" for orders_change()).';

-- SQL text: A's key equals B's ("a.k = b.k", column by column).
create or replace function {{ .schema }}.change_key_equal_sql(definition jsonb, a text, b text) returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select string_agg(format('%1$s.%3$I %4$s %2$s.%3$I', a, b, c, key_column_equality_sql(definition, c)), ' and ' order by o)
    from unnest(change_key_columns(definition)) with ordinality as x(c, o)
$$;
comment on function {{ .schema }}.change_key_equal_sql(jsonb, text, text) is
  'chunks helper: SQL text comparing the keys of A and B of the declared change DEFINITION, column by column.';

-- SQL text: the row R's key is among those of the targets of FROM_T (a
-- FROM and WHERE over t), "r.k = any (array(select t.k from ...))" for each
-- key column: an index condition for any number of targets (a join, which
-- the planner guesses at 100 rows, was planned as a scan of the table).
-- For a composite key it is each column's, a superset the caller narrows
-- with change_key_equal_sql.
create or replace function {{ .schema }}.change_key_any_sql(definition jsonb, r text, from_t text) returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select string_agg(format('%1$s.%2$I %4$s any (array(select t.%2$I %3$s))', r, c, from_t, key_column_equality_sql(definition, c)), ' and ' order by o)
    from unnest(change_key_columns(definition)) with ordinality as x(c, o)
$$;
comment on function {{ .schema }}.change_key_any_sql(jsonb, text, text) is
  'chunks helper: SQL text of the index condition "the row R''s key columns are among the targets'' (FROM_T)", one = ANY per key column.';

-- SQL text: ALIAS's key columns, for an ORDER BY in key order.
create or replace function {{ .schema }}.change_key_order_sql(definition jsonb, alias text) returns text
language sql immutable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select string_agg(format('%s.%I', alias, c), ', ' order by o)
    from unnest(change_key_columns(definition)) with ordinality as x(c, o)
$$;
comment on function {{ .schema }}.change_key_order_sql(jsonb, text) is
  'chunks helper: SQL text of the key columns of ALIAS of the declared change DEFINITION, for an ORDER BY.';
