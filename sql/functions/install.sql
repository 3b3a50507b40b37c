-- The chunks code package: every function, installed into one target schema.
-- tern code install sql/functions -c tern.conf   (or: chunks migrate)
-- CREATE OR REPLACE keeps each function's oid and any privileges a DBA granted,
-- so an upgrade replaces bodies and touches no data.
{{ template "common/limits.sql" . }}
{{ template "common/validate.sql" . }}
{{ template "common/base_type.sql" . }}
{{ template "common/job_targets.sql" . }}
{{ template "changes/written_once.sql" . }}
{{ template "roles/writer_config.sql" . }}
{{ template "roles/writer_role.sql" . }}
{{ template "roles/writer_own.sql" . }}
{{ template "roles/writer_run.sql" . }}
{{ template "roles/writer_cast.sql" . }}
{{ template "roles/install_writer.sql" . }}
{{ template "contract/orders_change.sql" . }}
{{ template "contract/approval.sql" . }}
{{ template "approvals/policy.sql" . }}
{{ template "approvals/digests.sql" . }}
{{ template "approvals/propose_jobs.sql" . }}
{{ template "contract/state_before.sql" . }}
{{ template "contract/state_after.sql" . }}
{{ template "contract/order_problem.sql" . }}
{{ template "contract/change_orders_refused.sql" . }}
{{ template "contract/change_orders.sql" . }}
{{ template "contract/job_problem.sql" . }}
{{ template "contract/job_shape_problem.sql" . }}
{{ template "contract/valid_plan.sql" . }}
{{ template "contract/registration_problem.sql" . }}
{{ template "contract/job_identity_problem.sql" . }}
{{ template "contract/record_job.sql" . }}
{{ template "contract/register.sql" . }}
{{ template "contract/check_plan.sql" . }}
{{ template "contract/inspect_job.sql" . }}
{{ template "contract/cancel_chunk.sql" . }}
{{ template "contract/run_lock_key.sql" . }}
{{ template "contract/run_chunk.sql" . }}
{{ template "contract/report.sql" . }}
{{ template "queue/queue_channel.sql" . }}
{{ template "common/installed_version.sql" . }}
{{ template "campaigns/campaign_job_done.sql" . }}
{{ template "queue/run_next_chunk.sql" . }}
{{ template "queue/lock_unfinished_job.sql" . }}
{{ template "queue/abandon_job.sql" . }}
{{ template "queue/archive_jobs.sql" . }}
{{ template "undo/check_not_undone.sql" . }}
{{ template "queue/pause_job.sql" . }}
{{ template "queue/pause_job_after.sql" . }}
{{ template "queue/resume_job.sql" . }}
{{ template "queue/job_state.sql" . }}
{{ template "queue/running_chunks.sql" . }}
{{ template "queue/worker_lock_key.sql" . }}
{{ template "queue/worker_locks.sql" . }}
{{ template "queue/worker_status.sql" . }}
{{ template "status/jobs_drift.sql" . }}
{{ template "status/job_rows.sql" . }}
{{ template "status/job_status.sql" . }}
{{ template "status/status_page.sql" . }}
{{ template "queue/record_progress.sql" . }}
{{ template "queue/worker_heartbeat.sql" . }}
{{ template "queue/worker_gone.sql" . }}
{{ template "undo/register_undo_job.sql" . }}
{{ template "undo/register_undo.sql" . }}
{{ template "undo/job_lineage.sql" . }}
{{ template "campaigns/campaign_job_id.sql" . }}
{{ template "campaigns/campaign_difference.sql" . }}
{{ template "campaigns/check_campaign_spec.sql" . }}
{{ template "campaigns/campaign_taken_job.sql" . }}
{{ template "campaigns/campaign_record.sql" . }}
{{ template "campaigns/campaign_record_jobs.sql" . }}
{{ template "campaigns/campaign_create.sql" . }}
{{ template "campaigns/lock_campaign.sql" . }}
{{ template "campaigns/campaign_pause.sql" . }}
{{ template "campaigns/campaign_resume.sql" . }}
{{ template "campaigns/campaign_status.sql" . }}
{{ template "campaigns/campaign_report.sql" . }}
{{ template "campaigns/campaign_check.sql" . }}
{{ template "campaigns/campaign_undo.sql" . }}
{{ template "changes/check_change_owner.sql" . }}
{{ template "changes/check_change_name.sql" . }}
{{ template "changes/change_column.sql" . }}
{{ template "changes/change_key_catalog.sql" . }}
{{ template "changes/change_key.sql" . }}
{{ template "changes/change_audit_problem.sql" . }}
{{ template "changes/change_fields.sql" . }}
{{ template "changes/change_written.sql" . }}
{{ template "changes/change_function_names.sql" . }}
{{ template "changes/change_problem_start.sql" . }}
{{ template "changes/change_delete_problem.sql" . }}
{{ template "changes/change_cascade_sql.sql" . }}
{{ template "changes/change_table_problem.sql" . }}
{{ template "changes/change_key_problem.sql" . }}
{{ template "changes/change_code_warning.sql" . }}
{{ template "changes/change_sql_parts.sql" . }}
{{ template "changes/change_restore_parts.sql" . }}
{{ template "changes/change_function_sql.sql" . }}
{{ template "changes/change_check_sql.sql" . }}
{{ template "changes/generate_change.sql" . }}
{{ template "changes/define_change.sql" . }}
{{ template "changes/define_change_text.sql" . }}
{{ template "changes/drop_change.sql" . }}
{{ template "changes/retire_change.sql" . }}
{{ template "changes/change_list.sql" . }}
{{ template "changes/change_show.sql" . }}
{{ template "changes/change_target.sql" . }}
{{ template "changes/change_targets.sql" . }}
{{ template "changes/change_target_list_sql.sql" . }}
{{ template "changes/change_target_list.sql" . }}
{{ template "changes/change_named.sql" . }}
{{ template "changes/check_change_tenant.sql" . }}
{{ template "changes/valid_change_plan.sql" . }}
{{ template "campaigns/campaign_change.sql" . }}
{{ template "campaigns/campaign_change_difference.sql" . }}
{{ template "campaigns/campaign_create_change.sql" . }}
{{ template "changes/register_change.sql" . }}
{{ template "changes/check_change.sql" . }}
{{ template "changes/run_change_chunk.sql" . }}
{{ template "changes/skip_target.sql" . }}
{{ template "campaigns/campaign_skip.sql" . }}
{{ template "campaigns/campaign_archive.sql" . }}
{{ template "changes/change_report_job.sql" . }}
{{ template "changes/change_report_sql.sql" . }}
{{ template "changes/report_lists.sql" . }}
{{ template "campaigns/campaign_report_lists.sql" . }}
{{ template "verify/verify_job.sql" . }}
{{ template "approvals/approve.sql" . }}
{{ template "roles/grant_access.sql" . }}

-- The generated code of the contract's cancellation (orders_preview).
select {{ .schema }}.install_orders_functions();

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
select {{ .schema }}.regrant_access();
select {{ .schema }}.orders_code_warning();
