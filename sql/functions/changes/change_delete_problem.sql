-- What a change that deletes (DEFINITION has "delete": true) needs of its
-- table and archive, beside what every change needs (change_table_problem):
-- no foreign key that would change another table's rows with no audit
-- (ON DELETE CASCADE, SET NULL or SET DEFAULT; RESTRICT and NO ACTION are
-- refused by the chunk, in a conflict naming the child); and an archive,
-- when named, that is an ordinary table of the same owner, outside the
-- system and chunks' schemas, with exactly the table's columns by name
-- and type. NULL when all holds, else the problem in words, naming the
-- field. Asked at define and again wherever change_table_problem is.
create or replace function {{ .schema }}.change_delete_problem(definition jsonb) returns text
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_rel regclass := to_regclass(change_delete_problem.definition ->> 'table');
  v_ident text[];
  v_archive oid;
  v_kind "char";
  v_nsp text;
  v_problem text;
begin
  -- cascade: the children the definition accepts, each a table whose
  -- foreign key to this one is ON DELETE CASCADE (their deleted rows are
  -- audited with their parent's, and put back by its undo), itself with
  -- no such child.
  if change_delete_problem.definition ? 'cascade' then
    if jsonb_typeof(change_delete_problem.definition -> 'cascade') <> 'array' or jsonb_array_length(change_delete_problem.definition -> 'cascade') = 0
       or exists (select from jsonb_array_elements(change_delete_problem.definition -> 'cascade') as e where jsonb_typeof(e) <> 'string') then
      return format('cascade: must be a non-empty list of the child tables (schema.table) whose rows a delete cascades to, got %s',
                    excerpt((change_delete_problem.definition -> 'cascade')::text, false));
    end if;
    select format('cascade: %s', case when to_regclass(e) is null then format('there is no table %s', excerpt(e, true))
                                      else format('%s has no foreign key to %s ON DELETE CASCADE', to_regclass(e), v_rel) end)
      into v_problem
      from jsonb_array_elements_text(change_delete_problem.definition -> 'cascade') as e
     where to_regclass(e) is null
        or not exists (select from pg_constraint as c where c.contype = 'f' and c.confrelid = v_rel and c.conrelid = to_regclass(e) and c.confdeltype = 'c')
     limit 1;
    if v_problem is not null then
      return v_problem;
    end if;
  end if;
  select format('table: %s is referenced by %s (foreign key %s, ON DELETE %s): deleting a row would %s with no audit; a change that deletes refuses such a table%s',
                c.confrelid::regclass, c.conrelid::regclass, quote_ident(c.conname),
                case c.confdeltype when 'c' then 'CASCADE' when 'n' then 'SET NULL' else 'SET DEFAULT' end,
                case c.confdeltype when 'c' then 'delete its rows there' else 'change its rows there' end,
                case when c.confdeltype = 'c' and c.confrelid = v_rel then format(' (or name it in cascade: ["%s"], to audit them too)', c.conrelid::regclass) else '' end)
    into v_problem
    from pg_constraint as c
   where c.contype = 'f' and c.confdeltype in ('c', 'n', 'd')
     and (c.confrelid = v_rel and not (c.confdeltype = 'c' and c.conrelid = any (change_cascade(change_delete_problem.definition)::oid[]))
          or c.confrelid = any (change_cascade(change_delete_problem.definition)::oid[]))
   order by c.confrelid = v_rel desc, c.conrelid::regclass::text, c.conname
   limit 1;
  if v_problem is not null or not change_delete_problem.definition ? 'archive' then
    return v_problem;
  end if;
  if jsonb_typeof(change_delete_problem.definition -> 'archive') <> 'string' then
    return format('archive: must be schema.table, got %s', jsonb_typeof(change_delete_problem.definition -> 'archive'));
  end if;
  begin
    v_ident := parse_ident(change_delete_problem.definition ->> 'archive');
  exception when others then
    v_ident := null;
  end;
  if cardinality(v_ident) is distinct from 2 then
    return format('archive: must be schema.table, got %s', excerpt(change_delete_problem.definition ->> 'archive', true));
  end if;
  select c.oid, c.relkind, n.nspname into v_archive, v_kind, v_nsp
    from pg_class as c join pg_namespace as n on n.oid = c.relnamespace
   where n.nspname = v_ident[1] and c.relname = v_ident[2];
  if v_archive is null then
    return format('archive: there is no table %s', excerpt(change_delete_problem.definition ->> 'archive', true));
  end if;
  if v_kind not in ('r', 'p') or v_nsp in ('pg_catalog', 'information_schema', '{{ .schema }}') or v_archive = v_rel then
    return format('archive: %s must be an ordinary table of yours, other than the change''s table', v_archive::regclass);
  end if;
  if (select c.relowner from pg_class as c where c.oid = v_archive) <> (select c.relowner from pg_class as c where c.oid = v_rel) then
    return format('archive: %s is owned by %s, %s by %s: the writer serves the tables of one owner', v_archive::regclass,
                  (select c.relowner::regrole from pg_class as c where c.oid = v_archive), v_rel,
                  (select c.relowner::regrole from pg_class as c where c.oid = v_rel));
  end if;
  -- Exactly the table's columns, by name and type (a generated column of
  -- the table is a plain one there: create table ... (like TABLE)).
  select format('archive: %s', coalesce(
           case when t.attname is null then format('%s has column %s, which %s has not', v_archive::regclass, quote_ident(a.attname), v_rel)
                when a.attname is null then format('%s has no column %s (%s)', v_archive::regclass, quote_ident(t.attname), t.type)
                when a.type <> t.type then format('column %s of %s is %s, of %s %s', quote_ident(t.attname), v_archive::regclass, a.type, v_rel, t.type)
                when a.generated then format('column %s of %s is generated', quote_ident(a.attname), v_archive::regclass) end, ''))
    into v_problem
    from (select x.attname, format_type(x.atttypid, x.atttypmod) as type from pg_attribute as x
           where x.attrelid = v_rel and x.attnum > 0 and not x.attisdropped) as t
    full join (select x.attname, format_type(x.atttypid, x.atttypmod) as type, x.attgenerated <> '' as generated from pg_attribute as x
                where x.attrelid = v_archive and x.attnum > 0 and not x.attisdropped) as a on a.attname = t.attname
   where t.attname is null or a.attname is null or a.type <> t.type or a.generated
   order by coalesce(t.attname, a.attname)
   limit 1;
  return v_problem;
