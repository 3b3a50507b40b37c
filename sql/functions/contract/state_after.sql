-- The kinds of change a job applies (the table job_kind), in one place: the
-- state an order of the job has after its chunk changed it. NULL for an
-- unknown kind. A plain SQL expression so the planner inlines it (no SET
-- clause; its callers pin search_path).
create or replace function {{ .schema }}.state_after(kind text) returns text
language sql immutable parallel safe
as $$
  select case kind when 'cancel' then 'cancelled' when 'restore' then 'pending' end
$$;
comment on function {{ .schema }}.state_after(text) is
  'chunks helper: the state an order has after a job of KIND changed it: cancelled for cancel, pending for restore (an undo); NULL for any other kind.';
