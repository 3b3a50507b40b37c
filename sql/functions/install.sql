-- The chunks code package: every function, installed into one target schema.
-- tern code install sql/functions -c tern.conf   (or: chunks migrate)
-- CREATE OR REPLACE keeps each function's oid and any privileges a DBA granted,
-- so an upgrade replaces bodies and touches no data.
{{ template "validate.sql" . }}
{{ template "cancel_orders.sql" . }}
{{ template "job_problem.sql" . }}
{{ template "order_matches.sql" . }}
{{ template "register.sql" . }}
{{ template "inspect_job.sql" . }}
{{ template "cancel_chunk.sql" . }}
{{ template "run_lock_key.sql" . }}
{{ template "run_chunk.sql" . }}
{{ template "report.sql" . }}
{{ template "queue_channel.sql" . }}
{{ template "run_next_chunk.sql" . }}
{{ template "lock_unfinished_job.sql" . }}
{{ template "pause_job.sql" . }}
{{ template "resume_job.sql" . }}
{{ template "job_state.sql" . }}
{{ template "running_chunks.sql" . }}
{{ template "worker_status.sql" . }}
{{ template "job_rows.sql" . }}
{{ template "job_status.sql" . }}
{{ template "status_page.sql" . }}
{{ template "record_progress.sql" . }}
{{ template "worker_heartbeat.sql" . }}
{{ template "worker_gone.sql" . }}
