-- Why the declared change DEFINITION cannot run on its table as it is now,
-- or NULL: define_change asks it before recording a change, every install
-- before making its functions again, and register before approving a job
-- (a definition never moves, but the table may: a column renamed or
-- dropped, the key's unique index dropped, inheritance children added, a
-- grant taken back). WRITER is the role that reads and writes the table.
create or replace function {{ .schema }}.change_table_problem(definition jsonb, writer regrole) returns text
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_def jsonb := change_table_problem.definition;
  v_rel regclass := to_regclass(v_def ->> 'table');
  v_kind "char";
  v_nsp text;
  v_owner regrole;
  v_col text;
  v_written text[];
begin
  if v_rel is null then
    return format('table %s no longer exists', v_def ->> 'table');
  end if;
  select c.relkind, n.nspname, c.relowner::regrole into v_kind, v_nsp, v_owner
    from pg_class as c join pg_namespace as n on n.oid = c.relnamespace where c.oid = v_rel;
  if v_kind not in ('r', 'p') then
    return format('%s is no longer a table', v_rel);
  end if;
  if to_regprocedure(format('%I.installed_version()', v_nsp)) is not null or to_regprocedure(format('%I.shard_of(text)', v_nsp)) is not null then
    return format('%s is in schema %s, where chunks is installed: declare changes of your own tables', v_rel, v_nsp);
  end if;
  v_written := change_written(v_def);
  for v_col in
    select c from unnest(change_key_columns(v_def) || array[v_def ->> 'tenant', v_def ->> 'version']
                         || array(select jsonb_array_elements_text(coalesce(v_def -> 'expect', '[]')))
                         || array(select jsonb_object_keys(coalesce(v_def -> 'when', '{}')))
                         || v_written) as c
     where c is not null
  loop
    if not exists (select from pg_attribute as a where a.attrelid = v_rel and a.attname = v_col and a.attnum > 0 and not a.attisdropped) then
      return format('table %s has no column %s (renamed or dropped since the change was defined)', v_rel, quote_ident(v_col));
    end if;
  end loop;
  if not exists (select from pg_index as i where i.indrelid = v_rel and key_index_matches(i.indexrelid, change_key_columns(v_def))) then
    if jsonb_typeof(v_def -> 'key') = 'array' then
      return format('key: columns (%s) of %s are not unique together (no primary key, unique constraint or non-partial unique index of exactly these columns)',
                    (select string_agg(quote_ident(k), ', ') from jsonb_array_elements_text(v_def -> 'key') as k), v_rel);
    end if;
    return format('key: column %s.%s is not unique on its own (no primary key, unique constraint or non-partial unique index of exactly this column)',
                  v_rel, quote_ident(v_def ->> 'key'));
  end if;
  if v_kind = 'r' and exists (select from pg_inherits as h where h.inhparent = v_rel) then
    return format('table %s has inheritance children (%s): its key is unique in it alone, not in them', v_rel,
                  (select string_agg(h.inhrelid::regclass::text, ', ' order by h.inhrelid::regclass::text) from pg_inherits as h where h.inhparent = v_rel));
  end if;
  if change_table_problem.writer is null then
    return 'this install has no writer role: chunks migrate makes one (or names one: chunks migrate --writer ROLE)';
  end if;
  if not has_schema_privilege(change_table_problem.writer, v_nsp, 'USAGE') then
    return format('the writer %s may not use schema %s; its owner (%s) grants it: grant usage on schema %s to %s',
                  change_table_problem.writer, quote_ident(v_nsp), (select n.nspowner::regrole from pg_namespace as n where n.nspname = v_nsp),
                  quote_ident(v_nsp), change_table_problem.writer);
  end if;
  -- A column compared with an extension's operator (citext's,
  -- key_equality_sql): a key, when, version or expect column, or one the
  -- change writes (report compares it).
  select format('the writer %s may not use schema %s, where the operator %s compares column %s; its owner (%s) grants it: grant usage on schema %s to %s',
                change_table_problem.writer, quote_ident(n.nspname), o.oid::regoperator, quote_ident(a.attname), n.nspowner::regrole,
                quote_ident(n.nspname), change_table_problem.writer)
    into v_col
    from unnest(change_key_columns(v_def)
                || array(select jsonb_object_keys(coalesce(v_def -> 'when', '{}')))
                || array(select jsonb_array_elements_text(coalesce(v_def -> 'expect', '[]')))
                || change_written(v_def) || array[v_def ->> 'version']) with ordinality as k(c, ord)
    join pg_attribute as a on a.attrelid = v_rel and a.attname = k.c
    join pg_operator as o on o.oid = key_equality_operator(a.atttypid)
    join pg_namespace as n on n.oid = o.oprnamespace
   where n.nspname <> 'pg_catalog' and not has_schema_privilege(change_table_problem.writer, n.oid, 'USAGE')
   order by k.ord
   limit 1;
  if v_col is not null then
    return v_col;
  end if;
  if not has_table_privilege(change_table_problem.writer, v_rel, 'SELECT') then
    return format('the writer %s may not SELECT %s; its owner (%s) grants it: grant select, update on %s to %s',
                  change_table_problem.writer, v_rel, v_owner, v_rel, change_table_problem.writer);
  end if;
  -- The writer must hold nothing on the tables of any other role: code
  -- that the owner of this table attaches to it runs as the writer, and
  -- would gain what another owner granted it.
  v_col := writer_foreign_table(change_table_problem.writer, v_owner);
  if v_col is not null then
    return format('the writer %s holds privileges on %s; code on %s (owned by %s) would run with them: the writer serves the tables of one owner (revoke them, or give this install another writer: chunks migrate --writer ROLE)',
                  change_table_problem.writer, v_col, v_rel, v_owner);
  end if;
  for v_col in select c from unnest(v_written || (v_def ->> 'version')) as c where c is not null loop
    if not has_column_privilege(change_table_problem.writer, v_rel, v_col, 'UPDATE') then
      return format('the writer %s may not UPDATE column %s of %s; its owner (%s) grants it: grant select, update on %s to %s',
                    change_table_problem.writer, quote_ident(v_col), v_rel, v_owner, v_rel, change_table_problem.writer);
    end if;
  end loop;
  -- A change that deletes: its foreign keys and archive (change_delete_problem),
  -- DELETE (and INSERT, which its undo puts rows back with) on the table, and
  -- SELECT, INSERT and DELETE on the archive.
  if v_def ? 'delete' then
    v_col := change_delete_problem(v_def);
    if v_col is not null then
      return v_col;
    end if;
    if not (has_table_privilege(change_table_problem.writer, v_rel, 'DELETE') and has_table_privilege(change_table_problem.writer, v_rel, 'INSERT')) then
      return format('the writer %s may not DELETE from %s and INSERT into it (its undo puts rows back); its owner (%s) grants it: grant select, delete, insert on %s to %s',
                    change_table_problem.writer, v_rel, v_owner, v_rel, change_table_problem.writer);
    end if;
    select format('the writer %s may not SELECT, INSERT into and DELETE from %s, a table its deletes cascade to; its owner (%s) grants it: grant select, insert, delete on %s to %s',
                  change_table_problem.writer, c, v_owner, c, change_table_problem.writer)
      into v_col
      from unnest(change_cascade(v_def)) as c
     where not (has_table_privilege(change_table_problem.writer, c, 'SELECT') and has_table_privilege(change_table_problem.writer, c, 'INSERT')
                and has_table_privilege(change_table_problem.writer, c, 'DELETE'))
     limit 1;
    if v_col is not null then
      return v_col;
    end if;
    if v_def ? 'archive' and not (has_table_privilege(change_table_problem.writer, to_regclass(v_def ->> 'archive'), 'SELECT')
                                 and has_table_privilege(change_table_problem.writer, to_regclass(v_def ->> 'archive'), 'INSERT')
                                 and has_table_privilege(change_table_problem.writer, to_regclass(v_def ->> 'archive'), 'DELETE')) then
      return format('the writer %s may not SELECT, INSERT into and DELETE from the archive %s; its owner (%s) grants it: grant select, insert, delete on %s to %s',
                    change_table_problem.writer, to_regclass(v_def ->> 'archive'), v_owner, to_regclass(v_def ->> 'archive'), change_table_problem.writer);
    end if;
  end if;
  return null;
