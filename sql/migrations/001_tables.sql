-- The three tables of CONTRACT §2, in the target schema. IF NOT EXISTS, so a
-- schema that already holds them (a lab harness made them) installs as it is.
create table if not exists {{ .schema }}.orders(
  id integer primary key,
  tenant text not null,
  qty integer not null check (qty between 1 and 1000),
  state text not null check (state in ('pending', 'paid', 'cancelled')),
  revision integer not null check (revision >= 0)
);

create table if not exists {{ .schema }}.jobs(
  job_id text primary key,
  tenant text not null,
  targets jsonb not null,
  chunk_size integer not null check (chunk_size between 1 and 10),
  next_index integer not null check (next_index >= 0)
);

create table if not exists {{ .schema }}.job_audit(
  job_id text references {{ .schema }}.jobs(job_id),
  ordinal integer not null,
  id integer not null,
  previous_revision integer not null,
  new_revision integer not null,
  qty integer not null,
  primary key (job_id, ordinal),
  unique (job_id, id)
);
