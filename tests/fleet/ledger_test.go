package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/localpg"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// cluster is a test's own PostgreSQL server, for the tests that crash it,
// fail it over or fill it up (the shared server of pgtest is left alone),
// with one migrated schema.
type cluster struct {
	srv      *localpg.Server
	schema   string
	operator pgtest.Role // what its workers run as (see lab)
}

// newCluster starts a server with opts, migrates a schema into it, and
// stops it (removing its folder) when the test ends.
func newCluster(t testing.TB, opts localpg.Options) *cluster {
	t.Helper()
	srv, err := localpg.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start a server of the test's own: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stop %v: %v", srv, err)
		}
	})
	l := labOn(t, srv.DSN())
	return &cluster{srv: srv, schema: l.Name, operator: l.operator}
}

// standby starts a streaming standby of the cluster's server, stopped when
// the test ends. The @embedded-postgres builds of the CI version matrix have
// no pg_basebackup, so there the test is skipped, also under CI=true: that
// is a property of those builds, not an optional tool the machine lacks, and
// the machine's own major runs the test.
func (c *cluster) standby(t testing.TB, opts localpg.StandbyOptions) *localpg.Server {
	t.Helper()
	sb, err := c.srv.StartStandby(ctx, opts)
	if errors.Is(err, localpg.ErrMissingBinary) {
		t.Skipf("needs a standby, and this PostgreSQL build cannot make one: %v", err)
	}
	if err != nil {
		t.Fatalf("start a standby: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Stop(); err != nil {
			t.Errorf("stop %v: %v", sb, err)
		}
	})
	return sb
}

// needStandbys skips the test, before it starts a server, when the
// PostgreSQL build cannot make standbys. The @embedded-postgres builds of
// the CI version matrix have no pg_basebackup; that is a property of those
// builds, not an optional tool the machine lacks, so the skip holds under
// CI=true too, and the machine's own major runs the test.
func needStandbys(t testing.TB) {
	t.Helper()
	bin, err := localpg.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bin, "pg_basebackup")); errors.Is(err, os.ErrNotExist) {
		t.Skipf("needs a standby, and this PostgreSQL build cannot make one: no pg_basebackup in %s "+
			"(the @embedded-postgres builds of the version matrix have none; the machine's own major runs this test)", bin)
	} else if err != nil {
		t.Fatal(err)
	}
}

// lab is a lab on the schema, on a new connection to srv (the cluster's
// server, or a promoted standby of it). Take a new one after a crash: the
// old connection is gone.
func (c *cluster) lab(t testing.TB, srv *localpg.Server) *lab {
	t.Helper()
	dsn := pgtest.WithSearchPath(srv.DSN(), c.schema)
	l := &lab{Lab: &clitest.Lab{Schema: &pgtest.Schema{Name: c.schema, DSN: dsn, Conn: pgtest.Connect(t, dsn)}}, base: srv.DSN(), operator: c.operator}
	l.ChunksDSN = l.chunksDSN(l.Name)
	return l
}

// multiHost is a DSN that reaches whichever of the servers takes writes, as
// a production DSN names a primary and its standbys.
func multiHost(servers ...*localpg.Server) string {
	var hosts, ports []string
	for _, s := range servers {
		hosts, ports = append(hosts, "127.0.0.1"), append(ports, fmt.Sprint(s.Port))
	}
	return fmt.Sprintf("host=%s port=%s user=postgres dbname=postgres sslmode=disable target_session_attrs=read-write",
		strings.Join(hosts, ","), strings.Join(ports, ","))
}

// startWorker starts "chunks --json worker --id name --verbose args..." on
// the cluster's schema through dsn, its connections named app, and does not
// wait for it to be ready.
func (c *cluster) startWorker(t testing.TB, dsn, app, name string, args ...string) *clitest.Proc {
	t.Helper()
	all := []string{"--dsn", c.operator.DSN(dsn) + " application_name=" + app, "--schema", c.schema, "--json",
		"worker", "--id", name, "--verbose"}
	return clitest.Start(t, clitest.Options{Name: name}, append(all, args...)...)
}

// readyLine is the JSON log line of a worker that runs.
const readyLine = `"msg":"ready"`

// committed is one "chunk committed" line of a worker's --json --verbose log:
// the worker acknowledged that the chunk that ends at NextIndex of Job
// committed.
type committed struct {
	Time      time.Time `json:"time"`
	Worker    string    `json:"worker"`
	Job       string    `json:"job"`
	NextIndex int       `json:"next_index"`
	IDs       int       `json:"ids"`
}

