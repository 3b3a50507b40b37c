package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// twoPeople is a schema with the roles of docs/safety.md "Two people":
// alice (an operator) proposes, bob (an approver) approves, carol is a
// viewer, and dave is both an operator and an approver. The test's
// superuser owns the schema and sets the policy.
type twoPeople struct {
	*pgtest.Schema
	alice, bob, carol, dave *pgx.Conn
	names                   map[*pgx.Conn]string
}

func newTwoPeople(t *testing.T) *twoPeople {
	t.Helper()
	s := pgtest.NewSchema(t)
	tp := &twoPeople{Schema: s, names: map[*pgx.Conn]string{}}
	role := func(suffix string, access ...driver.Access) *pgx.Conn {
		r := pgtest.NewRole(t, pgtest.DSN(), suffix)
		for _, a := range access {
			if _, err := driver.Grant(ctx, s.Conn, r.Name, a); err != nil {
				t.Fatalf("grant %s %s: %v", a, r.Name, err)
			}
		}
		conn := pgtest.Connect(t, pgtest.WithSearchPath(r.DSN(pgtest.DSN()), s.Name))
		tp.names[conn] = r.Name
		return conn
	}
	tp.alice = role("alice", driver.Operator)
	tp.bob = role("bob", driver.Approver)
	tp.carol = role("carol", driver.Viewer)
	tp.dave = role("dave", driver.Operator, driver.Approver)
	return tp
}

