{{- /*
  A routed call of every shard at once: <name>() on the router evaluates
  the jsonb list <list> on every shard in parallel (PL/Proxy, RUN ON ALL)
  and returns one list of their entries, each with its "shard" added,
  ordered by the entry's <key>, then by shard. Each partition's connection
  names its shard in the setting chunks.shard (chunks router install puts it
  in the partition's options). When a shard cannot be reached, the call
  fails, naming every shard that does not answer. With placed, an entry
  (which then has a "tenant") is kept only under the partition that its
  tenant's calls go to: while two partitions share one database (halfway
  through a reshard) each lists its own tenants only. Parameters (with the
  install data): name, list (SQL, run on the shard), key, placed, comment.
*/ -}}
create or replace function {{ .schema }}.shard_{{ .name }}() returns setof jsonb
language plproxy
as $$
  cluster '{{ .cluster }}';
  run on all;
  select jsonb_build_object('shard', current_setting('chunks.shard', true), 'list', {{ .list }});
$$;
comment on function {{ .schema }}.shard_{{ .name }}() is
  'chunks router helper: {"shard", "list"} from every shard at once (PL/Proxy, RUN ON ALL); call {{ .name }}() instead.';

create or replace function {{ .schema }}.{{ .name }}() returns jsonb
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
set client_min_messages = warning -- PL/Proxy's routine NOTICE when it reconnects after an error
as $$
declare
  v_result jsonb;
{{- if .placed }}
  v_count integer := jsonb_array_length(shards());
{{- end }}
  v_state text;
  v_message text;
  v_detail text;
  v_hint text;
begin
  begin
    select coalesce(jsonb_agg(e.item || jsonb_build_object('shard', s.r ->> 'shard')
                              order by {{ if .key }}e.item ->> '{{ .key }}', {{ end }}substr(s.r ->> 'shard', 2)::integer), '[]'::jsonb)
      into v_result
      from shard_{{ .name }}() as s(r)
     cross join lateral jsonb_array_elements(s.r -> 'list') as e(item)
{{- if .placed }}
     where 'p' || (hashtext(e.item ->> 'tenant') & (v_count - 1)) = s.r ->> 'shard'
{{- end }};
  exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform shard_error(unavailable_shards(), v_state, v_message, v_detail, v_hint);
  end;
  return v_result;
end
$$;
comment on function {{ .schema }}.{{ .name }}() is
$c${{ .comment }}
Errors: 08006 when a shard cannot be reached (the message names every shard that does not answer).$c$;
