package cli

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/localpg"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// demoFacts are what the demo's story must tell.
var demoFacts = []string{
	"register returned true",
	"SIGKILL",
	"nothing of its chunk is visible: next_index 10, 10 audit rows, 10 orders cancelled",
	"40 approved, 40 committed, 0 remaining: 40 matching, 0 drifted, 0 missing",
	"drifted: 1003 1017; missing: 1025",
	"40 approved, 40 committed, 0 remaining: 37 matching, 2 drifted, 1 missing",
	"registered job alien-desert-festival-undo: it restores the 37 orders still as the job left them",
	"left alone, since they changed after the job: drifted 1003 1017; missing 1025",
	"4 calls restored 37 orders to pending, revision + 1, with one audit row each",
	"37 approved, 37 committed, 0 remaining: 37 matching, 0 drifted, 0 missing",
	"38 festival orders are pending again: 37 restored by the undo, 1 re-opened by hand before it",
	"the job alien-desert-festival now reports 0 matching and 39 drifted orders, and was undone by alien-desert-festival-undo",
}

func wantDemo(t *testing.T, r clitest.Result) {
	t.Helper()
	if r.Code != 0 || r.Signal != 0 {
		t.Fatalf("want exit 0, got %v", r)
	}
	at := 0 // the facts come in this order
	for _, fact := range demoFacts {
		i := strings.Index(r.Stdout[at:], fact)
		if i < 0 {
			t.Fatalf("the demo's output lacks %q after what came before it:\n%v", fact, r)
		}
		at += i + len(fact)
	}
	if !strings.Contains(r.Stdout[at:], "\n\n") || strings.Contains(r.Stdout[at:], "▸") {
		t.Fatalf("the demo does not end with the undo's report:\n%v", r)
	}
}

// TestDemo runs chunks demo on its own throwaway server: without --dsn on
// its command line it uses no database of the environment's, even with
// $CHUNKS_DSN and $CHUNKS_SCHEMA exported (as docs/psql.md's session has
// a newcomer do).
func TestDemo(t *testing.T) {
	t.Parallel()
	_, err := localpg.FindBinDir()
	pgtest.RequireTool(t, err, "the PostgreSQL server binaries (chunks demo starts a server)", "postgresql")
	admin := pgtest.Connect(t, pgtest.DSN())
	schemas := func() string {
		return mustText(t, admin, "select count(*)::text from pg_namespace where nspname in ('festival_demo', 'lab_of_the_env')")
	}
	before := schemas()
	r := clitest.RunWith(t, clitest.Options{Timeout: 60 * time.Second, Env: []string{"CHUNKS_DSN=" + pgtest.DSN(), "DATABASE_URL=" + pgtest.DSN(),
		"CHUNKS_SCHEMA=lab_of_the_env"}}, "demo")
	wantDemo(t, r)
	if !strings.Contains(r.Stdout, "Starting a throwaway PostgreSQL server") || !strings.Contains(r.Stdout, "Installing chunks into schema festival_demo\n") {
		t.Fatalf("the demo did not use a throwaway server and its own schema:\n%v", r)
	}
	if after := schemas(); after != before {
		t.Fatalf("the demo made schemas in the database of $CHUNKS_DSN: %s before, %s after", before, after)
	}
	m := regexp.MustCompile(`data in (\S+)`).FindStringSubmatch(r.Stdout)
	if m == nil || !strings.Contains(r.Stdout, "throwaway server is stopped and removed") {
		t.Fatalf("the demo does not say where its server was and that it is gone:\n%v", r)
	}
	if !strings.Contains(r.Stdout, "not durable (fsync, synchronous_commit and full_page_writes off, for speed): it is removed at the end") {
		t.Fatalf("the demo does not say that its throwaway server is not durable:\n%v", r)
	}
	if strings.Contains(r.Stdout, "psql") || !strings.Contains(r.Stdout, "run chunks demo --keep") {
		t.Fatalf("without --keep the demo must not offer a psql command for a server that is gone, and must point to --keep:\n%v", r)
	}
	if _, err := os.Stat(m[1]); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the throwaway server's folder %s is still there (%v)", m[1], err)
	}
}

