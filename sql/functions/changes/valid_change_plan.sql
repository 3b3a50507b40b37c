-- A plan of a job of the declared change CHANGE, for register_change and
-- check_change: the change must exist (22023), PLAN is validated as
-- register's (valid_plan, with the change's targets), and with a tenant
-- column the plan's tenant must be one of its values as the column prints
-- it (the generated function compares the row's tenant as text), so that
-- "042" or "acme" for an integer column is refused when the job is
-- registered, not at every chunk. Returns the change's NAME, DEFINITION and
-- DIGEST, and the APPROVAL as valid_plan returns it.
create or replace function {{ .schema }}.valid_change_plan(change text, plan jsonb, out name text, out definition jsonb,
                                                           out digest text, out approval jsonb)
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_def jsonb;
begin
  select c.name, c.definition, c.digest into name, definition, digest from change_named(valid_change_plan.change, 'change') as c;
  v_def := definition;
  approval := valid_plan(valid_change_plan.plan, v_def);  -- 22023 naming the field, before anything is written
  perform check_change_tenant(v_def, approval ->> 'tenant');
end
$$;
comment on function {{ .schema }}.valid_change_plan(text, jsonb) is
  'chunks helper: the declared change CHANGE (22023 when there is none) and PLAN validated as a job of it (register''s checks, its targets, a tenant that is a value of its tenant column): {name, definition, digest, approval}.';