// TestTwoPersonJob (issue 40): under the schema's two-person policy a job
// registered by alice is proposed: no chunk of it runs, the fleet's queue
// passes it over and status says why; alice cannot approve it (no
// approver access), dave (operator and approver) cannot approve his own,
// a wrong digest is refused, and bob's approval of the digest chunks plan
// printed lets it run. Its undo is a new plan that waits for its own
// approval; an abandon is proposed and done when approved. The approval
// tables are written by no one but the owner's functions, and only the
// owner sets the policy.
func TestTwoPersonJob(t *testing.T) {
	t.Parallel()
	p := newTwoPeople(t)
	alice, bob, carol, dave := p.alice, p.bob, p.carol, p.dave
	q := func(conn *pgx.Conn, sql string, args ...any) string { return pgtest.MustString(t, conn, sql, args...) }
	refuseAs := func(conn *pgx.Conn, code, msg, sql string, args ...any) {
		t.Helper()
		_, err := pgtest.TryString(conn, sql, args...)
		pgtest.WantPgError(t, err, code, msg)
	}

	// Only the owner sets the policy: alice may not even call set_policy.
	refuseAs(alice, "42501", "permission denied for function set_policy", "select set_policy(null, true)::text")
	sameJSON(t, "policy", q(p.Conn, "select ((set_policy(null, true) -> 0) - 'set_at' - 'set_by')::text"), `{"change": null, "two_person": true}`)
	sameJSON(t, "alice reads it", q(alice, "select jsonb_agg(x - 'set_at' - 'set_by')::text from jsonb_array_elements(policy_list()) x"),
		`[{"change": null, "two_person": true}]`)

	seedOrders(t, p.Schema, "acme", 1, 20)
	// The digest a reviewer approves, known before anything is written.
	digest := q(alice, "select plan_digest(null, $1) ->> 'digest'", plan("o1", "acme", 1, 10, 5))
	if len(digest) != 64 {
		t.Fatalf("plan_digest: got %q", digest)
	}
	sameJSON(t, "plan", q(alice, "select (plan_digest(null, $1) - 'digest')::text", plan("o1", "acme", 1, 3, 5)),
		`{"plan": {"job_id": "o1", "tenant": "acme", "targets": `+targets(1, 3)+`, "chunk_size": 5}, "change": null,
		  "change_digest": null, "two_person": true}`)

	// A viewer neither proposes nor approves.
	refuseAs(carol, "42501", "permission denied for function register", "select register($1)::text", plan("o1", "acme", 1, 10, 5))
	refuseAs(carol, "42501", "permission denied for function approve", "select approve('o1', $1)::text", digest)

	if q(alice, "select register($1)::text", plan("o1", "acme", 1, 10, 5)) != "true" {
		t.Fatal("register o1: not new")
	}
	a := p.names[alice]
	refuseAs(alice, "CH409", "job o1: proposed by "+a+", awaiting approval", "select run_chunk('o1')::text")
	if got := q(alice, "select coalesce(run_next_chunk('w')::text, 'none')"); got != "none" {
		t.Fatalf("a worker's pass took the proposed job: %s", got)
	}
	sameJSON(t, "status", q(carol, `select jsonb_build_object('state', j -> 'state', 'why', j -> 'pause_reason',
	    'approval', (j -> 'approval') - 'proposed_at')::text from jsonb_array_elements(job_status()) j where j ->> 'job_id' = 'o1'`),
		fmt.Sprintf(`{"state": "proposed", "why": "proposed by %s, awaiting approval", "approval": {"proposed_by": %q,
		  "approved_by": null, "approved_at": null, "digest": %q, "signed": false}}`, a, a, digest))
	sameJSON(t, "proposals", q(carol, "select jsonb_agg(x - 'proposed_at')::text from jsonb_array_elements(job_proposals('o1')) x"),
		fmt.Sprintf(`[{"job_id": "o1", "action": "run", "detail": {}, "digest": %q, "proposed_by": %q,
		  "approved_by": null, "approved_at": null, "signature": null}]`, digest, a))

	// alice is no approver; dave is, but not of what he proposed.
	refuseAs(alice, "42501", "permission denied for function approve", "select approve('o1', $1)::text", digest)
	if q(dave, "select register($1)::text", plan("o2", "acme", 11, 10, 5)) != "true" {
		t.Fatal("register o2: not new")
	}
	digest2 := q(dave, "select job_proposals('o2') -> 0 ->> 'digest'")
	refuseAs(dave, "CH409", "job o2: you proposed it; another approver must approve", "select approve('o2', $1)::text", digest2)
	// The wrong digest, and no digest at all.
	refuseAs(bob, "CH409", "job o1: digest "+digest2+" is not the digest of what was proposed; chunks approve o1 prints the plan and its digest",
		"select approve('o1', $1)::text", digest2)
	refuseAs(bob, "22023", "digest: must be the 64 lowercase hex characters of the sha256 that chunks plan and chunks approve print, got 'abc'",
		"select approve('o1', 'abc')::text")
	refuseAs(bob, "22023", "signature: must be an armored SSH signature (ssh-keygen -Y sign, at most 16384 characters), got 5 characters",
		"select approve('o1', $1, 'hello')::text", digest)

	// Nobody but the owner's functions writes the approval tables.
	for _, conn := range []*pgx.Conn{alice, bob, dave} {
		for _, sql := range []string{
			"insert into proposals (job_id, action, digest, proposed_by) values ('o1', 'run', repeat('a', 64), 'x')",
			"update proposals set approved_by = 'someone', approved_at = now()",
			"delete from proposals",
			"insert into approval_policy (scope, two_person) values ('', false)",
			"update approval_policy set two_person = false",
			"delete from approval_policy",
		} {
			_, err := conn.Exec(ctx, sql)
			if pgCode(err) != "42501" {
				t.Fatalf("%s as %s: want 42501, got %v", sql, p.names[conn], err)
			}
		}
	}

	sameJSON(t, "bob approves", q(bob, "select jsonb_build_object('approved', r -> 'approved', 'by', r -> 'approved_by', 'digest', r -> 'digest')::text from approve('o1', $1) r", digest),
		fmt.Sprintf(`{"approved": true, "by": %q, "digest": %q}`, p.names[bob], digest))
	sameJSON(t, "again", q(bob, "select (approve('o1', $1) -> 'approved')::text", digest), `false`)
	// The worker now takes o1 and never o2.
	for i := range 2 {
		if got := q(alice, "select run_next_chunk('w') ->> 'job_id'"); got != "o1" {
			t.Fatalf("pass %d: got %s", i, got)
		}
	}
	if got := q(alice, "select coalesce(run_next_chunk('w')::text, 'none')"); got != "none" {
		t.Fatalf("after o1: got %s", got)
	}
	sameJSON(t, "orders", ordersOf(t, p.Schema, 1, 20), strings.TrimSpace(`[`+orderStates(1, 10, "cancelled", 4)+`, `+orderStates(11, 20, "pending", 3)+`]`))

	// The undo of a two-person job is a new plan: proposed, whatever alice.
	sameJSON(t, "undo", q(alice, "select (register_undo('o1', 'o1-undo') -> 'job_id')::text"), `"o1-undo"`)
	refuseAs(alice, "CH409", "job o1-undo: proposed by "+a+", awaiting approval", "select run_chunk('o1-undo')::text")
	undoDigest := q(bob, "select job_proposals('o1-undo') -> 0 ->> 'digest'")
	if undoDigest == digest || undoDigest != q(p.Conn, "select job_digest('o1-undo')") {
		t.Fatalf("undo digest %s (job's %s)", undoDigest, digest)
	}
	q(bob, "select approve('o1-undo', $1)::text", undoDigest)
	sameJSON(t, "undo runs", q(alice, "select (run_chunk('o1-undo') -> 'next_index')::text"), `5`)

	// An abandon of a two-person job is proposed, and done when approved.
	sameJSON(t, "abandon proposed", q(alice, "select (abandon_job('o2', 'wrong customers') - 'digest' - 'proposed_at')::text"),
		fmt.Sprintf(`{"job_id": "o2", "abandoned": false, "by": null, "at": null, "reason": "wrong customers", "next_index": 0,
		  "targets": 10, "proposed": true, "action": "abandon", "proposed_by": %q}`, a))
	if got := q(carol, "select j ->> 'state' from jsonb_array_elements(job_status()) j where j ->> 'job_id' = 'o2'"); got != "proposed" {
		t.Fatalf("o2 after a proposed abandon: %s", got)
	}
	abandonDigest := q(carol, "select job_proposals('o2') -> 1 ->> 'digest'")
	refuseAs(alice, "42501", "permission denied for function approve", "select approve('o2', $1)::text", abandonDigest)
	q(dave, "select approve('o2', $1)::text", abandonDigest) // dave proposed o2, not its abandon
	sameJSON(t, "abandoned", q(carol, "select jsonb_build_object('state', j -> 'state', 'by', j -> 'paused_by')::text from jsonb_array_elements(job_status()) j where j ->> 'job_id' = 'o2'"),
		fmt.Sprintf(`{"state": "abandoned", "by": %q}`, a))

	// cancel_chunk changes orders without a job: refused under the policy.
	refuseAs(alice, "CH409", "cancel_chunk: the schema's policy is two people (set_policy), and cancel_chunk changes orders without a job: register a plan and have it approved",
		`select cancel_chunk('acme', '[{"id": 20, "revision": 3, "qty": 2}]')::text`)
	// Turned off, a new job is one person's again; a proposed one stays proposed.
	q(p.Conn, "select set_policy(null, false)::text")
	if q(alice, "select register($1)::text", plan("o3", "acme", 19, 2, 5)) != "true" {
		t.Fatal("register o3")
	}
	sameJSON(t, "o3 runs at once", q(alice, "select (run_chunk('o3') -> 'done')::text"), `true`)
}

