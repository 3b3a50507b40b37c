-- Placement: the shard of a tenant, by PL/Proxy's own rule. A routed call
-- says RUN ON hashtext(tenant), and PL/Proxy takes the partition
-- hashtext(tenant) & (N - 1) of its N (a power of 2). This function names
-- it, for errors and for applications that place a tenant's orders.
create or replace function {{ .schema }}.shard_of(tenant text) returns text
language plpgsql stable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_count integer := jsonb_array_length(shards());
begin
  perform check_name(shard_of.tenant, 'tenant');
  if v_count = 0 then
    raise exception 'router: the cluster {{ .cluster }} has no shards (run chunks router install)' using errcode = '55000';
  end if;
  return 'p' || (hashtext(shard_of.tenant) & (v_count - 1));
end
$$;
comment on function {{ .schema }}.shard_of(text) is
$c$The shard ("p0" ... "pN-1") that holds every order, job, audit and queue row of TENANT:
partition hashtext(tenant) & (N - 1) of the N shards, as PL/Proxy's RUN ON hashtext(tenant)
picks it. Put a tenant's orders there. Errors: 22023 bad tenant.$c$;
