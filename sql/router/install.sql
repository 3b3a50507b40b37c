-- The chunks router code package: the routing functions of a router
-- database, installed into its schema by chunks router install (which first
-- makes the PL/Proxy cluster {{ .cluster }}: a foreign server with one
-- partition p0 ... pN-1 per shard). The router holds no chunks data: every
-- call runs on the one shard that hashtext(tenant) picks, as one autocommit
-- transaction there, in the shards' chunks schema {{ .shard_schema }}.
--
-- Each routed call has one file with two functions: shard_<name>, the
-- PL/Proxy function that runs it on the shard, and <name>, the PL/pgSQL
-- wrapper that callers use. The wrapper checks the tenant (it picks the
-- shard), and turns PL/Proxy's errors into the shard's own error, or into
-- one that names a shard that cannot be reached (shard_error). Most are
-- one template call: the calls of one job, (tenant, job_id, ...), share
-- job_call.sql; the calls of a plan, plan_call.sql; the calls of every shard
-- at once, all_call.sql. A new routed call is one more file and one more
-- line below.
--
-- limits.sql and validate.sql are the chunks code package's own (limits,
-- check_name, excerpt).
{{ template "limits.sql" . }}
{{ template "validate.sql" . }}
{{ template "shards.sql" . }}
{{ template "shard_of.sql" . }}
{{ template "shard_error.sql" . }}
{{ template "unavailable_shards.sql" . }}
{{ template "check_shards.sql" . }}
{{ template "register.sql" . }}
{{ template "register_change.sql" . }}
{{ template "check_change.sql" . }}
{{ template "plan_digest.sql" . }}
{{ template "check_plan.sql" . }}
{{ template "cancel_chunk.sql" . }}
{{ template "inspect_job.sql" . }}
{{ template "run_chunk.sql" . }}
{{ template "report.sql" . }}
{{ template "pause_job.sql" . }}
{{ template "pause_job_after.sql" . }}
{{ template "abandon_job.sql" . }}
{{ template "skip_target.sql" . }}
{{ template "resume_job.sql" . }}
{{ template "register_undo.sql" . }}
{{ template "job_lineage.sql" . }}
{{ template "job_status.sql" . }}
{{ template "worker_status.sql" . }}
{{ template "status_page.sql" . }}
