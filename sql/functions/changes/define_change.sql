-- Declared changes (README "Your own tables"). define_change validates a
-- definition against the catalog (22023 naming the field, table, column or
-- constant at fault, before anything is written), records it in changes
-- and generates its static function apply_<name> (change_function_sql),
-- its inverse restore_<name> for an undo and its read-only check
-- preview_<name> (change_check_sql).
-- SECURITY INVOKER: it runs with the caller's rights, and only the owner of
-- this schema (or a member of that role) may call it; nobody is granted it.
create or replace function {{ .schema }}.define_change(definition jsonb) returns boolean
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_fields constant text[] := array['name', 'table', 'key', 'tenant', 'version', 'expect', 'when', 'set', 'set_from_target', 'set_now',
                                    'delete', 'archive', 'cascade'];
  v_def jsonb := define_change.definition;
  v_field text;
  v_name text;
  v_ident text[];
  v_rel oid;
  v_relkind "char";
  v_nsp text;
  v_col record;
  v_keys text[];
  v_tenant text;
  v_version text;
  v_expect text[] := array[]::text[];
  v_written text[] := array[]::text[];
  v_targets text[] := array[]::text[];
  v_e jsonb;
  v_k text;
  v_v jsonb;
  v_c jsonb;
  v_existing jsonb;
  v_problem text;
