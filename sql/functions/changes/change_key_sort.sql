-- The targets ITEMS of a declared change (each an object of its fields,
-- typed by change_target_list) in the key's order, compared as the key
-- columns' types compare (citext ignoring case, numeric by value), and the
-- first key given twice: DUPLICATE, the place (from 1) of its second
-- target, FIRST that of its first, WORDS the key in words ("email
-- ann@example.com"; "tenant_id 7, order_no 12") as the first one has it;
-- all three NULL when no key is twice. register_change (change_targets)
-- and campaign_create_change share it. DEFINITION was validated by
-- define_change.
create or replace function {{ .schema }}.change_key_sort(definition jsonb, items jsonb,
                                                         out sorted jsonb, out duplicate bigint, out first bigint, out words text)
language plpgsql stable
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_typed text;
  v_words text;
begin
  select string_agg(format('(x.o ->> %L)::%s', f.field, f.type), ', ' order by f.ord),
         format('concat_ws(%L, %s)', ', ', string_agg(format('%L || %L || (x.o ->> %L)', f.field, ' ', f.field), ', ' order by f.ord))
    into v_typed, v_words
    from change_fields(change_key_sort.definition) as f
   where f.role = 'key';
  -- One dynamic statement: the key's columns are named by %L and typed by
  -- format_type's text of their columns (change_fields), the items bound
  -- as $1; plpgsql_check cannot see that the text it formats is safe.
  -- @plpgsql_check_options: security_warnings = false
  execute format($q$
    select (select jsonb_agg(x.o order by %1$s) from jsonb_array_elements($1) as x(o)), d.ord, d.first_ord, d.words
      from (select) as one
      left join (select y.ord, y.first_ord, y.words
                   from (select x.ord, first_value(x.ord) over w as first_ord, first_value(%2$s) over w as words
                           from jsonb_array_elements($1) with ordinality as x(o, ord)
                         window w as (partition by %1$s order by x.ord)) as y
                  where y.ord <> y.first_ord
                  order by y.ord
                  limit 1) as d on true$q$, v_typed, v_words)
    into sorted, duplicate, first, words using change_key_sort.items;
end
$$;
comment on function {{ .schema }}.change_key_sort(jsonb, jsonb) is
  'chunks helper: the targets ITEMS of the declared change DEFINITION sorted by key (as the key columns'' types compare), and the first key given twice (the places of its second and first targets, and the key in words), for register_change and campaign_create_change.';