func (e committed) String() string {
	return fmt.Sprintf("%s up to %d (by %s at %s)", e.Job, e.NextIndex, e.Worker, e.Time.Format("15:04:05.000"))
}

// ledger is every chunk the workers logged as committed so far, as in a
// Jepsen history: what a client was told.
func ledger(t testing.TB, workers ...*clitest.Proc) []committed {
	t.Helper()
	var out []committed
	for _, w := range workers {
		for _, line := range w.Lines() {
			if !strings.HasPrefix(line, "{") || !strings.Contains(line, `"msg":"chunk committed"`) {
				continue
			}
			var e committed
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("%s: a log line that does not read: %v\n%s", w.Name, err, line)
			}
			if e.Job == "" || e.NextIndex <= 0 || e.IDs <= 0 {
				t.Fatalf("%s: a chunk committed line without its job and progress: %s", w.Name, line)
			}
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b committed) int { return a.Time.Compare(b.Time) })
	return out
}

// lost is the acknowledged chunks that progress (each job's next_index in a
// database) does not hold.
func lost(entries []committed, progress map[string]int) []committed {
	var out []committed
	for _, e := range entries {
		if e.NextIndex > progress[e.Job] {
			out = append(out, e)
		}
	}
	return out
}

// duplicated is the chunks acknowledged more than once (the same job and
// next_index), one entry for each extra acknowledgement.
func duplicated(entries []committed) []committed {
	seen := map[string]bool{}
	var out []committed
	for _, e := range entries {
		key := fmt.Sprintf("%s/%d", e.Job, e.NextIndex)
		if seen[key] {
			out = append(out, e)
		}
		seen[key] = true
	}
	return out
}

// wantLedgerHeld fails unless every acknowledged chunk is in progress and
// none was acknowledged twice, and says how many there were.
func wantLedgerHeld(t testing.TB, what string, entries []committed, progress map[string]int) {
	t.Helper()
	if l := lost(entries, progress); len(l) > 0 {
		t.Errorf("%s: %d of %d acknowledged chunks lost: %v (progress %v)", what, len(l), len(entries), l, progress)
	}
	if d := duplicated(entries); len(d) > 0 {
		t.Errorf("%s: %d chunks acknowledged twice: %v", what, len(d), d)
	}
	t.Logf("%s: %d acknowledged chunks, 0 lost, 0 acknowledged twice", what, len(entries))
}

// progressSum is the number of ids done over all jobs.
func progressSum(progress map[string]int) int {
	n := 0
	for _, k := range progress {
		n += k
	}
	return n
}

// seedJobs seeds and registers n jobs of 8 to 24 targets with chunk sizes 2
// to 4 on l.
func seedJobs(t testing.TB, l *lab, seed uint64, n int) []job {
	t.Helper()
	s := newSeeder(l, seed)
	var jobs []job
	for i := range n {
		j := s.job(t, fmt.Sprintf("job-%02d", i), 8+s.rng.IntN(17), 2+s.rng.IntN(3))
		l.register(t, j)
		jobs = append(jobs, j)
	}
	return jobs
}

// readyCount is how many times w logged that it runs: more than 1 would mean
// it started over.
func readyCount(w *clitest.Proc) int {
	n := 0
	for _, line := range w.Lines() {
		if strings.Contains(line, readyLine) {
			n++
		}
	}
	return n
}

// holdConnections opens connections to srv until the server refuses one with
// 53300 (too many connections), and closes them when the test ends or when
// release is called.
func holdConnections(t testing.TB, srv *localpg.Server) (held int, release func()) {
	t.Helper()
	var conns []*pgx.Conn
	for {
		conn, err := pgx.Connect(ctx, srv.DSN())
		if err != nil {
			if !strings.Contains(err.Error(), "53300") {
				t.Fatalf("connection %d: want 53300 (too many connections) once the server is full, got %v", len(conns)+1, err)
			}
			break
		}
		conns = append(conns, conn)
		if len(conns) > 500 {
			t.Fatal("500 connections and the server is not full")
		}
	}
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		for _, c := range conns {
			if err := c.Close(ctx); err != nil {
				t.Errorf("close a held connection: %v", err)
			}
		}
	}
	t.Cleanup(release)
	return len(conns), release
}
