{{- /*
  The tenant-scoped signature of a job call: <name>(tenant, job_id, ...)
  runs <name>(job_id, ...) only when job JOB_ID is TENANT's, the same call
  that a chunks router exposes (sql/router/job_call.sql passes it through to
  the shard), so one text, "select <name>($1, $2, ...)", works on one server
  and through a router. A job of another tenant is answered as missing:
  CH409 "job x: not found for tenant t", or NULL (missing "null", as
  inspect_job answers an unknown job). A job's tenant never changes after
  register, so the check needs no lock; the call itself takes its own.
  Each job call's file ends with one template call of this file.
  Parameters (with the install data): name, returns, volatility (stable or
  volatile, as the function's), settings (the function's SET clauses, each
  "name = value"), missing ("conflict" or "null"), comment, and optionally
  args: the parameters after job_id, each "name type" (no defaults: a call
  of the one-job signature must never read as this one).
*/ -}}
{{- $args := default (list) .args }}
create or replace function {{ .schema }}.{{ .name }}(tenant text, job_id text{{ range $args }}, {{ . }}{{ end }}) returns {{ .returns }}
language plpgsql {{ .volatility }} security definer
set search_path = {{ .schema }}, pg_temp
{{- range default (list) .settings }}
set {{ . }}
{{- end }}
as $$
begin
  perform check_name({{ .name }}.tenant, 'tenant');
  perform check_name({{ .name }}.job_id, 'job_id');
  if not exists (select from jobs as j where j.job_id = {{ .name }}.job_id and j.tenant = {{ .name }}.tenant) then
{{- if eq .missing "null" }}
    return null;
{{- else }}
    raise exception 'job %: not found for tenant %', {{ .name }}.job_id, {{ .name }}.tenant using errcode = 'CH409';
{{- end }}
  end if;
  return {{ .name }}({{ .name }}.job_id{{ range $args }}, {{ $.name }}.{{ index (splitList " " .) 0 }}{{ end }});
end
$$;
comment on function {{ .schema }}.{{ .name }}(text, text{{ range $args }}, {{ index (splitList " " .) 1 }}{{ end }}) is
$c${{ .name }}(job_id{{ range $args }}, {{ index (splitList " " .) 0 }}{{ end }}) of job JOB_ID when it is TENANT's: {{ .comment }}
The same signature as on a chunks router. Errors: as {{ .name }}; 22023 bad tenant or job_id;
{{ if eq .missing "null" }}NULL{{ else }}CH409 "job x: not found for tenant t"{{ end }} when JOB_ID is no job of TENANT.$c$;
