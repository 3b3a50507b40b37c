package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/localpg"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

var ctx = context.Background()

// unreachableDSN is a server that is not there: connecting fails at once.
const unreachableDSN = "host=127.0.0.1 port=1 user=nobody dbname=nothing sslmode=disable connect_timeout=2"

// wantOK fails unless r exited 0 with nothing on stderr, and returns stdout.
func wantOK(t testing.TB, r clitest.Result) string {
	t.Helper()
	if r.Code != 0 || r.Signal != 0 || r.Stderr != "" {
		t.Fatalf("want exit 0 and an empty stderr, got %v", r)
	}
	return r.Stdout
}

// wantFailure fails unless r exited with code, with one line on stderr that
// starts with "chunks: " and contains every part, and nothing on stdout.
func wantFailure(t testing.TB, r clitest.Result, code int, parts ...string) {
	t.Helper()
	if r.Code != code || r.Signal != 0 {
		t.Fatalf("want exit %d, got %v", code, r)
	}
	if r.Stdout != "" {
		t.Fatalf("want an empty stdout on failure, got %v", r)
	}
	wantErrorLine(t, r, parts...)
}

// wantErrorLine fails unless stderr is one line that starts with "chunks: "
// and contains every part.
func wantErrorLine(t testing.TB, r clitest.Result, parts ...string) {
	t.Helper()
	if !strings.HasPrefix(r.Stderr, "chunks: ") || !strings.HasSuffix(r.Stderr, "\n") || strings.Count(r.Stderr, "\n") != 1 {
		t.Fatalf("want one stderr line starting with \"chunks: \", got %v", r)
	}
	for _, part := range parts {
		if !strings.Contains(r.Stderr, part) {
			t.Fatalf("want stderr to contain %q, got %v", part, r)
		}
	}
}