// orderStates is ordersOf's text for orders first..last of acme in state
// with revision.
func orderStates(first, last int, state string, revision int) string {
	parts := make([]string, 0, last-first+1)
	for id := first; id <= last; id++ {
		parts = append(parts, fmt.Sprintf(`[%d, "acme", 2, %q, %d]`, id, state, revision))
	}
	return strings.Join(parts, ", ")
}

// TestTwoPersonSkip (issue 40): a skip in a two-person job of a declared
// change is proposed: the job stays stalled on its row until bob approves
// the skip's digest, which records it as alice's; a campaign skip of a
// two-person campaign is refused, and so is a policy for an unknown change.
func TestTwoPersonSkip(t *testing.T) {
	t.Parallel()
	p := newTwoPeople(t)
	q := func(conn *pgx.Conn, sql string, args ...any) string { return pgtest.MustString(t, conn, sql, args...) }
	shop := p.UserSchema(t, paymentsSQL)
	q(p.Conn, "select define_change($1)::text", pgtest.HoldPayment(shop))
	_, err := pgtest.TryString(p.Conn, "select set_policy('nope', true)::text")
	pgtest.WantPgError(t, err, "22023", "change: there is no change nope; chunks change list shows the declared ones")
	// The change's own setting: two people for hold_payment only.
	q(p.Conn, "select set_policy('hold_payment', true)::text")
	q(p.alice, "select register_change('hold_payment', $1)::text", changePlan("h", "7", paymentTargets(1, 2, 3), 3))
	digest := q(p.bob, "select job_proposals('h') -> 0 ->> 'digest'")
	q(p.bob, "select approve('h', $1)::text", digest)
	p.Exec(t, "update "+shop+".payments set lock_version = 9 where payment_id = 2")
	refuse(t, p.Schema, "CH409", "payment_id 2: lock_version is 9, approved 3", "select run_chunk('h')")

	a := p.names[p.alice]
	sameJSON(t, "skip proposed", q(p.alice, "select (skip_target('h', '2', 'edited by support') - 'digest' - 'proposed_at')::text"),
		fmt.Sprintf(`{"job_id": "h", "key": 2, "skipped": false, "by": null, "at": null, "reason": "edited by support", "found": null,
		  "paused": false, "proposed": true, "action": "skip", "proposed_by": %q}`, a))
	refuse(t, p.Schema, "CH409", "payment_id 2: lock_version is 9, approved 3", "select run_chunk('h')")
	skip := q(p.bob, "select job_proposals('h') -> 1 ->> 'digest'")
	if skip == digest {
		t.Fatal("the skip has the job's digest")
	}
	_, err = pgtest.TryString(p.alice, "select approve('h', $1)::text", skip)
	pgtest.WantPgError(t, err, "42501", "permission denied for function approve")
	sameJSON(t, "skip approved", q(p.bob, "select jsonb_build_object('action', r -> 'action', 'detail', r -> 'detail', 'approved', r -> 'approved')::text from approve('h', $1) r", skip),
		`{"action": "skip", "detail": {"key": 2, "reason": "edited by support"}, "approved": true}`)
	sameJSON(t, "the skip", q(p.Conn, "select jsonb_build_object('key', key, 'by', skipped_by, 'found', found)::text from job_skips where job_id = 'h'"),
		// (found in the approver's words: bob may not read the column)
		fmt.Sprintf(`{"key": "2", "by": %q, "found": "payment_id 2: lock_version is ? (you may not SELECT lock_version), approved 3"}`, a))
	sameJSON(t, "the chunk", q(p.alice, "select run_chunk('h')::text"), `{"processed": [1, 3], "next_index": 3, "done": true}`)

	// A campaign of the change is two-person too: its skips one by one.
	q(p.alice, "select campaign_create_change('hc', 'hold_payment', '7', 2, $1)::text", paymentTargets(4, 5))
	q(p.alice, "select campaign_pause('hc')::text")
	refuse(t, p.Schema, "CH409", "campaign hc: is two-person: each skip is approved on its own (chunks skip JOB KEY proposes one, chunks approve approves it)",
		"select campaign_skip('hc', 'x')")
}

