package cli

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// twoPersonLab is a lab under the policy two people, with alice an
// operator and bob an approver, each a login role that chunks runs as.
type twoPersonLab struct {
	*lab
	alice, bob         *clitest.Lab
	aliceRole, bobRole pgtest.Role
	aliceName, bobName string
	dir                string
}

func newTwoPersonLab(t *testing.T) *twoPersonLab {
	t.Helper()
	l := newLab(t)
	a, b := pgtest.NewRole(t, pgtest.DSN(), "alice"), pgtest.NewRole(t, pgtest.DSN(), "bob")
	wantOK(t, l.Chunks(t, "grant", "--operator", a.Name, "--approver", b.Name))
	wantOK(t, l.Chunks(t, "policy", "set", "--two-person"))
	as := func(r pgtest.Role) *clitest.Lab {
		return &clitest.Lab{Schema: l.Schema, ChunksDSN: r.DSN(pgtest.DSN())}
	}
	return &twoPersonLab{lab: l, alice: as(a), bob: as(b), aliceRole: a, bobRole: b, aliceName: a.Name, bobName: b.Name, dir: t.TempDir()}
}

// write writes text to the file name in the lab's directory and returns its path.
func (l *twoPersonLab) write(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(l.dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// digestLine is the 64 hex characters after "digest " in chunks plan's text.
var digestLine = regexp.MustCompile(`(?m)^digest ([0-9a-f]{64})$`)

// TestPlanMarkdown (issue 40): chunks plan --markdown is stable, a golden
// file: the plan of orders exactly (its digest does not depend on the
// schema); the plan of a declared change has the same sections and its
// generated function. --json's
// "digest" is the text's, and is what register records (job_digest);
// register --digest refuses any other.
func TestPlanMarkdown(t *testing.T) {
	t.Parallel()
	l := newTwoPersonLab(t)
	l.Exec(t, "insert into orders (id, tenant, qty, state, revision) select g, 'acme', 2, 'pending', 3 from generate_series(1, 4) g")
	l.Exec(t, "update orders set revision = 4 where id = 3") // a target that would not apply
	plan := l.write(t, "plan.json", `{"job_id": "q4", "tenant": "acme", "chunk_size": 2, "allow_partial": true, "targets": [
	  {"id": 4, "revision": 3, "qty": 2}, {"id": 3, "revision": 3, "qty": 2}, {"id": 1, "revision": 3, "qty": 2}]}`)
	r := l.alice.Chunks(t, "plan", "--markdown", plan)
	if r.Code != 3 || !strings.Contains(r.Stderr, "plan: job q4: 2 of 3 targets would be cancelled now, 1 would not") {
		t.Fatalf("plan --markdown of a plan with a moved order: %v", r)
	}
	golden(t, "plan-orders.md", r.Stdout)
	text := wantExitText(t, l.alice.Chunks(t, "plan", plan), 3)
	m := digestLine.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("plan prints no digest line:\n%s", text)
	}
	j := decode[map[string]any](t, l.alice.Chunks(t, "--json", "plan", plan))
	if j["digest"] != m[1] {
		t.Fatalf("--json digest %v, text %s", j["digest"], m[1])
	}
	// register --digest: another digest registers nothing; the one reviewed registers it, proposed.
	other := strings.Repeat("ab", 32)
	r = l.alice.Chunks(t, "register", "--digest", other, plan)
	if r.Code != 3 || !strings.Contains(r.Stderr, "register: the plan's digest is "+m[1]+", not "+other+" (the one reviewed)") {
		t.Fatalf("register --digest with another digest: %v", r)
	}
	if n := mustText(t, l.Conn, "select count(*)::text from jobs"); n != "0" {
		t.Fatalf("a refused register left %s jobs", n)
	}
	out := wantOK(t, l.alice.Chunks(t, "register", "--digest", m[1], plan))
	if !strings.Contains(out, "proposed job q4: 3 orders of acme, 2 per chunk (digest "+m[1]+")") {
		t.Fatalf("register --digest: %q", out)
	}
	if got := mustText(t, l.Conn, "select job_digest('q4')"); got != m[1] {
		t.Fatalf("job_digest %s, plan's %s", got, m[1])
	}

	// A declared change: its generated function is in the review.
	shop := l.UserSchema(t, `create table %[1]s.payments(payment_id bigint primary key, merchant_id integer not null, status text not null,
	  amount_cents integer not null, hold_reason text, lock_version integer not null default 0);
	insert into %[1]s.payments select g, 7, 'captured', 100 * g, null, 3 from generate_series(1, 3) g`)
	l.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	holds := l.write(t, "holds.json", `{"job_id": "h1", "tenant": "7", "chunk_size": 2, "allow_partial": true, "targets": [
	  {"payment_id": 2, "lock_version": 3, "amount_cents": 200, "reason": "chargeback | <b>#2</b>"},
	  {"payment_id": 1, "lock_version": 3, "amount_cents": 100, "reason": "chargeback"}]}`)
	r = l.alice.Chunks(t, "plan", "--markdown", "--change", "hold_payment", holds)
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("plan --markdown --change: %v", r)
	}
	// The same sections, and the generated function as change show has it,
	// fenced (the golden file stays the orders' plan: the function's text
	// is PostgreSQL's pg_get_functiondef, which each version prints its way).
	source := mustText(t, l.Conn, "select change_show('hold_payment') ->> 'source'")
	if !strings.Contains(r.Stdout, "| change | hold\\_payment (definition digest ") ||
		!strings.Contains(r.Stdout, "| now | 2 of 2 targets would be changed now, 0 would not |") ||
		!strings.Contains(r.Stdout, "\"reason\": \"chargeback | <b>#2</b>\"") ||
		!strings.HasSuffix(r.Stdout, "### The change's generated function\n\n```sql\n"+strings.TrimRight(source, "\n")+"\n```\n") {
		t.Errorf("plan --markdown --change:\n%s", r.Stdout)
	}
}

