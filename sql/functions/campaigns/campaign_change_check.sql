-- Campaigns: campaign_check for a campaign of a declared change: each job
-- of it judged by check_change (the generated check, no row lock), its
-- targets not yet committed counted and the first MAX_LISTED problems
-- listed by key ({"key", "problem"}).
create or replace function {{ .schema }}.campaign_change_check(name text, change text, max_listed integer) returns jsonb
language sql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
  with judged as materialized (
    select cj.seq, x.t, x.ord
      from campaign_jobs as cj
      join jobs as j on j.job_id = cj.job_id
     cross join lateral check_change(campaign_change_check.change,
                                     jsonb_build_object('job_id', j.job_id, 'tenant', j.tenant, 'targets', j.targets,
                                                        'chunk_size', j.chunk_size, 'allow_partial', true)) as ch(r)
     cross join lateral jsonb_array_elements(ch.r -> 'targets') with ordinality as x(t, ord)
     where cj.campaign = campaign_change_check.name and j.next_index < jsonb_array_length(j.targets)
  ),
  remaining as (select * from judged where not (judged.t -> 'committed')::boolean)
  select jsonb_build_object(
           'name', c.name, 'targets', c.target_count,
           'remaining', (select count(*) from remaining)::integer,
           'ok', (select count(*) from remaining where (remaining.t -> 'ok')::boolean)::integer,
           'problems', (select count(*) from remaining where not (remaining.t -> 'ok')::boolean)::integer,
           'listed', coalesce((select jsonb_agg(jsonb_build_object('key', l.t -> 'key', 'problem', l.t ->> 'problem') order by l.seq, l.ord)
                                 from (select * from remaining where not (remaining.t -> 'ok')::boolean
                                        order by remaining.seq, remaining.ord limit campaign_change_check.max_listed) as l), '[]'))
    from campaigns as c
   where c.name = campaign_change_check.name
$$;
comment on function {{ .schema }}.campaign_change_check(text, text, integer) is
  'chunks helper (campaign_check): check_change over every unfinished job of campaign NAME, a campaign of the declared change CHANGE, in campaign_check''s shape, the problems listed by key ({"key", "problem"}).';
