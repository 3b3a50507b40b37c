-- Two people (docs/safety.md "Two people"): whether a job of CHANGE (NULL:
-- the contract's orders) recorded now is two-person. A change's own row in
-- approval_policy wins over the schema's (scope ''); no row: one person.
create or replace function {{ .schema }}.two_person_policy(change text) returns boolean
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select coalesce((select p.two_person from approval_policy as p where p.scope = two_person_policy.change),
                  (select p.two_person from approval_policy as p where p.scope = ''),
                  false)
$$;
comment on function {{ .schema }}.two_person_policy(text) is
  'chunks helper: true when a job of CHANGE (NULL: orders) recorded now needs a second person''s approval (approval_policy: the change''s row, else the schema''s, else no).';

-- The policy, set by the schema's owner only: an operator who could turn
-- it off would approve their own plans.
create or replace function {{ .schema }}.set_policy(change text, two_person boolean) returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
begin
  perform check_change_owner('set_policy');
  if set_policy.two_person is null then
    raise exception 'two_person: must be true or false, got null' using errcode = '22023';
  end if;
  if set_policy.change is not null then
    perform check_change_name(set_policy.change, 'change');
    if not exists (select from changes as c where c.name = set_policy.change and c.retired_at is null) then
      raise exception 'change: there is no change %; chunks change list shows the declared ones', set_policy.change
        using errcode = '22023';
    end if;
  end if;
  insert into approval_policy as p (scope, two_person) values (coalesce(set_policy.change, ''), set_policy.two_person)
  on conflict (scope) do update set two_person = excluded.two_person, set_by = session_user, set_at = now();
  return policy_list();
end
$$;
comment on function {{ .schema }}.set_policy(text, boolean) is
$c$Sets whether jobs need two people (chunks policy set): for every job when CHANGE is NULL, for
the jobs of the declared change CHANGE otherwise (its setting wins over the schema's). With
TWO_PERSON, register, register_change, register_undo and campaign_create record a new job as
proposed by its session_user; it runs only after approve (or campaign_approve) by another
session_user holding the approver access; its skips and abandon are proposed too, and
cancel_chunk (which changes orders without a job) is refused while the schema's policy is
on. A job keeps the rule it was recorded under. Only the schema's owner may (42501). Returns
policy_list(). Errors: 22023 null TWO_PERSON, an unknown change; 42501 not the owner.$c$;

create or replace function {{ .schema }}.policy_list() returns jsonb
language sql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
  select coalesce(jsonb_agg(jsonb_build_object('change', nullif(p.scope, ''), 'two_person', p.two_person,
                                               'set_by', p.set_by, 'set_at', p.set_at) order by p.scope), '[]'::jsonb)
    from approval_policy as p
$$;
comment on function {{ .schema }}.policy_list() is
  'The approval policy (chunks policy show): [{"change" (null: the whole schema), "two_person", "set_by", "set_at"}, ...]; none set: [] (one person).';
