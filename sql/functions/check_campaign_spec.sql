-- Campaigns: what a campaign is besides its targets (campaign_create,
-- campaign_create_change), checked in one place: 22023 naming the field.
create or replace function {{ .schema }}.check_campaign_spec(name text, tenant text, chunk_size integer, queue_window integer)
returns void
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
begin
  perform check_name(check_campaign_spec.name, 'name');
  if length(check_campaign_spec.name) > 57 then
    raise exception 'name: must be at most 57 characters (job ids add -NNNNNN), got %', length(check_campaign_spec.name)
      using errcode = '22023';
  end if;
  perform check_name(check_campaign_spec.tenant, 'tenant');
  if check_campaign_spec.chunk_size is null or check_campaign_spec.chunk_size not between 1 and 10 then
    raise exception 'chunk_size: must be between 1 and 10, got %', coalesce(check_campaign_spec.chunk_size::text, 'null')
      using errcode = '22023';
  end if;
  if check_campaign_spec.queue_window is null or check_campaign_spec.queue_window not between 1 and 10000 then
    raise exception 'queue_window: must be between 1 and 10000, got %', coalesce(check_campaign_spec.queue_window::text, 'null')
      using errcode = '22023';
  end if;
end
$$;
comment on function {{ .schema }}.check_campaign_spec(text, text, integer, integer) is
  'chunks helper: 22023 naming the field unless NAME (at most 57 characters), TENANT, CHUNK_SIZE (1 to 10) and QUEUE_WINDOW (1 to 10000) can make a campaign.';
