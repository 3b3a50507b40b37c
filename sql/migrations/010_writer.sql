-- The writer (docs/roles.md "Code on your tables"): the role that reads and
-- writes the user's tables of declared changes, so that code attached to
-- such a table (a trigger, a policy, a domain's check) runs as a role that
-- holds nothing of chunks. One row at most; install_writer keeps it, from
-- chunks migrate --writer or the default <schema>_writer. The role owns the
-- generated functions that touch the user's tables and nothing else.
create table if not exists {{ .schema }}.change_writer(
  one boolean primary key default true check (one),
  role text not null,
  recorded_at timestamptz not null default now(),
  recorded_by text not null default session_user
);