begin
  perform check_change_owner('define_change');
  if jsonb_typeof(v_def) is distinct from 'object' then
    raise exception 'definition: must be an object, got %', coalesce(jsonb_typeof(v_def), 'null') using errcode = '22023';
  end if;
  select k into v_field from jsonb_object_keys(v_def) as k where k <> all (v_fields) order by k limit 1;
  if v_field is not null then
    raise exception 'definition: unknown field %', excerpt(v_field, true) using errcode = '22023';
  end if;
  foreach v_field in array array['name', 'table', 'key'] loop
    if not v_def ? v_field then
      raise exception 'definition: missing field %', v_field using errcode = '22023';
    end if;
  end loop;
  foreach v_field in array array['name', 'table', 'key', 'tenant', 'version'] loop
    if v_field = 'key' and jsonb_typeof(v_def -> 'key') = 'array' then
      if jsonb_array_length(v_def -> 'key') = 0 or exists (select from jsonb_array_elements(v_def -> 'key') as e where jsonb_typeof(e) <> 'string') then
        raise exception 'key: must be a column name or a non-empty list of column names, got %', excerpt((v_def -> 'key')::text, false)
          using errcode = '22023';
      end if;
    elsif v_def ? v_field and jsonb_typeof(v_def -> v_field) <> 'string' then
      raise exception '%: must be a string, got %', v_field, jsonb_typeof(v_def -> v_field) using errcode = '22023';
    end if;
  end loop;
  v_name := v_def ->> 'name';
  perform check_change_name(v_name, 'name');
  -- Two defines of one name at once: the second waits here until the first
  -- commits, then finds its definition (below) rather than its function.
  perform pg_advisory_xact_lock(hashtext('{{ .schema }}.define_change'), hashtext(v_name));
  -- Under repeatable read, a define that committed after this snapshot is
  -- invisible in changes but not in the catalog (to_regprocedure reads it
  -- as it is now): say so before making its functions a second time.
  if current_setting('transaction_isolation') <> 'read committed'
     and to_regprocedure(format('%I.%I(text, text, integer, jsonb)', '{{ .schema }}', 'apply_' || v_name)) is not null
     and not exists (select from changes as c where c.name = v_name and c.retired_at is null) then
    raise exception 'change %: defined by another transaction that this one''s snapshot cannot see; run define_change again',
      v_name using errcode = '40001';
  end if;

  -- The table: schema-qualified, an ordinary (or partitioned) table, in no
  -- system schema and in no schema of chunks (change_table_problem, below).
  begin
    v_ident := parse_ident(v_def ->> 'table');
  exception when others then
    v_ident := null;
  end;
  if cardinality(v_ident) is distinct from 2 then
    raise exception 'table: must be schema.table, got %', excerpt(v_def ->> 'table', true) using errcode = '22023';
  end if;
  if v_ident[1] in ('pg_catalog', 'information_schema', 'pg_toast') or v_ident[1] like 'pg\_temp%' or v_ident[1] like 'pg\_toast%' then
    raise exception 'table: % is in system schema %', excerpt(v_def ->> 'table', true), v_ident[1] using errcode = '22023';
  end if;
  if v_ident[1] = '{{ .schema }}' then
    raise exception 'table: % is one of chunks'' own tables (schema {{ .schema }}); declare changes of your own tables',
      excerpt(v_def ->> 'table', true) using errcode = '22023';
  end if;
  select c.oid, c.relkind, n.nspname into v_rel, v_relkind, v_nsp
    from pg_class as c join pg_namespace as n on n.oid = c.relnamespace
   where n.nspname = v_ident[1] and c.relname = v_ident[2];
  if v_rel is null then
    raise exception 'table: there is no table %', excerpt(v_def ->> 'table', true) using errcode = '22023';
  end if;
  if v_relkind not in ('r', 'p') then
    raise exception 'table: % is %; a change is of an ordinary or partitioned table', excerpt(v_def ->> 'table', true),
      case v_relkind when 'v' then 'a view' when 'm' then 'a materialized view' when 'f' then 'a foreign table'
                     when 'S' then 'a sequence' when 'c' then 'a composite type' when 't' then 'a TOAST table'
                     else 'an index' end using errcode = '22023';
  end if;
  -- chunks' owner finds the table by its name (USAGE on its schema, which
  -- reads nothing); the writer alone reads and writes it.
  if not has_schema_privilege((select n.nspowner from pg_namespace as n where n.nspname = '{{ .schema }}'), v_nsp, 'USAGE') then
    raise exception 'table: the owner of schema {{ .schema }} (%) may not use schema % to find %; its owner (%) grants it: grant usage on schema % to %',
      (select n.nspowner::regrole from pg_namespace as n where n.nspname = '{{ .schema }}'), quote_ident(v_nsp), v_rel::regclass,
      (select n.nspowner::regrole from pg_namespace as n where n.nspname = v_nsp), quote_ident(v_nsp),
      (select n.nspowner::regrole from pg_namespace as n where n.nspname = '{{ .schema }}') using errcode = '22023';
  end if;

  -- The key: one column or a list of them, each NOT NULL and of a type
  -- with a default btree operator class (its rows are sorted and locked
  -- in that order), together exactly the key columns of a valid unique
  -- index that is neither partial nor on expressions (a primary key, a
  -- unique constraint or a unique index): each target names one row.
  v_keys := change_key_columns(v_def);
  foreach v_k in array v_keys loop
    select * into v_col from change_column(v_rel, v_k, 'key');
    if not v_col.notnull then
      raise exception 'key: column %.% may be NULL', v_rel::regclass, quote_ident(v_k) using errcode = '22023';
    end if;
    if not key_type_sortable(v_col.typid) then
      raise exception 'key: column %.% is %, which has no default btree operator class (no order to sort and lock its rows in)',
        v_rel::regclass, quote_ident(v_k), v_col.type using errcode = '22023';
    end if;
    if v_k = any (v_targets) then
      raise exception 'key: % is named twice', quote_ident(v_k) using errcode = '22023';
    end if;
    v_targets := v_targets || v_k;
  end loop;
  if not exists (select from pg_index as i where i.indrelid = v_rel and key_index_matches(i.indexrelid, v_keys)) then
    if cardinality(v_keys) = 1 then
      raise exception 'key: column %.% is not unique on its own (no primary key, unique constraint or non-partial unique index of exactly this column)',
        v_rel::regclass, quote_ident(v_keys[1]) using errcode = '22023';
    end if;
    raise exception 'key: columns (%) of % are not unique together (no primary key, unique constraint or non-partial unique index of exactly these columns)',
      (select string_agg(quote_ident(c), ', ') from unnest(v_keys) as c), v_rel::regclass using errcode = '22023';
  end if;

  if v_def ? 'tenant' then
    v_tenant := v_def ->> 'tenant';
    perform change_column(v_rel, v_tenant, 'tenant');
    -- A column of a composite key may be the tenant ((tenant_id, id)); a
    -- key of one column may not: every row would be its own tenant.
    if v_keys = array[v_tenant] then
      raise exception 'tenant: % is the key', quote_ident(v_tenant) using errcode = '22023';
    end if;
  end if;
  if v_def ? 'version' then
    v_version := v_def ->> 'version';
    select * into v_col from change_column(v_rel, v_version, 'version');
    if v_col.typid not in ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype) then
      raise exception 'version: column %.% is %, not smallint, integer or bigint', v_rel::regclass, quote_ident(v_version), v_col.type
        using errcode = '22023';
    end if;
    if v_version = any (v_keys || v_tenant) then
      raise exception 'version: % is the key or the tenant', quote_ident(v_version) using errcode = '22023';
    end if;
    v_targets := v_targets || v_version;
  end if;

  if v_def ? 'expect' then
    if jsonb_typeof(v_def -> 'expect') <> 'array' then
      raise exception 'expect: must be a list of column names, got %', jsonb_typeof(v_def -> 'expect') using errcode = '22023';
    end if;
    for v_e in select e from jsonb_array_elements(v_def -> 'expect') as e loop
      if jsonb_typeof(v_e) <> 'string' then
        raise exception 'expect: must be a list of column names, got %', excerpt(v_e::text, false) using errcode = '22023';
      end if;
      perform change_column(v_rel, v_e #>> '{}', 'expect');
      if v_e #>> '{}' = any (v_expect || v_keys || v_version) then
        raise exception 'expect: % is named twice, or is the key or the version', quote_ident(v_e #>> '{}') using errcode = '22023';
      end if;
      v_expect := v_expect || (v_e #>> '{}');
    end loop;
  end if;
  if v_version is null and cardinality(v_expect) = 0 then
    raise exception 'expect: must name at least one column when the change has no version' using errcode = '22023';
  end if;
  v_targets := v_targets || v_expect;

  -- when and set: constants, each a value of its column's type (in when,
  -- also a list of them, or null).
  foreach v_field in array array['when', 'set', 'set_from_target'] loop
    if v_def ? v_field and jsonb_typeof(v_def -> v_field) <> 'object' then
      raise exception '%: must be an object, got %', v_field, jsonb_typeof(v_def -> v_field) using errcode = '22023';
    end if;
    for v_k, v_v in select e.key, e.value from jsonb_each(coalesce(v_def -> v_field, '{}')) as e order by e.key loop
      select * into v_col from change_column(v_rel, v_k, v_field);
      if v_field in ('set', 'set_from_target') then
        if v_k = any (v_keys || v_tenant || v_version) then
          raise exception '%: % is the key, the tenant or the version, which a change never sets', v_field, quote_ident(v_k)
            using errcode = '22023';
        end if;
        if v_col.generated then
          raise exception '%: column %.% is generated', v_field, v_rel::regclass, quote_ident(v_k) using errcode = '22023';
        end if;
        if v_col.identity then
          raise exception '%: column %.% is an identity column', v_field, v_rel::regclass, quote_ident(v_k) using errcode = '22023';
        end if;
        if v_k = any (v_written) then
          raise exception 'set_from_target: % is in set too', quote_ident(v_k) using errcode = '22023';
        end if;
        v_written := v_written || v_k;
      end if;
      if v_field = 'set_from_target' then
        if jsonb_typeof(v_v) <> 'string' or v_v #>> '{}' !~ '^[a-z_][a-z0-9_]{0,62}$' then
          raise exception 'set_from_target.%: the target field must be 1 to 63 lower-case ASCII letters, digits or _, got %',
            v_k, excerpt(v_v::text, false) using errcode = '22023';
        end if;
        if v_v #>> '{}' = any (v_targets) then
          raise exception 'set_from_target.%: target field % is already the field of the key, the version or an expect column',
            v_k, v_v #>> '{}' using errcode = '22023';
        end if;
        v_targets := v_targets || (v_v #>> '{}');
      elsif v_field = 'when' and jsonb_typeof(v_v) = 'null' then
        null; -- IS NULL
      else
        -- In when, a list means one of its values (IN).
        if v_field = 'when' and jsonb_typeof(v_v) = 'array' and jsonb_array_length(v_v) = 0 then
          raise exception 'when.%: a list must hold at least one value', v_k using errcode = '22023';
        end if;
        for v_c in select e from jsonb_array_elements(case when v_field = 'when' and jsonb_typeof(v_v) = 'array' then v_v
                                                           else jsonb_build_array(v_v) end) as e loop
          if jsonb_typeof(v_c) not in ('string', 'number', 'boolean') then
            raise exception '%.%: must be a string, number or boolean constant%, got %', v_field, v_k,
              case v_field when 'when' then ', a list of them, or null' else '' end, jsonb_typeof(v_c) using errcode = '22023';
          end if;
          -- A constant means one value in every session: no word that
          -- depends on the day it is read (issue 35; set_now writes the
          -- chunk's own time).
          if (select t.typcategory from pg_type as t where t.oid = v_col.typid) = 'D' and v_c #>> '{}' ~* '\m(now|today|tomorrow|yesterday)\M' then
            raise exception '%.%: constant % is relative to the day it is read; give the date or time itself%', v_field, v_k,
              excerpt(v_c::text, false), case v_field when 'set' then ', or name the column in set_now' else '' end using errcode = '22023';
          end if;
          -- Cast as the writer role, under its pinned TimeZone and DateStyle
          -- (the generated function casts it the same way), exactly.
          perform writer_cast(v_c, v_col.type, v_col.typid, format('%s.%s: constant', v_field, v_k),
                              format('column %s.%s (%s)', v_rel::regclass, quote_ident(v_k), v_col.type));
        end loop;
      end if;
    end loop;
  end loop;

  -- set_now: columns set to the chunk's transaction time.
  if v_def ? 'set_now' and jsonb_typeof(v_def -> 'set_now') <> 'array' then
    raise exception 'set_now: must be a list of column names, got %', jsonb_typeof(v_def -> 'set_now') using errcode = '22023';
  end if;
  for v_e in select e from jsonb_array_elements(coalesce(v_def -> 'set_now', '[]')) as e loop
    if jsonb_typeof(v_e) <> 'string' then
      raise exception 'set_now: must be a list of column names, got %', excerpt(v_e::text, false) using errcode = '22023';
    end if;
    v_k := v_e #>> '{}';
    select * into v_col from change_column(v_rel, v_k, 'set_now');
    if v_k = any (v_keys || v_tenant || v_version) then
      raise exception 'set_now: % is the key, the tenant or the version, which a change never sets', quote_ident(v_k)
        using errcode = '22023';
    end if;
    if v_k = any (v_written) then
      raise exception 'set_now: % is named twice, or is in set or set_from_target too', quote_ident(v_k) using errcode = '22023';
    end if;
    if v_col.typid not in ('timestamp with time zone'::regtype, 'timestamp without time zone'::regtype, 'date'::regtype) then
      raise exception 'set_now: column %.% is %, not timestamptz, timestamp or date', v_rel::regclass, quote_ident(v_k), v_col.type
        using errcode = '22023';
    end if;
    if v_col.generated then
      raise exception 'set_now: column %.% is generated', v_rel::regclass, quote_ident(v_k) using errcode = '22023';
    end if;
    v_written := v_written || v_k;
  end loop;
  -- delete: the change deletes the rows (and writes none); archive: the
  -- table its deleted rows go to, in the same statement (change_delete_problem).
  if v_def ? 'delete' and v_def -> 'delete' <> 'true'::jsonb then
    raise exception 'delete: must be true (leave it out for a change that updates), got %', excerpt((v_def -> 'delete')::text, false)
      using errcode = '22023';
  end if;
  if v_def ? 'delete' and cardinality(v_written) > 0 then
    raise exception 'delete: a change that deletes writes no column (no set, set_from_target or set_now)' using errcode = '22023';
  end if;
  if v_def ? 'archive' and not v_def ? 'delete' then
    raise exception 'archive: only a change that deletes has an archive ("delete": true)' using errcode = '22023';
  end if;
  if v_def ? 'cascade' and not v_def ? 'delete' then
    raise exception 'cascade: only a change that deletes cascades ("delete": true)' using errcode = '22023';
  end if;
  if cardinality(v_written) = 0 and not v_def ? 'delete' then
    raise exception 'set: a change must write at least one column (set, set_from_target or set_now), or delete its rows ("delete": true)'
      using errcode = '22023';
  end if;
  if v_def ? 'delete' then
    v_problem := change_delete_problem(v_def);
    if v_problem is not null then
      raise exception '%', v_problem using errcode = '22023';
    end if;
  end if;

  v_problem := change_field_problem(v_def);
  if v_problem is not null then
    raise exception '%', v_problem using errcode = '22023';
  end if;

  -- Frozen like an approval: the same definition is a no-op, another one
  -- under the name a conflict. An empty expect, when, set or
  -- set_from_target is the same as none: it is not kept.
  v_def := (select jsonb_object_agg(e.key, e.value) from jsonb_each(v_def) as e
             where e.value not in ('[]'::jsonb, '{}'::jsonb));
  select c.definition into v_existing from changes as c where c.name = v_name and c.retired_at is null for update;
  if found then
    if v_existing = v_def then
      return false;
    end if;
    raise exception 'change %: already defined with a different definition (chunks change show %)', v_name, v_name
      using errcode = 'CH409';
  end if;
  select p.proname into v_field
    from change_function_names(v_name) as f, pg_proc as p
   where p.pronamespace = '{{ .schema }}'::regnamespace and p.proname in (f.apply, f.restore, f.preview)
   order by p.proname limit 1;
  if found then
    raise exception 'change %: a function {{ .schema }}.% exists but no change of this name does', v_name, v_field
      using errcode = 'CH409';
  end if;

  -- The table as it is now (the writer's privileges, the key's index, a
  -- schema of chunks, inheritance), as every install asks it again.
  v_problem := change_table_problem(v_def, writer_role());
  if v_problem is not null then
    raise exception 'table: %', v_problem using errcode = '22023';
  end if;
  perform generate_change(v_def);
  v_problem := coalesce(change_code_warning(v_rel), '') || coalesce(E'\n' || case when v_def ? 'delete' then change_delete_notice(v_def) end, '');
  if v_problem <> '' then
    raise notice '%', ltrim(v_problem, E'\n');
  end if;
  -- A new version of a retired change (retire_change), or the very
  -- definition of a retired version again, which is that version live again.
  update changes as c set retired_at = null, retired_by = null
   where c.name = v_name and c.digest = encode(sha256(convert_to(v_def::text, 'UTF8')), 'hex');
  if not found then
    insert into changes (name, definition, digest, function_name)
    values (v_name, v_def, encode(sha256(convert_to(v_def::text, 'UTF8')), 'hex'), 'apply_' || v_name);
  end if;
  return true;
exception when unique_violation then
  -- Another define of this name committed after this transaction's
  -- snapshot was taken (repeatable read or serializable; under read
  -- committed the lock above orders them): a retry sees it.
  raise exception 'change %: defined by another transaction that this one''s snapshot cannot see; run define_change again',
    v_name using errcode = '40001';
end
$$;
comment on function {{ .schema }}.define_change(jsonb) is
$c$Declares a change of one of the user's tables (README "Your own tables"): DEFINITION is
{"name", "table": "schema.table", "key": column or [columns], "tenant"?, "version"?, "expect"?: [columns],
"when"?: {column: constant, [constants] (one of them) or null (IS NULL)}, "set"?: {column: constant},
"set_from_target"?: {column: field}, "set_now"?: [timestamptz, timestamp or date columns]}.
Validates it against the catalog, records it in changes and generates its static function
apply_<name> (SECURITY DEFINER, owned by the writer role, executable only through run_chunk).
Returns true when new, false when the same definition is already there.
Errors: 42501 the caller is not the schema's owner; 22023 a bad definition (names the field,
table, column or constant); CH409 another definition under this name; 40001 another transaction
defined this name after this one's snapshot was taken (repeatable read: run it again). Two defines
of one name at once are ordered by a transaction-level advisory lock on the name.$c$;
