-- Shared input rules (docs/contract.md, "Input rules"). Every refusal is
-- SQLSTATE 22023 with a message that starts with the field it is about.

-- How an error shows a refused value: whole when it has at most 64
-- characters, else its first 64, '…' and its length, so that a hostile value
-- of a million characters makes a short message. QUOTED shows it as a JSON
-- string. The Go driver's Excerpt does the same. A plain SQL expression
-- (no SET clause, STABLE as to_jsonb is) so it inlines into target_problem.
create or replace function {{ .schema }}.excerpt(value text, quoted boolean) returns text
language sql stable parallel safe
as $$
  select case
    when value is null then 'null'
    when length(value) <= 64 then case when quoted then to_jsonb(value)::text else value end
    else case when quoted then to_jsonb(left(value, 64))::text else left(value, 64) end
         || '… (' || length(value) || ' characters)'
  end
$$;
comment on function {{ .schema }}.excerpt(text, boolean) is
  'chunks helper: VALUE as an error message shows it: whole up to 64 characters, else its first 64, … and its length; QUOTED as a JSON string.';

-- The server's own message about a refused VALUE (the sqlerrm of a failed
-- cast: 'invalid input syntax for type integer: "…"', '"1000…" is out of
-- range for type double precision'), shortened as every error shows a
-- refused value: where it quotes VALUE (as the input functions do), VALUE
-- becomes its excerpt; a message still longer than 256 characters (one
-- that quotes the value changed) is cut there, with its length. So a
-- constant or target of a million characters makes a short message.
create or replace function {{ .schema }}.excerpt_error(message text, value text) returns text
language sql stable parallel safe
set search_path = {{ .schema }}, pg_temp
as $$
  select case when length(m.text) <= 256 then m.text
              else left(m.text, 256) || '… (' || length(m.text) || ' characters)' end
    from (select case when length(excerpt_error.value) > 64
                      then replace(excerpt_error.message, excerpt_error.value, excerpt(excerpt_error.value, false))
                      else excerpt_error.message end) as m(text)
$$;
comment on function {{ .schema }}.excerpt_error(text, text) is
  'chunks helper: the server''s MESSAGE about a refused VALUE (a failed cast''s sqlerrm) with VALUE in it shown as excerpt() shows it, and cut at 256 characters (… and its length) if still longer.';

-- Whether VALUE is a name (job_id, tenant): 1 to limits()' name_max_length
-- ASCII letters, digits, _ or -. Inlined, its pattern folded to a constant.
create or replace function {{ .schema }}.is_name(value text) returns boolean
language sql immutable parallel safe
as $$
  select value ~ ('^[A-Za-z0-9_-]{1,' || cast({{ .schema }}.limit_of('name_max_length') as text) || '}$')
$$;
comment on function {{ .schema }}.is_name(text) is
  'chunks helper: whether VALUE is 1 to limits()'' name_max_length ASCII letters, digits, _ or - (NULL for NULL). Inlined.';

-- The explainer of in_range: NULL when VALUE lies within limits()' range
-- NAME, else 'NAME: must be between MIN and MAX, got VALUE' (an excerpt;
-- null for NULL). Callers prefix where it is (targets[3].). STABLE as
-- format() is, so it inlines.
create or replace function {{ .schema }}.range_problem(name text, value anyelement) returns text
language sql stable parallel safe
as $$
  select case when not coalesce({{ .schema }}.in_range(name, value), false) then
    format('%s: must be between %s and %s, got %s', name, {{ .schema }}.limit_of(name || '_min'),
           {{ .schema }}.limit_of(name || '_max'), {{ .schema }}.excerpt(value::text, false))
  end
$$;
comment on function {{ .schema }}.range_problem(text, anyelement) is
  'chunks helper: NULL when VALUE lies within limits()'' range NAME, else ''NAME: must be between MIN and MAX, got VALUE''. Inlined.';

create or replace function {{ .schema }}.check_name(value text, field text) returns void
language plpgsql immutable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
begin
  if check_name.value is null then
    raise exception '%: must be 1 to % ASCII letters, digits, _ or -, got null', check_name.field,
      limit_of('name_max_length') using errcode = '22023';
  end if;
  if length(check_name.value) > limit_of('name_max_length') then
    raise exception '%: must be 1 to % ASCII letters, digits, _ or -, got % characters',
      check_name.field, limit_of('name_max_length'), length(check_name.value) using errcode = '22023';
  end if;
  if not is_name(check_name.value) then
    raise exception '%: must be 1 to % ASCII letters, digits, _ or -, got %',
      check_name.field, limit_of('name_max_length'), excerpt(check_name.value, true) using errcode = '22023';
  end if;
end
$$;
comment on function {{ .schema }}.check_name(text, text) is
  'chunks helper: raises 22023 naming FIELD unless VALUE is 1 to 64 (limits()'' name_max_length) ASCII letters, digits, _ or -.';

