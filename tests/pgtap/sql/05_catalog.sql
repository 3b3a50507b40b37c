-- The catalog as a psql user sees it (\df+): the five functions of the SQL
-- face exist in the chunks schema with the contract's argument names and
-- types and return types, are PL/pgSQL, SECURITY DEFINER (README "Roles"),
-- pin their own search_path, and are documented with COMMENT ON; PUBLIC
-- may execute none of them. current_schema() is the
-- chunks schema under test (first on the search_path).
-- search_path: the chunks schema, then pgTAP's schema. Leaves nothing behind.
begin;
select plan(45);

create temp table api on commit drop as
select *
  from (values (1, 'register',     array['jsonb']::name[],         'plan jsonb',               'boolean', 'volatile'),
               (2, 'inspect_job',  array['text']::name[],          'job_id text',              'jsonb',   'stable'),
               (3, 'cancel_chunk', array['text', 'jsonb']::name[], 'tenant text, items jsonb', 'jsonb',   'volatile'),
               (4, 'run_chunk',    array['text']::name[],          'job_id text',              'jsonb',   'volatile'),
               (5, 'report',       array['text']::name[],          'job_id text',              'jsonb',   'stable'))
       as f(ord, name, args, arguments, returns, volatility);

-- One test line per function for each property; the sort happens in the
-- subquery so the tests are numbered in this order.
select has_function(current_schema(), f.name, f.args, format('%s(%s) exists', f.name, f.arguments))
  from (select * from api order by ord) as f;
select is(pg_get_function_arguments(format('%I.%I(%s)', current_schema(), f.name, array_to_string(f.args, ','))::regprocedure),
          f.arguments, format('%s takes (%s)', f.name, f.arguments))
  from (select * from api order by ord) as f;
select function_returns(current_schema(), f.name, f.args, f.returns, format('%s returns %s', f.name, f.returns))
  from (select * from api order by ord) as f;
select function_lang_is(current_schema(), f.name, f.args, 'plpgsql', format('%s is PL/pgSQL', f.name))
  from (select * from api order by ord) as f;
select is_definer(current_schema(), f.name, f.args, format('%s is SECURITY DEFINER', f.name))
  from (select * from api order by ord) as f;
select volatility_is(current_schema(), f.name, f.args, f.volatility, format('%s is %s', f.name, upper(f.volatility)))
  from (select * from api order by ord) as f;
select ok(coalesce(p.proconfig @> array[format('search_path=%s, pg_temp', current_schema())], false),
          format('%s pins search_path to its own schema, pg_temp', f.name))
  from (select * from api order by ord) as f
  left join pg_proc as p
    on p.oid = to_regprocedure(format('%I.%I(%s)', current_schema(), f.name, array_to_string(f.args, ',')));
select ok(length(obj_description(to_regprocedure(format('%I.%I(%s)', current_schema(), f.name, array_to_string(f.args, ','))),
                                 'pg_proc')) > 40,
          format('%s has a comment for \df+', f.name))
  from (select * from api order by ord) as f;

-- run_chunk bounds its lock wait even when the caller set nothing.
select ok((select proconfig @> array['lock_timeout=500ms']
             from pg_proc where oid = to_regprocedure(format('%I.run_chunk(text)', current_schema()))),
          'run_chunk sets lock_timeout = 500ms for itself');
select is((select count(*) from pg_extension where extnamespace = current_schema()::regnamespace), 0::bigint,
          'no extension (pgTAP included) is installed in the chunks schema');
-- (The writer role's functions run as it, so they are SECURITY DEFINER too:
-- docs/roles.md "Code on your tables".)
select is((select count(*) from pg_proc as p where p.pronamespace = current_schema()::regnamespace
              and p.proowner <> to_regrole((select w.role from change_writer as w))
              and p.prosecdef <> (p.oid in (select access_functions('all')))), 0::bigint,
          'exactly the functions a role may be granted (access_functions) are SECURITY DEFINER, besides the writer''s');
select is((select count(*) from pg_proc as p where p.pronamespace = current_schema()::regnamespace
              and p.proowner = to_regrole((select w.role from change_writer as w)) and not p.prosecdef), 0::bigint,
          'the writer''s functions are SECURITY DEFINER');
select is((select count(*) from pg_proc as p where p.pronamespace = current_schema()::regnamespace
              and exists (select from aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) as a where a.grantee = 0)), 0::bigint,
          'PUBLIC may execute no function of the chunks schema');

select * from finish();
rollback;
