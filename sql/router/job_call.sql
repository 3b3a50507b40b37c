{{- /*
  A routed call of one job: <name>(tenant, job_id, ...) on the router runs
  the same call, <name>(tenant, job_id, ...), on the tenant's shard, as one
  autocommit transaction there. The shard checks that the job is the
  tenant's (sql/functions/tenant_call.sql: a job id is unique per shard
  only, and a shard holds many tenants): a job of another tenant of the
  same shard is answered as missing there, CH409 or NULL. Parameters (with
  the install data): name, returns, comment, and optionally args: the
  function's parameters after job_id, each "name type" (pause_job_after is
  (list "after integer")).
*/ -}}
{{- $args := default (list) .args }}
create or replace function {{ .schema }}.shard_{{ .name }}(tenant text, job_id text{{ range $args }}, {{ . }}{{ end }}) returns {{ .returns }}
language plproxy
as $$
  cluster '{{ .cluster }}';
  run on hashtext(tenant);
  select {{ .shard_schema }}.{{ .name }}(tenant, job_id{{ range $args }}, {{ index (splitList " " .) 0 }}{{ end }});
$$;
comment on function {{ .schema }}.shard_{{ .name }}(text, text{{ range $args }}, {{ index (splitList " " .) 1 }}{{ end }}) is
  'chunks router helper: {{ .name }}(TENANT, JOB_ID) on the shard of TENANT (PL/Proxy, RUN ON hashtext(tenant)); call {{ .name }}(tenant, job_id) instead.';

create or replace function {{ .schema }}.{{ .name }}(tenant text, job_id text{{ range $args }}, {{ . }}{{ end }}) returns {{ .returns }}
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
set client_min_messages = warning -- PL/Proxy's routine NOTICE when it reconnects after an error
as $$
declare
  v_result {{ .returns }};
  v_state text;
  v_message text;
  v_detail text;
  v_hint text;
begin
  perform check_name({{ .name }}.tenant, 'tenant');
  perform check_name({{ .name }}.job_id, 'job_id');
  begin
    v_result := shard_{{ .name }}({{ .name }}.tenant, {{ .name }}.job_id{{ range $args }}, {{ $.name }}.{{ index (splitList " " .) 0 }}{{ end }});
  exception when others then
    get stacked diagnostics v_state = returned_sqlstate, v_message = message_text,
                            v_detail = pg_exception_detail, v_hint = pg_exception_hint;
    perform shard_error(shard_of({{ .name }}.tenant), v_state, v_message, v_detail, v_hint);
  end;
  return v_result;
end
$$;
comment on function {{ .schema }}.{{ .name }}(text, text{{ range $args }}, {{ index (splitList " " .) 1 }}{{ end }}) is
$c${{ .comment }}
Errors: 22023 bad tenant or job_id; 08006 the tenant's shard cannot be reached (the message names it).$c$;