-- An operator's decision's reason (abandon_job, skip_target): 1 to 500
-- characters that are not all blank, kept with the decision. WHAT is
-- what the reason says why of ("the job is abandoned").
create or replace function {{ .schema }}.check_reason(reason text, what text) returns void
language plpgsql immutable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
begin
  if check_reason.reason is null or btrim(check_reason.reason) = '' then
    raise exception 'reason: must say why %, got %', check_reason.what,
      case when check_reason.reason is null then 'null' else 'an empty text' end using errcode = '22023';
  end if;
  if length(check_reason.reason) > 500 then
    raise exception 'reason: at most 500 characters, got %', length(check_reason.reason) using errcode = '22023';
  end if;
end
$$;
comment on function {{ .schema }}.check_reason(text, text) is
  'chunks helper: raises 22023 naming the field reason unless REASON has 1 to 500 characters, not all blank (WHAT: what it says why of).';

-- One target entry, judged without raising: NULL when it is valid, else the
-- reason, prefixed with FIELD[POS]. A plain SQL expression so the planner
-- inlines it into the set-based checks of normalized_targets and run_chunk:
-- for that it has no SET clause and is STABLE, as format() is (an IMMUTABLE
-- label over a STABLE body would block inlining).
-- A jsonb number is an integer when its text has no fractional part, which is
-- exactly a numeric scale of 0 ('1.0'::jsonb keeps scale 1 and is refused).
create or replace function {{ .schema }}.target_problem(e jsonb, field text, pos bigint) returns text
language sql stable parallel safe
as $$
  select case
    when jsonb_typeof(e) is distinct from 'object' then
      format('%s[%s]: must be an object with the keys id, revision, qty, got %s',
             field, pos, coalesce(jsonb_typeof(e), 'null'))
    when not (e ?& array['id', 'revision', 'qty']) or (e - array['id', 'revision', 'qty']) <> '{}'::jsonb then
      format('%s[%s]: must have exactly the keys id, revision, qty, got %s', field, pos, {{ .schema }}.excerpt(e::text, false))
    when jsonb_typeof(e -> 'id') <> 'number' or scale((e -> 'id')::numeric) <> 0 then
      format('%s[%s].id: must be an integer, got %s', field, pos, {{ .schema }}.excerpt((e -> 'id')::text, false))
    when not {{ .schema }}.in_range('id', (e -> 'id')::numeric) then
      format('%s[%s].%s', field, pos, {{ .schema }}.range_problem('id', (e -> 'id')::numeric))
    when jsonb_typeof(e -> 'revision') <> 'number' or scale((e -> 'revision')::numeric) <> 0 then
      format('%s[%s].revision: must be an integer, got %s', field, pos, {{ .schema }}.excerpt((e -> 'revision')::text, false))
    when not {{ .schema }}.in_range('revision', (e -> 'revision')::numeric) then
      format('%s[%s].%s', field, pos, {{ .schema }}.range_problem('revision', (e -> 'revision')::numeric))
    when jsonb_typeof(e -> 'qty') <> 'number' or scale((e -> 'qty')::numeric) <> 0 then
      format('%s[%s].qty: must be an integer, got %s', field, pos, {{ .schema }}.excerpt((e -> 'qty')::text, false))
    when not {{ .schema }}.in_range('qty', (e -> 'qty')::numeric) then
      format('%s[%s].%s', field, pos, {{ .schema }}.range_problem('qty', (e -> 'qty')::numeric))
  end
$$;
comment on function {{ .schema }}.target_problem(jsonb, text, bigint) is
  'chunks helper: NULL when E is a valid target {id, revision, qty}, else why not, naming FIELD[POS].';

-- The rule of every target list, of orders or of a declared change: a
-- list of 1 to MAX targets (22023 naming FIELD otherwise): limits()'
-- targets_max for orders, change_targets_max for a declared change.
drop function if exists {{ .schema }}.check_target_list(jsonb, text);
create or replace function {{ .schema }}.check_target_list(items jsonb, field text, max bigint) returns void
language plpgsql immutable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
begin
  if jsonb_typeof(check_target_list.items) is distinct from 'array' then
    raise exception '%: must be a list of 1 to % targets, got %', check_target_list.field, check_target_list.max,
      coalesce(jsonb_typeof(check_target_list.items), 'null') using errcode = '22023';
  end if;
  if jsonb_array_length(check_target_list.items) not between 1 and check_target_list.max then
    raise exception '%: must be a list of 1 to % targets, got %', check_target_list.field, check_target_list.max,
      jsonb_array_length(check_target_list.items) using errcode = '22023';
  end if;
end
$$;
comment on function {{ .schema }}.check_target_list(jsonb, text, bigint) is
  'chunks helper: raises 22023 naming FIELD unless ITEMS is a list of 1 to MAX targets (limits()'' targets_max for orders, change_targets_max for a declared change).';

-- A valid target list, normalized into a new list sorted by id ascending.
create or replace function {{ .schema }}.normalized_targets(items jsonb, field text) returns jsonb
language plpgsql immutable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_problem text;
  v_duplicate integer;