// TestDemoKeep runs chunks demo --keep: the server stays, durable (the
// guides send newcomers there for every experiment, crash drills
// included); the psql command it prints reaches the story's data; the
// crash drill it prints restarts the server through crash recovery, as the
// user that owns its data, with nothing committed lost; and its stop
// command removes it, after that restart too.
func TestDemoKeep(t *testing.T) {
	t.Parallel()
	_, err := localpg.FindBinDir()
	pgtest.RequireTool(t, err, "the PostgreSQL server binaries (chunks demo starts a server)", "postgresql")
	r := clitest.RunWith(t, clitest.Options{Timeout: 60 * time.Second}, "demo", "--keep")
	wantDemo(t, r)
	m := regexp.MustCompile(`(?s)The server keeps running \(pid (\d+)\)\.\nLook at the data yourself:\n  psql "([^"]+)" -c '([^']+)'\n` +
		`See it on the status page \(then open http://127\.0\.0\.1:8080/\):\n  chunks serve --dsn "([^"]+)" --schema (\S+) --http 127\.0\.0\.1:8080\n` +
		`Crash drill: restart it as a crash would \(immediate shutdown, then crash recovery\), as the OS user (\S+),\non its data directory (\S+):\n  (.+)\n` +
		`Its new pid is then the first line of (\S+)\.\n` +
		`Stop it and remove its data with:\n  (.+)\n`).FindStringSubmatch(r.Stdout)
	if m == nil {
		t.Fatalf("the demo --keep does not say, in this order, that the server runs, how to look, how to see the page, how to crash it, how to stop it:\n%v", r)
	}
	pid, dsn, query, serveDSN, schema, osUser, dataDir, crash, pidFile, stop := m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[10]
	if export := regexp.MustCompile(`To point chunks at it:\n  export CHUNKS_DSN='([^']+)'\n`).FindStringSubmatch(r.Stdout); export == nil || export[1] != dsn {
		t.Fatalf("the demo --keep does not give the same connection string as an export CHUNKS_DSN line:\n%v", r)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("sh", "-c", stop).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", stop, err, out)
		}
		dir := regexp.MustCompile(`rm -rf (\S+)`).FindStringSubmatch(stop)
		if dir == nil {
			t.Errorf("the stop command %q removes no folder", stop)
		} else if _, err := os.Stat(dir[1]); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after %q the folder %s is still there (%v)", stop, dir[1], err)
		}
	})
	if !strings.Contains(r.Stdout, "durable (fsync, synchronous_commit and full_page_writes on, Postgres' defaults): it is kept") {
		t.Fatalf("the demo --keep does not say its server is durable:\n%v", r)
	}
	durable := func() string {
		conn := pgtest.Connect(t, dsn)
		return mustText(t, conn, "select concat_ws(' ', current_setting('fsync'), current_setting('synchronous_commit'), current_setting('full_page_writes'))")
	}
	if got := durable(); got != "on on on" {
		t.Fatalf("fsync, synchronous_commit, full_page_writes of the kept server: %s, want on on on", got)
	}
	wantStatusPage(t, serveDSN, schema)

	// The crash drill, as printed: as the user that owns the data directory.
	if pidFile != filepath.Join(dataDir, "postmaster.pid") {
		t.Fatalf("the new pid is in %s, not in the data directory %s", pidFile, dataDir)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dataDir, &st); err != nil {
		t.Fatal(err)
	}
	owner, err := user.LookupId(strconv.FormatUint(uint64(st.Uid), 10))
	if err != nil || owner.Username != osUser {
		t.Fatalf("the data directory %s belongs to %v (%v), the demo says to act as %s", dataDir, owner, err, osUser)
	}
	if out, err := exec.Command("sh", "-c", crash).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", crash, err, out)
	}
	text, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	newPID, _, _ := strings.Cut(string(text), "\n")
	if n, err := strconv.Atoi(newPID); err != nil || newPID == pid || syscall.Kill(n, 0) != nil {
		t.Fatalf("after the crash drill the first line of %s is %q (%v), the old pid %s", pidFile, newPID, err, pid)
	}
	if log, err := os.ReadFile(filepath.Join(filepath.Dir(dataDir), "server.log")); err != nil || !strings.Contains(string(log), "automatic recovery in progress") {
		t.Fatalf("the crash drill did not end in crash recovery (%v):\n%s", err, log)
	}
	if got := durable(); got != "on on on" {
		t.Fatalf("after the crash drill fsync, synchronous_commit, full_page_writes: %s, want on on on", got)
	}
	_, err = exec.LookPath("psql")
	pgtest.RequireTool(t, err, "psql", "postgresql-client")
	out, err := exec.Command("psql", dsn, "-At", "-c", query).CombinedOutput()
	if rows := strings.Split(strings.TrimSpace(string(out)), "\n"); err != nil || len(rows) != 40+37 {
		t.Fatalf("the printed psql command on the kept server, after the crash drill: %v, %d rows, want the 40 audit rows of the job and the 37 of its undo:\n%s",
			err, len(rows), out)
	}
}

