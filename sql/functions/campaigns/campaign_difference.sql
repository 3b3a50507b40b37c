-- Campaigns: the first difference between the recorded campaign NAME and a
-- new approval of it, for campaign_create's conflict.
create or replace function {{ .schema }}.campaign_difference(name text, tenant text, chunk_size integer,
                                                             ids integer[], revisions integer[], qtys integer[]) returns text
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_old campaigns;
  v_diff record;
begin
  select * into v_old from campaigns as c where c.name = campaign_difference.name;
  if v_old.tenant <> campaign_difference.tenant then
    return format('tenant is %s, this approval has %s', v_old.tenant, campaign_difference.tenant);
  end if;
  if v_old.chunk_size <> campaign_difference.chunk_size then
    return format('chunk_size is %s, this approval has %s', v_old.chunk_size, campaign_difference.chunk_size);
  end if;
  select n.rn, n.id, n.revision, n.qty, s.e into v_diff
    from (select u.id, u.revision, u.qty, row_number() over (order by u.id) as rn
            from unnest(campaign_difference.ids, campaign_difference.revisions, campaign_difference.qtys) as u(id, revision, qty)) as n
    full join (select x.e, row_number() over (order by cj.seq, x.ord) as rn
                 from campaign_jobs as cj
                 join jobs as j on j.job_id = cj.job_id
                cross join lateral job_target_rows(j.job_id) as x(e, ord)
                where cj.campaign = campaign_difference.name) as s on s.rn = n.rn
   where s.e is distinct from jsonb_build_object('id', n.id, 'revision', n.revision, 'qty', n.qty)
   order by coalesce(n.rn, s.rn) limit 1;
  if not found then
    return 'the approval differs (digest)';
  end if;
  if v_diff.e is null then
    return format('it has %s targets, this approval has more: target %s (sorted by id) is id %s', v_old.target_count, v_diff.rn, v_diff.id);
  elsif v_diff.id is null then
    return format('it has %s targets, this approval only %s', v_old.target_count, cardinality(campaign_difference.ids));
  end if;
  return format('target %s (sorted by id) is %s, this approval has {"id": %s, "revision": %s, "qty": %s}',
                v_diff.rn, v_diff.e, v_diff.id, v_diff.revision, v_diff.qty);
end
$$;
comment on function {{ .schema }}.campaign_difference(text, text, integer, integer[], integer[], integer[]) is
  'chunks helper: the first difference (tenant, chunk_size, then the first target by sorted position) between campaign NAME as recorded and a new approval of it.';