begin
  perform check_target_list(normalized_targets.items, normalized_targets.field, limit_of('targets_max'));
  select s.problem into v_problem
    from (select target_problem(t.e, normalized_targets.field, t.ord - 1) as problem, t.ord
            from jsonb_array_elements(normalized_targets.items) with ordinality as t(e, ord)) as s
   where s.problem is not null
   order by s.ord
   limit 1;
  if v_problem is not null then
    raise exception '%', v_problem using errcode = '22023';
  end if;
  select d.id into v_duplicate
    from (select (t.e -> 'id')::integer as id from jsonb_array_elements(normalized_targets.items) as t(e)) as d
   group by d.id
  having count(*) > 1
   order by d.id
   limit 1;
  if v_duplicate is not null then
    raise exception '%: duplicate id %', normalized_targets.field, v_duplicate using errcode = '22023';
  end if;
  return (select jsonb_agg(jsonb_build_object('id', (t.e -> 'id')::integer,
                                              'revision', (t.e -> 'revision')::integer,
                                              'qty', (t.e -> 'qty')::integer)
                           order by (t.e -> 'id')::integer)
            from jsonb_array_elements(normalized_targets.items) as t(e));
end
$$;
comment on function {{ .schema }}.normalized_targets(jsonb, text) is
  'chunks helper: validates a list of 1 to 64 targets (22023 naming FIELD) and returns a new list sorted by id.';


-- targets_look_normal (below) on the jsonb text of the targets
-- (TARGETS_TEXT is targets::text). The group is non-capturing: a capturing one makes the
-- regex engine track every repetition, a third slower on 64 targets.
create or replace function {{ .schema }}.targets_text_look_normal(targets_text text) returns boolean
language sql immutable parallel safe
as $$
  select targets_text ~ '^\[\{"id": [0-9]{1,10}, "qty": [0-9]{1,10}, "revision": [0-9]{1,10}\}(?:, \{"id": [0-9]{1,10}, "qty": [0-9]{1,10}, "revision": [0-9]{1,10}\})*\]$'
$$;
comment on function {{ .schema }}.targets_text_look_normal(text) is
  'chunks helper: targets_look_normal on the jsonb text of a target list (TARGETS_TEXT = targets::text): a list of objects of exactly id, qty, revision as plain integers of at most 10 digits.';

-- The cheap guard on a stored target list: its jsonb text, which is
-- canonical, is a list of objects with exactly the keys id, qty, revision
-- (jsonb orders keys by length, then bytes) holding plain non-negative
-- integers of at most 10 digits (1.0 prints as 1.0 and fails). Ranges,
-- order and length are left to the caller. Inlined (immutable, no SET).
-- The test is on the text, so a caller that also needs the text (run_chunk
-- hashes it for the approval) makes it once and calls
-- targets_text_look_normal: turning 64 targets into text costs about as
-- much as the match itself.
create or replace function {{ .schema }}.targets_look_normal(targets jsonb) returns boolean
language sql immutable parallel safe
as $$
  select jsonb_typeof(targets) = 'array' and {{ .schema }}.targets_text_look_normal(targets::text)
$$;
comment on function {{ .schema }}.targets_look_normal(jsonb) is
  'chunks helper: whether stored TARGETS have the shape of a normalized list (objects of exactly id, qty, revision as plain integers); ranges and order are checked by the caller.';

-- A worker's id, as it is stored in the queue (paused_by) and shown by
-- chunks status: 1 to 63 printable ASCII characters, all that
-- application_name keeps (PostgreSQL cuts it at 63 bytes and turns every
-- other character into ?), so that the session a chunk runs in ("running
-- in") names the worker the worker list shows. No control or invisible
-- character can disguise what a terminal shows. A bad value is echoed as
-- an excerpt.
-- is_worker is its test, inlined (a plain SQL expression), so that a hot
-- caller (run_next_chunk) calls check_worker only to say why.
create or replace function {{ .schema }}.is_worker(worker text) returns boolean
language sql immutable parallel safe
as $$
  select worker ~ '^[\x20-\x7e]{1,63}$'
$$;
comment on function {{ .schema }}.is_worker(text) is
  'chunks helper: whether WORKER is 1 to 63 printable ASCII characters (check_worker''s test; NULL for NULL). Inlined.';

create or replace function {{ .schema }}.check_worker(worker text) returns void
language plpgsql immutable security invoker
set search_path = {{ .schema }}, pg_temp
as $$
begin
  if is_worker(check_worker.worker) is not true then
    raise exception 'worker: must be 1 to 63 printable ASCII characters (all that application_name keeps), got %',
      excerpt(check_worker.worker, true)
      using errcode = '22023';
  end if;
end
$$;
comment on function {{ .schema }}.check_worker(text) is
  'chunks helper: raises 22023 unless WORKER is 1 to 63 printable ASCII characters (what application_name keeps).';
