package fleet

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// Two people on the status page and in the metrics (issue 40): a proposed
// job is in state proposed, with who proposed it and the digest, and is
// counted by chunks_jobs{state="proposed"}; once bob approves it, it is
// queued and the page says who approved it.
func TestProposedJobOnThePage(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	l.Exec(t, "select set_policy(null, true)")
	newJobs(t, l, "p", 4, 2) // proposed by the test's superuser
	me := pgtest.MustString(t, l.Conn, "select session_user::text")
	digest := pgtest.MustString(t, l.Conn, "select job_digest('p')")

	srv := clitest.Start(t, clitest.Options{Name: "serve"}, append(l.Globals(), "serve", "--http", ":0")...)
	base := servedURL(t, srv)
	page := fetch(t, "GET", base).body
	if !strings.Contains(page, `<tr data-job="p" class="state-proposed">`) || !strings.Contains(page, "proposed by "+me+" at ") ||
		!strings.Contains(page, "awaiting approval of "+digest[:12]) {
		t.Errorf("the page of a proposed job:\n%s", page)
	}
	fams := metrics(t, base+"metrics")
	if got := sample(t, fams, "chunks_jobs", "state", "proposed"); got != 1 {
		t.Errorf("chunks_jobs{state=proposed} %v, want 1", got)
	}

	bob := pgtest.NewRole(t, pgtest.DSN(), "bob")
	if _, err := driver.Grant(ctx, l.Conn, bob.Name, driver.Approver); err != nil {
		t.Fatal(err)
	}
	if _, err := driver.Approve(ctx, pgtest.Connect(t, pgtest.WithSearchPath(bob.DSN(pgtest.DSN()), l.Name)), "p", digest, ""); err != nil {
		t.Fatal(err)
	}
	fams = metrics(t, base+"metrics")
	if proposed, queued := sample(t, fams, "chunks_jobs", "state", "proposed"), sample(t, fams, "chunks_jobs", "state", "queued"); proposed != 0 || queued != 1 {
		t.Errorf("after the approval: chunks_jobs proposed %v, queued %v; want 0, 1", proposed, queued)
	}
	page = fetch(t, "GET", base).body
	if !strings.Contains(page, `<tr data-job="p" class="state-queued">`) || !strings.Contains(page, "proposed by "+me+", approved by "+bob.Name+" at ") {
		t.Errorf("the page of an approved job:\n%s", page)
	}
	srv.Signal(t, syscall.SIGTERM)
	if r := srv.WaitWithin(t, time.Minute); r.Code != 0 {
		t.Errorf("serve: %v", r)
	}
}
