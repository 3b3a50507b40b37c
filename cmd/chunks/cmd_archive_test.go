package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

func TestArchiveOptions(t *testing.T) {
	for age, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "90m": 90 * time.Minute, "0": 0} {
		if got, err := parsed(t, parseArchive, "archive", "--finished-before", age).age(); err != nil || got != want {
			t.Errorf("--finished-before %s: %v, %v", age, got, err)
		}
	}
	wantInvalid(t, &archiveOptions{Age: "-1h"}, "finished-before: must be an age such as 30d, 12h or 90m (0 or more), got \"-1h\"")
	wantInvalid(t, &archiveOptions{Age: "soon"}, "finished-before: must be an age")
	wantExit(t, chunksIn(t, nil, "", "archive"), 2, "archive needs --finished-before AGE")
}

// chunks archive and campaign archive through the binary: the ended job
// leaves chunks status --all, report still answers; an unfinished
// campaign is refused.
func TestArchiveRun(t *testing.T) {
	l := clitest.NewLab(t)
	newJob(t, l, "j1", "acme", 2, 2)
	l.Exec(t, "insert into orders (id, tenant, qty, state, revision) values (3, 'acme', 1, 'pending', 1)")
	if _, err := driver.Register(ctx, l.Conn, driver.Plan{JobID: "j2", Tenant: "acme", ChunkSize: 1, AllowPartial: true,
		Targets: []driver.Target{{ID: 3, Revision: 1, Qty: 1}}}); err != nil {
		t.Fatal(err)
	}
	runChunk(t, l, "j1")
	wantOut(t, chunksIn(t, l, "", "archive", "--finished-before", "1h"), "no job ended more than 1h ago that is not archived; nothing changed\n")
	wantOut(t, chunksIn(t, l, "", "archive", "--finished-before", "0"), "archived 1 job: j1 (chunks report JOB still answers)\n")
	if r := chunksIn(t, l, "", "status", "--all"); r.Code != 0 || strings.Contains(r.Stdout, "j1") || !strings.Contains(r.Stdout, "j2") {
		t.Errorf("status --all after the archive: %v", r)
	}
	if r := chunksIn(t, l, "", "report", "j1"); r.Code != 0 || !strings.Contains(r.Stdout, "job j1: 2 approved, 2 committed") {
		t.Errorf("report of the archived job: %v", r)
	}
	wantExit(t, chunksIn(t, l, "", "campaign", "archive", "nope"), 3, "campaign nope: not found")
}