// wantStatusPage runs the chunks serve command that the demo prints (on a
// free port instead of 8080) and finds the festival job on the page.
func wantStatusPage(t *testing.T, dsn, schema string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, "serve", "--dsn", dsn, "--schema", schema, "--http", "127.0.0.1:0")
	cmd.Env = pgtest.CleanEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	var log strings.Builder
	go func() {
		defer close(urls)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if m := regexp.MustCompile(`msg="serving.* url=(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
		}
	}()
	url, ok := <-urls
	if !ok {
		t.Fatalf("chunks serve never said where it serves: %v", cmd.Wait())
	}
	page := getPage(t, url)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for range urls { // to the end of its log
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chunks serve after SIGTERM: %v\n%s", err, log.String())
	}
	// The demo ends by undoing the festival: its 37 restored orders, and the
	// 3 that had drifted or gone, no longer look as it left them.
	for _, part := range []string{`<tr data-job="alien-desert-festival" class="state-done">`, `<span class="count">40/40</span>`,
		`<td class="drift">40</td>`, `<tr data-job="alien-desert-festival-undo" class="state-done">`, `<span class="count">37/37</span>`} {
		if !strings.Contains(page, part) {
			t.Fatalf("the status page of the demo lacks %q:\n%s", part, page)
		}
	}
}

func getPage(t *testing.T, url string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, body)
	}
	return string(body)
}

// TestDemoOnDSN runs chunks demo in a new schema of the test database and
// reads the story's end back from that schema.
func TestDemoOnDSN(t *testing.T) {
	t.Parallel()
	admin := pgtest.Connect(t, pgtest.DSN())
	demoSchemas := func() []string {
		rows, _ := admin.Query(ctx, "select nspname::text from pg_namespace where nspname like 'festival\\_demo\\_%' order by 1")
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	before := demoSchemas()
	var schema string // the demo's schema, once its output names it
	t.Cleanup(func() {
		drop := []string{schema}
		if schema == "" { // the output did not say: every new one
			drop = slices.DeleteFunc(demoSchemas(), func(name string) bool { return slices.Contains(before, name) })
		}
		for _, name := range drop {
			if _, err := admin.Exec(context.Background(), "drop schema if exists "+pgx.Identifier{name}.Sanitize()+" cascade"); err != nil {
				t.Errorf("drop schema %s: %v", name, err)
			}
		}
	})

	r := clitest.RunWith(t, clitest.Options{Timeout: 60 * time.Second}, "demo", "--dsn", pgtest.DSN())
	m := regexp.MustCompile(`The schema (festival_demo_[a-z0-9]+) stays in your database`).FindStringSubmatch(r.Stdout)
	if m == nil {
		t.Fatalf("the demo does not name its schema:\n%v", r)
	}
	schema = m[1]
	wantDemo(t, r)
	if slices.Contains(before, schema) {
		t.Fatalf("the demo reused the existing schema %s", schema)
	}
	restored := slices.DeleteFunc(seq(1001, 1040), func(id int64) bool { return id == 1003 || id == 1017 || id == 1025 })
	wantJSON(t, clitest.Run(t, "--dsn", pgtest.DSN(), "--schema", schema, "--json", "report", "alien-desert-festival"), driver.JobReport{
		Approved: seq(1001, 1040), Committed: seq(1001, 1040), Remaining: []int64{},
		Matching: []int64{}, Drifted: slices.DeleteFunc(seq(1001, 1040), func(id int64) bool { return id == 1025 }), Missing: []int64{1025},
	})
	wantJSON(t, clitest.Run(t, "--dsn", pgtest.DSN(), "--schema", schema, "--json", "report", "alien-desert-festival-undo"), driver.JobReport{
		Approved: restored, Committed: restored, Remaining: []int64{}, Matching: restored, Drifted: []int64{}, Missing: []int64{},
	})
	for job, want := range map[string]int{"alien-desert-festival": 40, "alien-desert-festival-undo": 37} {
		var audit int
		if err := admin.QueryRow(ctx, "select count(*) from "+pgx.Identifier{schema, "job_audit"}.Sanitize()+" where job_id = $1", job).
			Scan(&audit); err != nil || audit != want {
			t.Fatalf("%s.job_audit has %d rows of %s (%v), want %d", schema, audit, job, err, want)
		}
	}
}

// seq is first, first+1, ..., last.
func seq(first, last int64) []int64 {
	out := []int64{}
	for id := first; id <= last; id++ {
		out = append(out, id)
	}
	return out
}

// TestDemoKeepWithDSN: --keep keeps a throwaway server, so with --dsn it is a
// usage error, refused before anything starts.
func TestDemoKeepWithDSN(t *testing.T) {
	t.Parallel()
	wantFailure(t, clitest.Run(t, "demo", "--dsn", pgtest.DSN(), "--keep"), 2, "usage: demo --keep", "with --dsn there is none")
	wantFailure(t, clitest.Run(t, "--dsn", pgtest.DSN(), "demo", "--keep"), 2, "usage: demo --keep")
}

// mustText is the single text value of sql.
func mustText(t *testing.T, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	var s string
	if err := conn.QueryRow(ctx, sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}
