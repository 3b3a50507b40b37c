-- Campaigns: what a campaign is besides its targets (campaign_create,
-- campaign_create_change), checked in one place: 22023 naming the field.
drop function if exists {{ .schema }}.check_campaign_spec(text, text, integer, integer);
create or replace function {{ .schema }}.check_campaign_spec(name text, tenant text, chunk_size integer, queue_window integer,
                                                             change boolean)
returns void
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
begin
  perform check_name(check_campaign_spec.name, 'name');
  if length(check_campaign_spec.name) > limit_of('campaign_name_max_length') then
    raise exception 'name: must be at most % characters (job ids add -NNNNNN), got %', limit_of('campaign_name_max_length'),
      length(check_campaign_spec.name) using errcode = '22023';
  end if;
  perform check_name(check_campaign_spec.tenant, 'tenant');
  if not check_campaign_spec.change and in_range('chunk_size', check_campaign_spec.chunk_size) is not true then
    raise exception '%', range_problem('chunk_size', check_campaign_spec.chunk_size) using errcode = '22023';
  end if;
  -- A declared change's chunks may be bigger (limits()' change_chunk_size_max).
  if check_campaign_spec.change and check_campaign_spec.chunk_size between limit_of('chunk_size_min') and limit_of('change_chunk_size_max') is not true then
    raise exception 'chunk_size: must be between % and %, got %', limit_of('chunk_size_min'), limit_of('change_chunk_size_max'),
      coalesce(check_campaign_spec.chunk_size::text, 'null') using errcode = '22023';
  end if;
  if in_range('queue_window', check_campaign_spec.queue_window) is not true then
    raise exception '%', range_problem('queue_window', check_campaign_spec.queue_window) using errcode = '22023';
  end if;
end
$$;
comment on function {{ .schema }}.check_campaign_spec(text, text, integer, integer, boolean) is
  'chunks helper: 22023 naming the field unless NAME (at most 57 characters), TENANT, CHUNK_SIZE (1 to 10; of a declared CHANGE, 1 to 1000) and QUEUE_WINDOW (1 to 10000) can make a campaign.';

-- Campaigns: N targets can make one campaign: at least one, at most
-- limits()' campaign_targets_max (campaign_create, campaign_create_change).
create or replace function {{ .schema }}.check_campaign_targets(n integer) returns void
language plpgsql immutable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
begin
  if check_campaign_targets.n = 0 then
    raise exception 'targets: the approval is empty' using errcode = '22023';
  end if;
  if check_campaign_targets.n > limit_of('campaign_targets_max') then
    raise exception 'targets: at most % per campaign, got %', limit_of('campaign_targets_max'), check_campaign_targets.n
      using errcode = '22023';
  end if;
end
$$;
comment on function {{ .schema }}.check_campaign_targets(integer) is
  'chunks helper: 22023 naming targets unless N targets (1 to limits()'' campaign_targets_max, 1000000) can make a campaign.';
