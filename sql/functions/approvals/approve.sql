-- Two people (docs/safety.md "Two people"): what awaits approval, for
-- chunks approve JOB (without --digest) and the status.
create or replace function {{ .schema }}.proposal_json(p "{{ .schema }}".proposals) returns jsonb
language sql stable
set search_path = {{ .schema }}, pg_temp
as $$
  select jsonb_build_object('job_id', p.job_id, 'action', p.action, 'detail', p.detail, 'digest', p.digest,
                            'proposed_by', p.proposed_by, 'proposed_at', p.proposed_at,
                            'approved_by', p.approved_by, 'approved_at', p.approved_at, 'signature', p.signature)
$$;
comment on function {{ .schema }}.proposal_json("{{ .schema }}".proposals) is
  'chunks helper: a proposal as jsonb: {"job_id", "action", "detail", "digest", "proposed_by", "proposed_at", "approved_by", "approved_at", "signature"}.';

create or replace function {{ .schema }}.job_proposals(job_id text) returns jsonb
language plpgsql stable security definer
set search_path = {{ .schema }}, pg_temp
as $$
begin
  perform check_name(job_proposals.job_id, 'job_id');
  if not exists (select from jobs as j where j.job_id = job_proposals.job_id) then
    raise exception 'job %: not found', job_proposals.job_id using errcode = 'CH409';
  end if;
  return (select coalesce(jsonb_agg(proposal_json(p) order by p.id), '[]'::jsonb)
            from proposals as p where p.job_id = job_proposals.job_id);
end
$$;
comment on function {{ .schema }}.job_proposals(text) is
$c$Every proposal of job JOB_ID, oldest first: [{"job_id", "action" (run: the job itself; skip;
abandon), "detail" (a skip's key and reason, an abandon's reason), "digest" (what approve
takes), "proposed_by", "proposed_at", "approved_by", "approved_at" (null while it waits),
"signature"}, ...]; [] for a one-person job. Errors: 22023 bad job_id; CH409 unknown job.$c$;

-- The approval itself. The job's queue row, then its row, are locked as a
-- chunk locks them, so an approval and a chunk, a skip or an abandon of the
-- job happen one after the other.
create or replace function {{ .schema }}.approve(job_id text, digest text, signature text default null) returns jsonb
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
set lock_timeout = '5s'
as $$
declare
  v_p proposals;
begin
  perform check_name(approve.job_id, 'job_id');
  perform check_approval_input(approve.digest, approve.signature);
  perform from job_queue as q where q.job_id = approve.job_id for update;
  perform from jobs as j where j.job_id = approve.job_id for update;
  if not found then
    raise exception 'job %: not found', approve.job_id using errcode = 'CH409';
  end if;
  select * into v_p from proposals as p
   where p.job_id = approve.job_id and p.digest = approve.digest
   order by p.approved_at is null desc, p.id
   limit 1
     for update;
  if not found then
    if exists (select from proposals as p where p.job_id = approve.job_id and p.approved_at is null) then
      raise exception 'job %: digest % is not the digest of what was proposed; chunks approve % prints the plan and its digest',
        approve.job_id, approve.digest, approve.job_id using errcode = 'CH409';
    end if;
    raise exception 'job %: nothing of it awaits approval', approve.job_id using errcode = 'CH409';
  end if;
  if v_p.approved_at is not null then
    return proposal_json(v_p) || jsonb_build_object('approved', false);  -- approved already: nothing changes
  end if;
  perform approve_proposal(v_p, approve.signature);
  select * into v_p from proposals as p where p.id = v_p.id;
  return proposal_json(v_p) || jsonb_build_object('approved', true);
end
$$;
comment on function {{ .schema }}.approve(text, text, text) is
$c$Approves what awaits approval in job JOB_ID under DIGEST (chunks approve): the job itself (it
runs from now on; queue_channel() is notified), or a proposed skip or abandon of it, which is
done now, recorded as its proposer's. The approver is session_user, who must not be its
proposer (CH409), and needs the approver access (chunks grant --approver). The approval
records who, when and DIGEST, with the optional SIGNATURE (an armored SSH signature of DIGEST,
namespace chunks: evidence, kept as given; chunks verify-approval checks it). Returns
job_proposals' object for it and "approved" (false: it already was; nothing changed).
Errors: 22023 bad job_id, digest (64 lowercase hex) or signature; CH409 the proposer, an
unknown job, nothing awaits approval, a DIGEST that is not what was proposed, a job that is no
longer what was proposed, and whatever the approved skip or abandon raises.$c$;

