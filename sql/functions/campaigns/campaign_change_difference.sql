-- Campaigns: the first difference between the recorded campaign NAME and a
-- new approval of it of the declared change CHANGE (TARGETS normalized and
-- sorted by key), for campaign_create_change's conflict.
create or replace function {{ .schema }}.campaign_change_difference(name text, change text, tenant text, chunk_size integer,
                                                                    targets jsonb) returns text
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_old campaigns;
  v_old_change text := campaign_change(campaign_change_difference.name);
  v_diff record;
begin
  select * into v_old from campaigns as c where c.name = campaign_change_difference.name;
  if v_old_change is distinct from campaign_change_difference.change then
    return format('it is a campaign of %s, this approval is of change %s',
                  coalesce('change ' || v_old_change, 'orders'), campaign_change_difference.change);
  end if;
  if v_old.tenant is distinct from campaign_change_difference.tenant or v_old.chunk_size <> campaign_change_difference.chunk_size then
    return campaign_difference(campaign_change_difference.name, campaign_change_difference.tenant,
                               campaign_change_difference.chunk_size, null, null, null);
  end if;
  select n.rn, n.e as new, s.e as old into v_diff
    from (select x.e, x.ord as rn from jsonb_array_elements(campaign_change_difference.targets) with ordinality as x(e, ord)) as n
    full join (select x.e, row_number() over (order by cj.seq, x.ord) as rn
                 from campaign_jobs as cj
                 join jobs as j on j.job_id = cj.job_id
                cross join lateral job_target_rows(j.job_id) as x(e, ord)
                where cj.campaign = campaign_change_difference.name) as s on s.rn = n.rn
   where s.e is distinct from n.e
   order by coalesce(n.rn, s.rn) limit 1;
  if not found then
    return 'the approval differs (digest)';
  elsif v_diff.old is null then
    return format('it has %s targets, this approval has more: target %s (sorted by key) is %s', v_old.target_count, v_diff.rn, v_diff.new);
  elsif v_diff.new is null then
    return format('it has %s targets, this approval only %s', v_old.target_count, jsonb_array_length(campaign_change_difference.targets));
  end if;
  return format('target %s (sorted by key) is %s, this approval has %s', v_diff.rn, v_diff.old, v_diff.new);
end
$$;
comment on function {{ .schema }}.campaign_change_difference(text, text, text, integer, jsonb) is
  'chunks helper: the first difference (change, tenant, chunk_size, then the first target by sorted position) between campaign NAME as recorded and a new approval of it of the declared change CHANGE.';