// TestTwoPersonCampaignUndo (issue 40): the undo of a two-person campaign
// is a campaign of proposed jobs that one campaign_approve of its own
// digest releases; the proposer cannot, and the original's digest is not
// the undo's.
func TestTwoPersonCampaignUndo(t *testing.T) {
	t.Parallel()
	p := newTwoPeople(t)
	q := func(conn *pgx.Conn, sql string, args ...any) string { return pgtest.MustString(t, conn, sql, args...) }
	q(p.Conn, "select set_policy(null, true)::text")
	seedOrders(t, p.Schema, "acme", 1, 130)
	q(p.alice, "select campaign_create('c', 'acme', 10, array(select g from generate_series(1, 130) g), array_fill(3, array[130]), array_fill(2, array[130]))::text")
	digest := q(p.bob, "select campaign_status('c') ->> 'digest'")
	sameJSON(t, "approved", q(p.bob, "select (campaign_approve('c', $1) - 'approved_by')::text", digest),
		fmt.Sprintf(`{"name": "c", "digest": %q, "approved": true, "jobs": 3}`, digest))
	for q(p.alice, "select coalesce(run_next_chunk('w')::text, 'none')") != "none" {
	}
	if got := q(p.Conn, "select count(*)::text from orders where state = 'cancelled'"); got != "130" {
		t.Fatalf("cancelled after the approval: %s", got)
	}
	sameJSON(t, "undo", q(p.alice, "select (campaign_undo('c') - 'drifted' - 'missing')::text"),
		`{"name": "c-undo", "undoes": "c", "created": true, "jobs": 3, "targets": 130}`)
	undo := q(p.bob, "select campaign_status('c-undo') ->> 'digest'")
	sameJSON(t, "the undo waits", q(p.bob, `select jsonb_build_object('proposed', s -> 'jobs_proposed', 'by', s -> 'proposed_by', 'approved', s -> 'approved_by',
	    'stalled', s -> 'stalled')::text from campaign_status('c-undo') s`),
		fmt.Sprintf(`{"proposed": 3, "by": %q, "approved": null, "stalled": true}`, p.names[p.alice]))
	if got := q(p.alice, "select coalesce(run_next_chunk('w')::text, 'none')"); got != "none" {
		t.Fatalf("a pass took a job of the proposed undo: %s", got)
	}
	_, err := pgtest.TryString(p.bob, "select campaign_approve('c-undo', $1)::text", digest)
	pgtest.WantPgError(t, err, "CH409", "campaign c-undo: digest "+digest+" is not the campaign's digest; chunks campaign plan and campaign status print it")
	_, err = pgtest.TryString(p.dave, "select campaign_approve('c-undo', $1)::text", undo)
	if err != nil { // dave did not propose it: he may
		t.Fatalf("dave approves the undo: %v", err)
	}
	for q(p.alice, "select coalesce(run_next_chunk('w')::text, 'none')") != "none" {
	}
	if got := q(p.Conn, "select count(*)::text from orders where state = 'pending' and revision = 5"); got != "130" {
		t.Fatalf("pending again after the undo: %s", got)
	}
}
