-- What a routed call raises when its PL/Proxy call failed; the wrappers
-- call it from their exception handler with what they caught. Three cases:
--   * the shard's own error, which PL/Proxy passes on with its SQLSTATE as
--     "shard_run_chunk(2): [db] REMOTE ERROR: job x: not found": raised again
--     as the shard raised it (SQLSTATE, message, detail, hint), so a caller
--     reads exactly what a call on the shard itself says;
--   * the shard cannot be reached (PL/Proxy's own connection errors and
--     timeouts, XX000, or a shard that is shutting down or starting, 57P0x):
--     08006, naming the shard, with libpq's reason;
--   * anything else: raised again unchanged.
-- SHARD is the shard's name ("p2"), or several ("p1, p3").
create or replace function {{ .schema }}.shard_error(shard text, sqlstate text, message text, detail text, hint text)
returns void
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
declare
  v_state text := shard_error.sqlstate;
  v_message text := shard_error.message;
  v_detail text := nullif(shard_error.detail, ''); -- GET STACKED DIAGNOSTICS gives '' for none
  v_hint text := nullif(shard_error.hint, '');
  v_reason text;
  v_match text[];
begin
  v_match := regexp_match(shard_error.message, '^\S+\(\d+\): \[[^]]*\] REMOTE [A-Z]+: (.*)$');
  if v_match is not null then
    v_message := v_match[1];
    v_detail := regexp_replace(v_detail, '^Remote detail: ', '');
    v_hint := regexp_replace(v_hint, '^Remote hint: ', '');
    if shard_error.sqlstate like '57P%' then
      v_reason := v_match[1];
    end if;
  else
    v_match := regexp_match(shard_error.message,
                            '^PL/Proxy function \S+\(\d+\): (?:\[[^]]*\] PQ[A-Za-z]+: (.*)|(connect timeout|query timeout).*)$');
    if v_match is not null then
      v_reason := coalesce(v_match[1], v_match[2]);
    end if;
  end if;
  if v_reason is not null then
    -- libpq's reason is its first line; what follows is its advice.
    v_state := '08006';
    v_message := format('%s unavailable: %s',
                        case when shard_error.shard like '%,%' then 'shards ' || shard_error.shard || ' are'
                             else 'shard ' || coalesce(shard_error.shard, '?') || ' is' end,
                        btrim(split_part(v_reason, E'\n', 1)));
    v_detail := 'calls for the tenants of this shard fail until it is back; the other shards are not affected';
    v_hint := nullif(btrim(regexp_replace(substr(v_reason, length(split_part(v_reason, E'\n', 1)) + 1), '\s+', ' ', 'g')), '');
  end if;
  if v_detail is null and v_hint is null then
    raise exception using errcode = v_state, message = v_message;
  elsif v_hint is null then
    raise exception using errcode = v_state, message = v_message, detail = v_detail;
  elsif v_detail is null then
    raise exception using errcode = v_state, message = v_message, hint = v_hint;
  end if;
  raise exception using errcode = v_state, message = v_message, detail = v_detail, hint = v_hint;
end
$$;
comment on function {{ .schema }}.shard_error(text, text, text, text, text) is
$c$chunks router helper: raises what a routed call failed with. A shard's own error comes out as the shard
raised it (same SQLSTATE, message, detail and hint, without PL/Proxy's prefixes); a shard that cannot be
reached is 08006 "shard p2 is unavailable: <libpq's reason>"; anything else is raised unchanged.$c$;
