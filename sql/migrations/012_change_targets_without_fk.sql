-- A campaign of 1,000,000 targets writes 1,000,000 change_targets rows in
-- one statement, and a foreign key checks each row with a query of its own
-- (20 of the 26 s that insert took). The key added nothing the writers do
-- not already do: only campaign_record_jobs and record_job write
-- change_targets, in the statement after the change_jobs row they belong
-- to, and the written_once trigger refuses any UPDATE; no function of
-- chunks deletes a job. change_audit's key to jobs went for the same reason
-- (migration 011). verify checks that each job's targets are there.
alter table {{ .schema }}.change_targets drop constraint if exists change_targets_job_id_fkey;
