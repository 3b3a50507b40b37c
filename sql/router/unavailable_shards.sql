-- Which shards do not answer: a RUN ON ALL call fails as a whole when one
-- shard is down, and PL/Proxy does not say which; this asks each partition
-- on its own (RUN ON its number), one after the other, only after such a
-- failure.
create or replace function {{ .schema }}.shard_ping(partition integer) returns integer
language plproxy
as $$
  cluster '{{ .cluster }}';
  run on partition;
  select 1;
$$;
comment on function {{ .schema }}.shard_ping(integer) is
  'chunks router helper: SELECT 1 on partition PARTITION of the cluster {{ .cluster }} (PL/Proxy, RUN ON PARTITION).';

create or replace function {{ .schema }}.unavailable_shards() returns text
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_down text[] := '{}';
  v_n integer;
begin
  for v_n in 0 .. jsonb_array_length(shards()) - 1 loop
    begin
      perform shard_ping(v_n);
    exception when others then
      v_down := v_down || ('p' || v_n);
    end;
  end loop;
  return nullif(array_to_string(v_down, ', '), '');
end
$$;
comment on function {{ .schema }}.unavailable_shards() is
  'chunks router helper: the shards that do not answer now, as "p1" or "p1, p3"; NULL when every shard answers. One call per shard, one after the other.';
