-- The chunks code package: every function, installed into one target schema.
-- tern code install sql/functions -c tern.conf   (or: chunks migrate)
-- CREATE OR REPLACE keeps each function's oid and any privileges a DBA granted,
-- so an upgrade replaces bodies and touches no data.
{{ template "limits.sql" . }}
{{ template "validate.sql" . }}
{{ template "writer_config.sql" . }}
{{ template "writer_role.sql" . }}
{{ template "writer_own.sql" . }}
{{ template "writer_run.sql" . }}
{{ template "writer_cast.sql" . }}
{{ template "install_writer.sql" . }}
{{ template "approval.sql" . }}
{{ template "state_before.sql" . }}
{{ template "state_after.sql" . }}
{{ template "order_problem.sql" . }}
{{ template "change_orders_refused.sql" . }}
{{ template "change_orders.sql" . }}
{{ template "job_problem.sql" . }}
{{ template "job_shape_problem.sql" . }}
{{ template "order_matches.sql" . }}
{{ template "valid_plan.sql" . }}
{{ template "registration_problem.sql" . }}
{{ template "record_job.sql" . }}
{{ template "register.sql" . }}
{{ template "check_plan.sql" . }}
{{ template "inspect_job.sql" . }}
{{ template "cancel_chunk.sql" . }}
{{ template "run_lock_key.sql" . }}
{{ template "run_chunk.sql" . }}
{{ template "report.sql" . }}
{{ template "queue_channel.sql" . }}
{{ template "installed_version.sql" . }}
{{ template "campaign_job_done.sql" . }}
{{ template "run_next_chunk.sql" . }}
{{ template "lock_unfinished_job.sql" . }}
{{ template "check_not_undone.sql" . }}
{{ template "pause_job.sql" . }}
{{ template "pause_job_after.sql" . }}
{{ template "resume_job.sql" . }}
{{ template "job_state.sql" . }}
{{ template "running_chunks.sql" . }}
{{ template "worker_lock_key.sql" . }}
{{ template "worker_locks.sql" . }}
{{ template "worker_status.sql" . }}
{{ template "change_job_drift.sql" . }}
{{ template "job_rows.sql" . }}
{{ template "job_status.sql" . }}
{{ template "status_page.sql" . }}
{{ template "record_progress.sql" . }}
{{ template "worker_heartbeat.sql" . }}
{{ template "worker_gone.sql" . }}
{{ template "register_change_undo.sql" . }}
{{ template "register_undo.sql" . }}
{{ template "job_lineage.sql" . }}
{{ template "campaign_job_id.sql" . }}
{{ template "campaign_difference.sql" . }}
{{ template "check_campaign_spec.sql" . }}
{{ template "campaign_taken_job.sql" . }}
{{ template "campaign_record.sql" . }}
{{ template "campaign_record_jobs.sql" . }}
{{ template "campaign_create.sql" . }}
{{ template "lock_campaign.sql" . }}
{{ template "campaign_pause.sql" . }}
{{ template "campaign_resume.sql" . }}
{{ template "campaign_committed_state.sql" . }}
{{ template "campaign_status.sql" . }}
{{ template "campaign_report.sql" . }}
{{ template "campaign_check.sql" . }}
{{ template "campaign_undo.sql" . }}
{{ template "check_change_owner.sql" . }}
{{ template "check_change_name.sql" . }}
{{ template "change_column.sql" . }}
{{ template "change_key_catalog.sql" . }}
{{ template "change_key.sql" . }}
{{ template "change_fields.sql" . }}
{{ template "change_written.sql" . }}
{{ template "change_problem_start.sql" . }}
{{ template "change_table_problem.sql" . }}
{{ template "change_key_problem.sql" . }}
{{ template "change_code_warning.sql" . }}
{{ template "change_sql_parts.sql" . }}
{{ template "change_restore_parts.sql" . }}
{{ template "change_function_sql.sql" . }}
{{ template "change_check_sql.sql" . }}
{{ template "generate_change.sql" . }}
{{ template "define_change.sql" . }}
{{ template "define_change_text.sql" . }}
{{ template "drop_change.sql" . }}
{{ template "change_list.sql" . }}
{{ template "change_show.sql" . }}
{{ template "change_target.sql" . }}
{{ template "change_key_sort.sql" . }}
{{ template "change_targets.sql" . }}
{{ template "change_target_list_sql.sql" . }}
{{ template "change_target_list.sql" . }}
{{ template "change_named.sql" . }}
{{ template "check_change_tenant.sql" . }}
{{ template "valid_change_plan.sql" . }}
{{ template "campaign_change.sql" . }}
{{ template "campaign_change_difference.sql" . }}
{{ template "campaign_create_change.sql" . }}
{{ template "change_job_problem.sql" . }}
{{ template "register_change.sql" . }}
{{ template "check_change.sql" . }}
{{ template "run_change_chunk.sql" . }}
{{ template "change_report_job.sql" . }}
{{ template "change_report_sql.sql" . }}
{{ template "report_change.sql" . }}
{{ template "campaign_change_report.sql" . }}
{{ template "campaign_change_check.sql" . }}
{{ template "grant_access.sql" . }}

-- Least privilege (README "Roles"): no function of chunks is executable by
-- PUBLIC, not even one a DBA opened to PUBLIC by hand; grant_access grants
-- them by role. The owner (and a superuser) can always execute them.
revoke all on all functions in schema {{ .schema }} from public;

-- The writer role, and every declared change's functions, made again by
-- this build's generator (install_writer, generate_change): an upgrade that
-- improves or fixes the generated code reaches the changes defined before
-- it. chunks migrate calls it again after handing the schema to its owner.
select {{ .schema }}.install_writer();
select {{ .schema }}.revoke_stray_grants();
select {{ .schema }}.orders_code_warning();
