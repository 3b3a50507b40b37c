-- Campaigns: the preflight (check_plan's question) over a whole campaign:
-- would each target not yet committed take its change now?
create or replace function {{ .schema }}.campaign_check(name text, max_listed integer default 100) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_check jsonb;
  v_change text;
begin
  perform check_name(campaign_check.name, 'name');
  if campaign_check.max_listed is null or campaign_check.max_listed not between 0 and 100000 then
    raise exception 'max_listed: must be between 0 and 100000, got %', coalesce(campaign_check.max_listed::text, 'null')
      using errcode = '22023';
  end if;
  v_change := campaign_change(campaign_check.name);
  if v_change is not null then
    return campaign_change_check(campaign_check.name, v_change, campaign_check.max_listed);
  end if;
  select jsonb_build_object(
           'name', c.name, 'targets', c.target_count, 'remaining', p.remaining, 'ok', p.remaining - p.problems,
           'problems', p.problems,
           'listed', coalesce((select jsonb_agg(jsonb_build_object('id', l.id, 'problem', l.problem) order by l.id)
                                 from (select x.id, x.problem from unnest(p.ids, p.texts) as x(id, problem)
                                        order by x.id limit campaign_check.max_listed) as l), '[]'))
    into v_check
    from campaigns as c
   cross join (select count(*)::integer as remaining, count(t.problem)::integer as problems,
                      array_agg(t.id order by t.id) filter (where t.problem is not null) as ids,
                      array_agg(t.problem order by t.id) filter (where t.problem is not null) as texts
                 from (select (x.e -> 'id')::integer as id,
                              order_problem((x.e -> 'id')::bigint, (x.e -> 'revision')::bigint, (x.e -> 'qty')::bigint,
                                            j.tenant, state_before(coalesce(k.kind, 'cancel')), o.id, o.tenant, o.state, o.revision, o.qty) as problem
                         from campaign_jobs as cj
                         join jobs as j on j.job_id = cj.job_id
                         left join job_kind as k on k.job_id = cj.job_id
                        cross join lateral jsonb_array_elements(j.targets) with ordinality as x(e, ord)
                         left join orders as o on o.id = (x.e -> 'id')::integer
                        where cj.campaign = campaign_check.name and x.ord > j.next_index) as t) as p
   where c.name = campaign_check.name;
  if v_check is null then
    raise exception 'campaign %: not found', campaign_check.name using errcode = 'CH409';
  end if;
  return v_check;
end
$$;
comment on function {{ .schema }}.campaign_check(text, integer) is
$c$Preflight over campaign NAME, without writing: for every target not yet committed, whether
its order can take the change now (order_problem: missing, another tenant, state, revision or
qty). Returns {"name", "targets", "remaining", "ok", "problems", "listed": [{"id",
"problem"}, ...]} with the first MAX_LISTED (default 100) problems in id order. One query over
this campaign's jobs. Errors: 22023 bad name or max_listed; CH409 unknown campaign.$c$;