// golden fails unless got is testdata/name; with CHUNKS_GOLDEN=write it
// writes it instead (and fails, so that a run never passes on a write).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("CHUNKS_GOLDEN") == "write" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Errorf("wrote %s: check it, then run without CHUNKS_GOLDEN", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs (CHUNKS_GOLDEN=write rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// wantExitText is r's stdout, failing unless it exited code.
func wantExitText(t *testing.T, r clitest.Result, code int) string {
	t.Helper()
	if r.Code != code {
		t.Fatalf("want exit %d, got %v", code, r)
	}
	return r.Stdout
}

// TestSignedApproval (issue 40): bob approves with --sign: the SSH
// signature is kept with the approval and verify-approval checks it
// against an allowed signers file; ssh-keygen -Y verify agrees. A
// signature rewritten in the table, another key, another principal or a
// namespace not listed do not verify (exit 3); an unsigned approval is no
// evidence either.
func TestSignedApproval(t *testing.T) {
	t.Parallel()
	l := newTwoPersonLab(t)
	l.Exec(t, "insert into orders (id, tenant, qty, state, revision) select g, 'acme', 2, 'pending', 3 from generate_series(1, 4) g")
	plan := l.write(t, "plan.json", `{"job_id": "q4", "tenant": "acme", "chunk_size": 2, "allow_partial": true, "targets": [
	  {"id": 1, "revision": 3, "qty": 2}, {"id": 2, "revision": 3, "qty": 2}]}`)
	digest := decode[map[string]any](t, l.alice.Chunks(t, "--json", "register", plan))["digest"].(string)
	key, pub := sshKey(t), sshKey(t)
	keyFile := l.write(t, "bob_ed25519", string(pem.EncodeToMemory(key.block)))
	wantFailure(t, l.bob.Chunks(t, "approve", "--sign", keyFile, "q4"), 2, "--sign goes with --digest")
	out := wantOK(t, l.bob.Chunks(t, "approve", "--digest", digest, "--sign", keyFile, "q4"))
	if !strings.Contains(out, "job q4: approved the job, proposed by "+l.aliceName+" (digest "+digest+", signed)") {
		t.Fatalf("approve --sign: %q", out)
	}
	signers := l.write(t, "allowed_signers", fmt.Sprintf("# the approvers\n%s namespaces=\"chunks\" %s\n", l.bobName, key.authorized))
	out = wantOK(t, l.bob.Chunks(t, "verify-approval", "--allowed-signers", signers, "q4"))
	if want := fmt.Sprintf("job q4: run approved by %s (digest %s): signature verifies, key %s of %s\n", l.bobName, digest, key.fingerprint, l.bobName); out != want {
		t.Fatalf("verify-approval: %q, want %q", out, want)
	}
	// ssh-keygen reads what chunks wrote.
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		pgtest.RequireTool(t, err, "ssh-keygen (checks that chunks' signatures are OpenSSH's)", "openssh-client")
	} else {
		sig := l.write(t, "q4.sig", mustText(t, l.Conn, "select signature from proposals where job_id = 'q4'"))
		cmd := exec.Command("ssh-keygen", "-Y", "verify", "-f", signers, "-I", l.bobName, "-n", "chunks", "-s", sig)
		cmd.Stdin = strings.NewReader(digest)
		if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "Good \"chunks\" signature for "+l.bobName) {
			t.Fatalf("ssh-keygen -Y verify: %v\n%s", err, b)
		}
	}

	fails := func(what, signersText, part string) {
		t.Helper()
		r := l.bob.Chunks(t, "verify-approval", "--allowed-signers", l.write(t, "signers-"+strings.ReplaceAll(what, " ", "-"), signersText), "q4")
		if r.Code != 3 || !strings.Contains(r.Stdout+r.Stderr, part) || !strings.Contains(r.Stderr, "verify-approval: job q4: 1 of 1 approvals do not verify") {
			t.Errorf("%s: want exit 3 saying %q, got %v", what, part, r)
		}
	}
	fails("another key", fmt.Sprintf("%s %s\n", l.bobName, pub.authorized), "is not an allowed signer of "+l.bobName)
	fails("another principal", fmt.Sprintf("%s %s\n", l.aliceName, key.authorized), "is not an allowed signer of "+l.bobName)
	fails("another namespace", fmt.Sprintf("%s namespaces=\"git\" %s\n", l.bobName, key.authorized), "is not an allowed signer of "+l.bobName)
	// Tampered: the signature of another digest put in its place, by the owner.
	other, err := driver.SignDigest(pem.EncodeToMemory(key.block), strings.Repeat("0", 64))
	if err != nil {
		t.Fatal(err)
	}
	l.Exec(t, "update proposals set signature = $1 where job_id = 'q4'", other)
	fails("tampered", fmt.Sprintf("%s %s\n", l.bobName, key.authorized), "does not verify for digest "+digest)
	l.Exec(t, "update proposals set signature = null where job_id = 'q4'")
	fails("unsigned", fmt.Sprintf("%s %s\n", l.bobName, key.authorized), "not signed")
	wantFailure(t, l.bob.Chunks(t, "verify-approval", "--allowed-signers", l.write(t, "bad", "bob\n"), "q4"), 2,
		"allowed signers: line 1: want principals and a key")
}

