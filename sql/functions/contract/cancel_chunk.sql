create or replace function {{ .schema }}.cancel_chunk(tenant text, items jsonb) returns jsonb
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_targets jsonb;
  v_ids integer[];
  v_revisions integer[];
  v_qtys integer[];
begin
  perform check_name(cancel_chunk.tenant, 'tenant');
  -- Two people: cancelling without a job is cancelling without an approval.
  if two_person_policy(null) then
    raise exception 'cancel_chunk: the schema''s policy is two people (set_policy), and cancel_chunk changes orders without a job: register a plan and have it approved'
      using errcode = 'CH409';
  end if;
  v_targets := normalized_targets(cancel_chunk.items, 'items');
  select array_agg((t.e -> 'id')::integer order by t.ord),
         array_agg((t.e -> 'revision')::integer order by t.ord),
         array_agg((t.e -> 'qty')::integer order by t.ord)
    into v_ids, v_revisions, v_qtys
    from jsonb_array_elements(v_targets) with ordinality as t(e, ord);
  perform change_orders(cancel_chunk.tenant, v_ids, v_revisions, v_qtys, 'cancel');
  return (select jsonb_agg(jsonb_build_object('id', a.id, 'previous_revision', a.revision,
                                              'new_revision', a.revision + 1, 'qty', a.qty)
                           order by a.id)
            from unnest(v_ids, v_revisions, v_qtys) as a(id, revision, qty));
end
$$;
comment on function {{ .schema }}.cancel_chunk(text, jsonb) is
$c$Cancels a list of 1 to 64 approved orders of TENANT, all or none.
ITEMS is a jsonb list of {"id", "revision", "qty"}. In ascending id order, each order
must still have TENANT, the approved revision and qty, and state 'pending'; it becomes
'cancelled' with revision + 1. Returns the changes in id order:
[{"id", "previous_revision", "new_revision", "qty"}, ...].
Refused (CH409) while the schema's policy is two people (set_policy): it has no job to approve.
Errors: 22023 bad input (names the field); CH409 an order that does not match (names
the id: missing, another tenant, state, revision or qty). Never writes jobs or job_audit.$c$;
