-- The kinds of change a job applies (the table job_kind), in one place: the
-- state an order of the job must be in before its chunk changes it. NULL
-- for an unknown kind, which then matches no order. A plain SQL expression
-- so the planner inlines it (no SET clause; its callers pin search_path).
create or replace function {{ .schema }}.state_before(kind text) returns text
language sql immutable parallel safe
as $$
  select case kind when 'cancel' then 'pending' when 'restore' then 'cancelled' end
$$;
comment on function {{ .schema }}.state_before(text) is
  'chunks helper: the state an order must have before a job of KIND changes it: pending for cancel, cancelled for restore (an undo); NULL for any other kind.';