end
$$;
comment on function {{ .schema }}.change_delete_problem(jsonb) is
  'chunks helper: why the declared change DEFINITION, which deletes, cannot run on its table and archive (a foreign key ON DELETE CASCADE from a table not in cascade, SET NULL or SET DEFAULT to the table, or any of them to a cascade child; an archive that is missing, not an ordinary table of the same owner, or without exactly the table''s columns by name and type), or NULL.';

-- What a change that deletes (DEFINITION) would do slowly, or NULL: a
-- child whose foreign key columns to the table lead no index (each deleted
-- row's RESTRICT check or CASCADE scans it), an archive whose key columns
-- lead none (the undo takes each row out of it by key). define_change says
-- so in a notice; nothing is refused.
create or replace function {{ .schema }}.change_delete_notice(definition jsonb) returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select 'chunks: no index leads with ' || string_agg(x.what, '; ' order by x.what)
         || ': each deleted row (or its undo) scans that table (create index on ... (those columns))'
    from (select format('%s (%s), the foreign key %s', c.conrelid::regclass,
                        (select string_agg(quote_ident(a.attname), ', ' order by u.n) from unnest(c.conkey) with ordinality as u(k, n)
                           join pg_attribute as a on a.attrelid = c.conrelid and a.attnum = u.k), quote_ident(c.conname)) as what
            from pg_constraint as c
           where c.contype = 'f' and c.confrelid = to_regclass(change_delete_notice.definition ->> 'table')
             and not exists (select from pg_index as i where i.indrelid = c.conrelid and (i.indkey::int2[])[0:cardinality(c.conkey) - 1] @> c.conkey
                                                          and c.conkey @> (i.indkey::int2[])[0:cardinality(c.conkey) - 1])
          union all
          select format('%s (%s), the archive', to_regclass(change_delete_notice.definition ->> 'archive'),
                        (select string_agg(quote_ident(k), ', ') from unnest(change_key_columns(change_delete_notice.definition)) as k))
           where to_regclass(change_delete_notice.definition ->> 'archive') is not null
             and not exists (select from pg_index as i
                              where i.indrelid = to_regclass(change_delete_notice.definition ->> 'archive')
                                and (select a.attname from pg_attribute as a where a.attrelid = i.indrelid and a.attnum = i.indkey[0])
                                    = (change_key_columns(change_delete_notice.definition))[1])) as x
  having count(*) > 0
$$;
comment on function {{ .schema }}.change_delete_notice(jsonb) is
  'chunks helper (define_change): a notice naming the children of a change that deletes whose foreign key columns lead no index, and an archive whose key leads none, or NULL.';