// decode reads stdout as exactly one line of JSON holding a T: no unknown
// keys, and no key of T missing (the line and T's own JSON have the same
// keys and values).
func decode[T any](t testing.TB, r clitest.Result) T {
	t.Helper()
	var v T
	line, ok := strings.CutSuffix(r.Stdout, "\n")
	if !ok || strings.Contains(line, "\n") {
		t.Fatalf("want one line of JSON on stdout, got %v", r)
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil || dec.More() {
		t.Fatalf("stdout is not a %T: %v\n%v", v, err, r)
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal([]byte(line), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stdout is not the JSON of a %T:\n got %s\nwant %s", v, line, again)
	}
	return v
}

// wantJSON fails unless stdout is the JSON of want, exactly (as decode).
func wantJSON[T any](t testing.TB, r clitest.Result, want T) {
	t.Helper()
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("want exit 0 and an empty stderr, got %v", r)
	}
	if got := decode[T](t, r); !reflect.DeepEqual(got, want) {
		t.Fatalf("chunks %s:\n got %+v\nwant %+v", strings.Join(r.Args, " "), got, want)
	}
}

// wantRegistered is wantJSON for chunks register --json, whose digest
// must be what the schema (on conn) records of the job (job_digest).
func wantRegistered(t testing.TB, conn *pgx.Conn, r clitest.Result, want registered) {
	t.Helper()
	var digest string
	if err := conn.QueryRow(ctx, "select job_digest($1)", want.JobID).Scan(&digest); err != nil {
		t.Fatal(err)
	}
	want.Digest = digest
	wantJSON(t, r, want)
}

// migrated is what chunks migrate --json prints.
type migrated struct {
	Schema  string `json:"schema"`
	Version int    `json:"version"`
	Owner   string `json:"owner"`
}

// superuserWarning is the line chunks migrate writes on stderr when the
// schema's owner is a superuser, as the test server's user is.
var superuserWarning = regexp.MustCompile(`^(chunks migrate: NOTICE: created role \S+ \(NOLOGIN\), the writer: .*\n)?chunks migrate: WARNING: schema \S+ and its SECURITY DEFINER functions belong to postgres, a superuser: .* Recommended: chunks migrate --owner ROLE .*\n$`)

// wantMigrated is wantJSON for chunks migrate run by the test server's
// superuser: its stderr is exactly the superuser warning (after the
// notice of the writer role it made, on a first install).
func wantMigrated(t testing.TB, r clitest.Result, want migrated) {
	t.Helper()
	if r.Code != 0 || !superuserWarning.MatchString(r.Stderr) {
		t.Fatalf("want exit 0 and the superuser warning alone on stderr, got %v", r)
	}
	if got := decode[migrated](t, r); got != want {
		t.Fatalf("chunks %s:\n got %+v\nwant %+v", strings.Join(r.Args, " "), got, want)
	}
}

// lab is a test's own migrated schema in the test database, reached by
// chunks as the superuser.
type lab struct {
	*clitest.Lab
}

func newLab(t testing.TB) *lab {
	t.Helper()
	return &lab{clitest.NewLab(t)}
}

// order is a row of orders.
type order struct {
	ID       int64  `json:"id"`
	Tenant   string `json:"tenant"`
	Qty      int64  `json:"qty"`
	State    string `json:"state"`
	Revision int64  `json:"revision"`
}

// auditRow is a row of job_audit (without job_id), or of change_audit
// for a job of a declared change: its key, version before and after, the
// approved qty (its target's expect) and Written, the written column's
// before and after ("" in job_audit, which has none).
type auditRow struct {
	Ordinal          int
	ID               int64
	PreviousRevision int64
	NewRevision      int64
	Qty              int64
	Written          string
}

// dbState is everything a job's chunks write: the job's next_index, its
// audit in ordinal order and every order of the schema in id order.
type dbState struct {
	NextIndex int
	Audit     []auditRow
	Orders    []order
}

// job is a registered job and the orders it was seeded with.
type job struct {
	lab       *lab
	ID        string
	Tenant    string
	ChunkSize int
	Targets   []driver.Target // normalized: in id order
	orders    []order         // every order before the job ran, in id order
	after     string          // the state the job leaves its orders in: cancelled, or pending for an undo
	// table holds the orders: the lab's orders, or a user's table of the
	// same shape for a job of the declared change named change.
	table, change string
}

// seedJob inserts n pending orders of a tenant, with varied ids, revisions
// and quantities, and orders that are no targets (the same tenant's, another
// tenant's, a paid one), then registers the job with chunks register, the
// targets listed in descending id order in the plan file.
func seedJob(t testing.TB, l *lab, jobID string, n, chunkSize int) *job {
	t.Helper()
	return seedJobOf(t, l, "orders", "", jobID, n, chunkSize)
}

// seedJobOf is seedJob on table, a table of orders' shape, and the job is
// one of the declared change named change (chunks register --change) when
// change is not "".
func seedJobOf(t testing.TB, l *lab, table, change, jobID string, n, chunkSize int) *job {
	t.Helper()
	j := &job{lab: l, ID: jobID, Tenant: "alien-desert", ChunkSize: chunkSize, after: "cancelled", table: table, change: change}
	for i := range n {
		target := driver.Target{ID: int64(101 + 3*i), Revision: int64(i % 5), Qty: int64(1 + (7*i)%20)}
		j.Targets = append(j.Targets, target)
		j.orders = append(j.orders, order{target.ID, j.Tenant, target.Qty, "pending", target.Revision})
		switch {
		case i%5 == 0: // another tenant's order, looking like an approved one
			j.orders = append(j.orders, order{target.ID + 1, "lunar-bazaar", target.Qty, "pending", target.Revision})
		case i%7 == 3: // the same tenant's order that was not approved
			j.orders = append(j.orders, order{target.ID + 2, j.Tenant, 3, "pending", 1})
		}
	}
	j.orders = append(j.orders, order{99, j.Tenant, 5, "paid", 2})
	slices.SortFunc(j.orders, func(a, b order) int { return int(a.ID - b.ID) })
	rows, err := json.Marshal(j.orders)
	if err != nil {
		t.Fatal(err)
	}
	l.Exec(t, `insert into `+table+` (id, tenant, qty, state, revision)
		select id, tenant, qty, state, revision
		from jsonb_to_recordset($1::jsonb) as x(id integer, tenant text, qty integer, state text, revision integer)`, string(rows))

	reversed := slices.Clone(j.Targets)
	slices.Reverse(reversed)
	plan, err := json.Marshal(map[string]any{
		"job_id": jobID, "tenant": j.Tenant, "targets": reversed, "chunk_size": chunkSize, "allow_partial": true,
	})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(file, plan, 0o600); err != nil {
		t.Fatal(err)
	}
	if change == "" {
		wantRegistered(t, l.Conn, l.Chunks(t, "register", "--json", file), registered{JobID: jobID, Created: true})
	} else {
		wantRegistered(t, l.Conn, l.Chunks(t, "register", "--json", "--change", change, file), registered{JobID: jobID, Created: true, Change: change})
	}
	j.wantState(t, 0)
	return j
}

// registered is what chunks register --json prints.
type registered struct {
	JobID   string `json:"job_id"`
	Created bool   `json:"created"`
	Change  string `json:"change,omitempty"` // with --change
	Digest  string `json:"digest"`           // the approval digest (chunks plan's)
}

// ids are the target ids of positions [from, to).
func (j *job) ids(from, to int) []int64 {
	out := []int64{}
	for _, target := range j.Targets[from:to] {
		out = append(out, target.ID)
	}
	return out
}

// chunkEnd is where the chunk that starts at from ends.
func (j *job) chunkEnd(from int) int {
	return min(from+j.ChunkSize, len(j.Targets))
}

// want is the database after the job changed its first committed targets
// (cancelled them; restored them, for an undo), and nothing else happened.
func (j *job) want(committed int) dbState {
	s := dbState{NextIndex: committed, Audit: []auditRow{}}
	done := map[int64]bool{}
	written := ""
	if j.change != "" {
		written = `{"state": "pending"} {"state": "cancelled"}`
	}
	for i, target := range j.Targets[:committed] {
		s.Audit = append(s.Audit, auditRow{i, target.ID, target.Revision, target.Revision + 1, target.Qty, written})
		done[target.ID] = true
	}
	for _, o := range j.orders {
		if done[o.ID] {
			o.State, o.Revision = j.after, o.Revision+1
		}
		s.Orders = append(s.Orders, o)
	}
	return s
}

// state reads the job's progress, its audit and all orders.
func (j *job) state(t testing.TB) dbState {
	t.Helper()
	var s dbState
	conn := j.lab.Conn
	if err := conn.QueryRow(ctx, "select next_index from jobs where job_id = $1", j.ID).Scan(&s.NextIndex); err != nil {
		t.Fatalf("next_index: %v", err)
	}
	audit := `select ordinal, id, previous_revision, new_revision, qty, ''
		from job_audit where job_id = $1 order by ordinal`
	if j.change != "" {
		audit = `select a.ordinal, a.key::bigint, a.version_before, a.version_after, (job_targets(j.job_id) -> a.ordinal ->> 'qty')::bigint,
		         a.before::text || ' ' || a.after::text
		    from change_audit as a join jobs as j using (job_id) where a.job_id = $1 order by a.ordinal`
	}
	rows, _ := conn.Query(ctx, audit, j.ID)
	audited, err := pgx.CollectRows(rows, pgx.RowToStructByPos[auditRow])
	if err != nil {
		t.Fatalf("job_audit: %v", err)
	}
	rows, _ = conn.Query(ctx, "select id, tenant, qty, state, revision from "+j.table+" order by id")
	orders, err := pgx.CollectRows(rows, pgx.RowToStructByPos[order])
	if err != nil {
		t.Fatalf("orders: %v", err)
	}
	s.Audit, s.Orders = audited, orders
	return s
}

// wantState fails unless the database is exactly j.want(committed).
func (j *job) wantState(t testing.TB, committed int) {
	t.Helper()
	got, want := j.state(t), j.want(committed)
	if got.NextIndex != want.NextIndex {
		t.Fatalf("next_index is %d, want %d", got.NextIndex, want.NextIndex)
	}
	if !reflect.DeepEqual(got.Audit, want.Audit) {
		t.Fatalf("job_audit:\n got %+v\nwant %+v", got.Audit, want.Audit)
	}
	if !reflect.DeepEqual(got.Orders, want.Orders) {
		for i := range min(len(got.Orders), len(want.Orders)) {
			if got.Orders[i] != want.Orders[i] {
				t.Fatalf("orders differ first at %+v, want %+v", got.Orders[i], want.Orders[i])
			}
		}
		t.Fatalf("orders: %d rows, want %d", len(got.Orders), len(want.Orders))
	}
}

// waitUnlocked waits until no other session holds a lock on the lab's jobs
// table: a killed client's transaction is over once the server has noticed
// that its connection dropped.
func (l *lab) waitUnlocked(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := l.Conn.QueryRow(ctx, `select count(*) from pg_locks
			where relation = to_regclass($1) and pid <> pg_backend_pid()`, l.Name+".jobs").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the jobs table is still locked 10 s after the client died")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ownServer starts a throwaway server of the test's own (roles and
// databases are a cluster's: a test that makes them needs one), stopped
// when the test ends. Without the server binaries the test is skipped, or
// fails under CI.
func ownServer(t testing.TB) *localpg.Server {
	t.Helper()
	_, err := localpg.FindBinDir()
	pgtest.RequireTool(t, err, "the PostgreSQL server binaries", "postgresql")
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	srv, err := localpg.Start(startCtx, localpg.Options{})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return srv
}

// shellEnv is the environment of a shell that runs the guides' or the
// help's chunks command lines: the chunks under test first on PATH.
func shellEnv(vars ...string) []string {
	return append(append(pgtest.CleanEnv(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH")), vars...)
}

// cannotRun skips a test whose machine lacks what it needs (a pseudo-terminal,
// the right to create a database), or fails it under CI, which must never
// pass by skipping.
func cannotRun(t testing.TB, format string, args ...any) {
	t.Helper()
	if pgtest.InCI() {
		t.Fatalf(format+" (CI=true: failing instead of skipping)", args...)
	}
	t.Skipf(format, args...)
}