create or replace function {{ .schema }}.check_approval_input(digest text, signature text) returns void
language plpgsql immutable
set search_path = {{ .schema }}, pg_temp
as $$
begin
  if digest is null or digest !~ '^[0-9a-f]{64}$' then
    raise exception 'digest: must be the 64 lowercase hex characters of the sha256 that chunks plan and chunks approve print, got %',
      coalesce(quote_literal(left(digest, 80)), 'null') using errcode = '22023';
  end if;
  if signature is not null and (length(signature) > 16384
                                or signature !~ '^-----BEGIN SSH SIGNATURE-----\n[A-Za-z0-9+/=\n]+-----END SSH SIGNATURE-----\n?$') then
    raise exception 'signature: must be an armored SSH signature (ssh-keygen -Y sign, at most 16384 characters), got % characters',
      length(signature) using errcode = '22023';
  end if;
end
$$;
comment on function {{ .schema }}.check_approval_input(text, text) is
  'chunks helper (approve, campaign_approve): 22023 unless DIGEST is 64 lowercase hex characters and SIGNATURE is NULL or an armored SSH signature.';

-- One waiting proposal P approved by session_user, on the job rows its
-- caller locked: recorded, then done (a skip, an abandon) or released (a
-- run: the workers hear of it).
create or replace function {{ .schema }}.approve_proposal(p "{{ .schema }}".proposals, signature text) returns void
language plpgsql volatile security invoker
set search_path = {{ .schema }}, pg_temp
as $$
begin
  if p.proposed_by = session_user then
    raise exception 'job %: you proposed it; another approver must approve', p.job_id using errcode = 'CH409';
  end if;
  if p.action = 'run' and job_digest(p.job_id) is distinct from p.digest then
    raise exception 'job %: the stored job is no longer what was proposed (its digest is %, proposed %)', p.job_id,
      job_digest(p.job_id), p.digest using errcode = 'CH409';
  end if;
  update proposals as x
     set approved_by = session_user, approved_at = now(), signature = approve_proposal.signature
   where x.id = p.id;
  case p.action
    when 'skip' then
      perform skip_job_target(p.job_id, p.detail -> 'key', p.detail ->> 'reason', p.proposed_by);
    when 'abandon' then
      perform abandon_job_as(p.job_id, p.detail ->> 'reason', p.proposed_by);
    else
      perform pg_notify(queue_channel(), p.job_id);
  end case;
end
$$;
comment on function {{ .schema }}.approve_proposal("{{ .schema }}".proposals, text) is
  'chunks helper (approve, campaign_approve): approves the waiting proposal P as session_user (CH409 when it proposed it) with SIGNATURE; a run proposal''s job must still have its digest (CH409); a skip or abandon is done, as its proposer''s.';

create or replace function {{ .schema }}.campaign_approve(name text, digest text, signature text default null) returns jsonb
language plpgsql volatile security definer
set search_path = {{ .schema }}, pg_temp
set lock_timeout = '5s'
as $$
declare
  v_campaign campaigns := lock_campaign(campaign_approve.name);
  v_p proposals;
  v_n integer := 0;
begin
  perform check_approval_input(campaign_approve.digest, campaign_approve.signature);
  if v_campaign.digest <> campaign_approve.digest then
    raise exception 'campaign %: digest % is not the campaign''s digest; chunks campaign plan and campaign status print it',
      v_campaign.name, campaign_approve.digest using errcode = 'CH409';
  end if;
  for v_p in
    select p.* from campaign_jobs as cj
      join proposals as p on p.job_id = cj.job_id and p.action = 'run' and p.approved_at is null
     where cj.campaign = v_campaign.name
     order by cj.seq
       for update of p
  loop
    perform approve_proposal(v_p, campaign_approve.signature);
    v_n := v_n + 1;
  end loop;
  -- Nothing approved now: approved already (nothing changes), or never proposed.
  if v_n = 0 and not exists (select from campaign_jobs as cj join proposals as p on p.job_id = cj.job_id and p.action = 'run'
                              where cj.campaign = v_campaign.name) then
    raise exception 'campaign %: nothing of it awaits approval (its jobs were not proposed)', v_campaign.name using errcode = 'CH409';
  end if;
  return jsonb_build_object('name', v_campaign.name, 'digest', v_campaign.digest, 'approved', v_n > 0, 'jobs', v_n,
                            'approved_by', session_user);
end
$$;
comment on function {{ .schema }}.campaign_approve(text, text, text) is
$c$Approves every proposed job of campaign NAME at once (chunks campaign approve), given the
campaign's DIGEST (campaign status and campaign plan print it), as approve approves one:
session_user must not be their proposer (CH409); SIGNATURE is kept with each job's approval.
Returns {"name", "digest", "approved" (false: nothing was waiting; nothing changed), "jobs",
"approved_by"}. Errors: 22023 bad digest or signature; CH409 the proposer, an unknown
campaign, a DIGEST that is not the campaign's, a campaign that was not proposed.$c$;
