{{- /*
  A routed call of one job: <name>(tenant, job_id) on the router runs
  <name>(job_id) on the tenant's shard, as one autocommit transaction there.
  The job must be the tenant's: a job id is unique per shard only, and a
  shard holds many tenants, so a job of another tenant of the same shard is
  answered as missing. Parameters (with the install data): name, returns,
  missing ("conflict": CH409 "job x: not found for tenant t";
  "null": NULL, as inspect_job answers an unknown job), comment, and
  optionally args: the function's parameters after job_id, each "name type"
  or "name type default value" (pause_job_after(job_id, after integer) is
  (list "after integer")).
*/ -}}
{{- $args := default (list) .args }}
create or replace function {{ .schema }}.shard_{{ .name }}(tenant text, job_id text{{ range $args }}, {{ . }}{{ end }}) returns {{ .returns }}
language plproxy
as $$
  cluster '{{ .cluster }}';
  run on hashtext(tenant);
  select case when exists (select from {{ .shard_schema }}.jobs as j where j.job_id = job_id and j.tenant = tenant)
              then {{ .shard_schema }}.{{ .name }}(job_id{{ range $args }}, {{ index (splitList " " .) 0 }}{{ end }}) end;
$$;
comment on function {{ .schema }}.shard_{{ .name }}(text, text{{ range $args }}, {{ index (splitList " " .) 1 }}{{ end }}) is
  'chunks router helper: {{ .name }}(JOB_ID) on the shard of TENANT (PL/Proxy, RUN ON hashtext(tenant)) when the job there is TENANT''s, else NULL; call {{ .name }}(tenant, job_id) instead.';

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
{{- if eq .missing "conflict" }}
  if v_result is null then
    raise exception 'job %: not found for tenant %', {{ .name }}.job_id, {{ .name }}.tenant using errcode = 'CH409';
  end if;
{{- end }}
  return v_result;
end
$$;
comment on function {{ .schema }}.{{ .name }}(text, text{{ range $args }}, {{ index (splitList " " .) 1 }}{{ end }}) is
$c${{ .comment }}
Errors: 22023 bad tenant or job_id; 08006 the tenant's shard cannot be reached (the message names it).$c$;
