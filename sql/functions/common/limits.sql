-- The value rules of docs/contract.md §3, and the campaign bounds, defined
-- once (README "Decisions": the value rules, once). Every check of the code
-- package takes its numbers from here, through limit_of and the helpers of
-- validate.sql; tests/limits_test.go reads this object on a real server and
-- requires it to equal the Go driver's driver.ContractLimits(), key by key.
-- A literal, so an IMMUTABLE SQL function: the planner inlines it and folds
-- every limit_of(...) into a constant, in generic plans too, at no cost per
-- row or per call.
create or replace function {{ .schema }}.limits() returns jsonb
language sql immutable parallel safe
as $$
  select '{"name_max_length": 64,
           "targets_max": 64,
           "chunk_size_min": 1,
           "chunk_size_max": 10,
           "change_targets_max": 10000,
           "change_chunk_size_max": 1000,
           "max_chunks_max": 64,
           "input_max_bytes": 1048576,
           "campaign_targets_max": 1000000,
           "campaign_name_max_length": 57,
           "queue_window_min": 1,
           "queue_window_max": 10000,
           "target": {"id": {"min": 1, "max": 2147483647},
                      "revision": {"min": 0, "max": 2147483646},
                      "qty": {"min": 1, "max": 1000}}}'::jsonb
$$;
comment on function {{ .schema }}.limits() is
$c$The value rules of docs/contract.md §3, the one definition every check uses: job_id and tenant
are 1 to name_max_length of [A-Za-z0-9_-]; a target list has 1 to targets_max entries; each
target's id, revision and qty lie within target.<field>.min and .max; chunk_size is
chunk_size_min to chunk_size_max; a job of a declared change has 1 to change_targets_max targets
and a chunk_size of chunk_size_min to change_chunk_size_max; drain's max_chunks is 1 to max_chunks_max; a plan or items
file is at most input_max_bytes of JSON text (the Go and CLI faces); a campaign has at most
campaign_targets_max targets, a name of at most campaign_name_max_length characters (its job
ids add -NNNNNN) and a queue window of queue_window_min to queue_window_max jobs. The Go driver's
ContractLimits() is tested equal to it.$c$;

-- One number of limits(), by KEY (a top-level key, or target.<field>.min /
-- .max as 'id_min', 'qty_max', ...). Inlined and folded to a constant.
create or replace function {{ .schema }}.limit_of(key text) returns bigint
language sql immutable parallel safe
as $$
  select coalesce({{ .schema }}.limits() ->> key,
                  {{ .schema }}.limits() -> 'target' -> split_part(key, '_', 1) ->> split_part(key, '_', 2))::bigint
$$;
comment on function {{ .schema }}.limit_of(text) is
  'chunks helper: the number KEY of limits() (a top-level key, or FIELD_min / FIELD_max of a target''s field); inlined and folded to a constant.';

-- Whether VALUE lies within limits()' range NAME: NAME_min to NAME_max
-- (NAME a target's field, id, revision or qty, or a top-level pair such as
-- chunk_size or queue_window). The one range test of every check, fast path
-- or explainer. Polymorphic, so a bigint compares as bigint on run_chunk's
-- hot path and a jsonb number as numeric; inlined and folded either way.
create or replace function {{ .schema }}.in_range(name text, value anyelement) returns boolean
language sql immutable parallel safe
as $$
  select value >= {{ .schema }}.limit_of(name || '_min') and value <= {{ .schema }}.limit_of(name || '_max')
$$;
comment on function {{ .schema }}.in_range(text, anyelement) is
  'chunks helper: whether VALUE lies within limits()'' range NAME (NAME_min to NAME_max: id, revision, qty, chunk_size, queue_window); NULL for NULL. Inlined.';

-- The row-level rule of a target, its fast path: whether its id, revision
-- and qty all lie within limits() (false, not NULL, when one is NULL). A
-- set-based "no row has a problem" is count(*) filter (where not
-- target_in_range(...)) = 0; range_problem says what the first problem is.
create or replace function {{ .schema }}.target_in_range(id anyelement, revision anyelement, qty anyelement) returns boolean
language sql immutable parallel safe
as $$
  select coalesce({{ .schema }}.in_range('id', id) and {{ .schema }}.in_range('revision', revision)
                  and {{ .schema }}.in_range('qty', qty), false)
$$;
comment on function {{ .schema }}.target_in_range(anyelement, anyelement, anyelement) is
  'chunks helper: whether a target''s ID, REVISION and QTY all lie within limits() (false when one is NULL); the fast path of the target rule, inlined.';
