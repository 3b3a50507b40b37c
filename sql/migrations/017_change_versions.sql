-- Versions of a declared change (issue 38: "a change that has ever had a
-- job can never be dropped or redefined"). A change whose jobs have all
-- ended is retired (retire_change): its generated functions go, and its
-- row stays, with its definition and digest, for the record and for the
-- reports of its jobs, which find the definition they were approved
-- under by (name, digest), as before. A new definition under the name is
-- then a new row: a new version. At most one definition of a name is
-- live (not retired); only it has functions, runs, checks and undoes.
alter table {{ .schema }}.changes add column if not exists retired_at timestamptz;
alter table {{ .schema }}.changes add column if not exists retired_by text;
alter table {{ .schema }}.changes drop constraint if exists changes_pkey;
alter table {{ .schema }}.changes add primary key (name, digest);
create unique index if not exists changes_live on {{ .schema }}.changes (name) where retired_at is null;