// testKey is an SSH key for a test.
type testKey struct {
	block       *pem.Block
	authorized  string // its public key as an authorized_keys line, without the newline
	fingerprint string
}

func sshKey(t *testing.T) testKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := ssh.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	return testKey{block: block, authorized: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))), fingerprint: ssh.FingerprintSHA256(pub)}
}

// TestCampaignApprovedOnce (issue 40): alice reviews (campaign plan, which
// writes nothing) and creates a campaign of 10,000 orders under the policy
// two people; her worker, running, leaves every
// job queued and status says they wait for approval; alice cannot approve
// it, bob's wrong digest is refused, and bob's one campaign approve
// releases all its jobs: the worker then cancels each of the 10,000 orders
// exactly once.
func TestCampaignApprovedOnce(t *testing.T) {
	t.Parallel()
	l := newTwoPersonLab(t)
	l.Exec(t, "insert into orders (id, tenant, qty, state, revision) select g, 'acme', 2, 'pending', 3 from generate_series(1, 10000) g")
	var lines strings.Builder
	for id := 1; id <= 10000; id++ {
		fmt.Fprintf(&lines, `{"id": %d, "revision": 3, "qty": 2}`+"\n", id)
	}
	file := l.write(t, "targets.jsonl", lines.String())
	// The review first: campaign plan writes nothing, and its digest is the one create records.
	plan := wantOK(t, l.alice.Chunks(t, "campaign", "plan", "--markdown", "--tenant", "acme", "--chunk-size", "10", "--allow-partial", "big", file))
	planned := regexp.MustCompile(`\| digest \| \*\*([0-9a-f]{64})\*\* \|`).FindStringSubmatch(plan)
	if planned == nil || !strings.Contains(plan, "| targets | 10000 in 167 jobs, 10 per chunk |") ||
		!strings.Contains(plan, "| now | 10000 of 10000 targets would apply, 0 would not |") {
		t.Fatalf("campaign plan --markdown:\n%s", plan)
	}
	if n := mustText(t, l.Conn, "select (select count(*) from campaigns) + (select count(*) from jobs)"); n != "0" {
		t.Fatalf("campaign plan left %s rows", n)
	}
	out := wantOK(t, l.alice.Chunks(t, "campaign", "create", "--tenant", "acme", "--chunk-size", "10", "--allow-partial", "big", file))
	if !strings.Contains(out, "created campaign big: 10000 orders of acme in 167 jobs") {
		t.Fatalf("campaign create: %q", out)
	}
	digest := decode[driver.CampaignProgress](t, l.alice.Chunks(t, "--json", "campaign", "status", "big")).Digest
	if digest != planned[1] {
		t.Fatalf("campaign digest %s, planned %s", digest, planned[1])
	}
	worker := l.alice.Start(t, clitest.Options{}, "worker", "--concurrency", "2", "--poll", "100ms")
	defer func() {
		worker.Signal(t, syscall.SIGTERM)
		if r := worker.WaitWithin(t, time.Minute); r.Code != 0 {
			t.Errorf("worker: %v", r)
		}
	}()
	pgtest.WaitFor(t, 30*time.Second, "the worker's heartbeat", func() bool {
		return mustText(t, l.Conn, "select count(*)::text from workers") == "1"
	})
	time.Sleep(time.Second) // passes the worker makes now take nothing
	status := wantOK(t, l.alice.Chunks(t, "campaign", "approve", "big"))
	if !strings.Contains(status, "proposed by "+l.aliceName) || !strings.Contains(status, "167 jobs await approval") || !strings.Contains(status, "digest "+digest) {
		t.Fatalf("campaign approve without --digest: %q", status)
	}
	if n := mustText(t, l.Conn, "select count(*)::text from job_audit"); n != "0" {
		t.Fatalf("%s orders cancelled before the approval", n)
	}
	summary := wantOK(t, l.alice.Chunks(t, "status"))
	if !strings.Contains(summary, "167 jobs: 167 proposed") || !strings.Contains(summary, "167 jobs proposed, awaiting another role's approval") || !strings.Contains(summary, "none: proposed by "+l.aliceName+", awaiting approval") {
		t.Fatalf("status before the approval:\n%s", summary)
	}
	r := l.alice.Chunks(t, "campaign", "approve", "--digest", digest, "big")
	if r.Code != 1 || !strings.Contains(r.Stderr, "permission denied for function campaign_approve") || !strings.Contains(r.Stderr, "chunks grant --approver") {
		t.Fatalf("alice approves: %v", r)
	}
	wantFailure(t, l.bob.Chunks(t, "campaign", "approve", "--digest", strings.Repeat("0", 64), "big"), 3, "is not the campaign's digest")
	out = wantOK(t, l.bob.Chunks(t, "campaign", "approve", "--digest", digest, "big"))
	if !strings.Contains(out, "campaign big: approved 167 jobs as "+l.bobName) {
		t.Fatalf("campaign approve: %q", out)
	}
	pgtest.WaitFor(t, 2*time.Minute, "the campaign done", func() bool {
		return mustText(t, l.Conn, "select count(*)::text from orders where state = 'cancelled'") == "10000"
	})
	if got := mustText(t, l.Conn, `select format('%s %s %s %s', (select count(*) from job_audit), (select count(distinct id) from job_audit),
	    (select count(*) from proposals where approved_by = $1), (select count(distinct approved_at) from proposals))`, l.bobName); got != "10000 10000 167 1" {
		t.Fatalf("audit rows, orders, approvals by bob, approval times: %s", got)
	}
}