end
$$;
comment on function {{ .schema }}.change_table_problem(jsonb, regrole) is
  'chunks helper: why the declared change DEFINITION cannot run on its table now (gone, not a table, in a chunks schema, a column renamed or dropped, the key no longer unique, inheritance children, no writer, or the writer WRITER lacking USAGE, SELECT or UPDATE of a column it writes, naming who grants it), or NULL.';

-- A table (or view) of another role than OWNER on which WRITER holds any
-- privilege, table-wide or on a column, as "table (owned by role)", or
-- NULL. One scan of pg_class: asked at define, at every install and at
-- register, never per chunk.
create or replace function {{ .schema }}.writer_foreign_table(writer regrole, owner regrole) returns text
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select format('%s (owned by %s)', c.oid::regclass, c.relowner::regrole)
    from pg_class as c
   where c.relkind in ('r', 'p', 'v', 'm', 'f') and c.relowner <> writer_foreign_table.owner
     and (exists (select from aclexplode(c.relacl) as a where a.grantee = writer_foreign_table.writer)
          or exists (select from pg_attribute as at, aclexplode(at.attacl) as a
                      where at.attrelid = c.oid and at.attacl is not null and a.grantee = writer_foreign_table.writer))
   order by c.oid::regclass::text
   limit 1
$$;
comment on function {{ .schema }}.writer_foreign_table(regrole, regrole) is
  'chunks helper: a table or view of a role other than OWNER on which WRITER holds a privilege (table-wide or on a column), as text, or NULL.';
