package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// The limits of docs/contract.md §3 at every edge, through both faces: the Go
// driver (ParsePlan on the JSON text, Manifest on the Go values) and the
// server's register(jsonb). Each case is built from driver/limits.go's
// values, states what §3 expects, and every face must give that answer, so
// neither face can move a limit without this test failing. Refusals must
// name the same field on both faces.

// limTargetRanges are the §3 ranges of a target's fields. limits.go keeps
// them unexported, so they are written out here; the min-1/min/max/max+1
// cases below pin the Go and SQL faces to them.
var limTargetRanges = []struct {
	field  string
	lo, hi int64
}{
	{"id", 1, 2147483647},
	{"revision", 0, 2147483646},
	{"qty", 1, 1000},
}

type limCase struct {
	name   string
	plan   driver.Plan
	accept bool
}

// limName is a valid name of n characters using every allowed class.
func limName(n int) string {
	const classes = "Az09_-"
	if n <= len(classes) {
		return classes[:n]
	}
	return classes + strings.Repeat("x", n-len(classes))
}

// limTargets are n targets with ids n..1 (descending, so the faces must sort).
func limTargets(n int) []driver.Target {
	out := make([]driver.Target, n)
	for i := range out {
		out[i] = driver.Target{ID: int64(n - i), Revision: 3, Qty: 2}
	}
	return out
}

func limBase() driver.Plan {
	return driver.Plan{JobID: "lim-job", Tenant: "acme", Targets: limTargets(2), ChunkSize: 2, AllowPartial: true}
}

func limCases() []limCase {
	var cases []limCase
	add := func(name string, accept bool, change func(*driver.Plan)) {
		p := limBase()
		change(&p)
		cases = append(cases, limCase{name, p, accept})
	}
	for _, f := range limTargetRanges {
		for _, e := range []struct {
			v      int64
			accept bool
		}{{f.lo - 1, false}, {f.lo, true}, {f.hi, true}, {f.hi + 1, false}} {
			add(fmt.Sprintf("%s %d", f.field, e.v), e.accept, func(p *driver.Plan) {
				t := driver.Target{ID: 5, Revision: 3, Qty: 2}
				switch f.field {
				case "id":
					t.ID = e.v
				case "revision":
					t.Revision = e.v
				case "qty":
					t.Qty = e.v
				}
				p.Targets = []driver.Target{t}
			})
		}
	}
	for _, e := range []struct {
		n      int
		accept bool
	}{{driver.MinChunkSize - 1, false}, {driver.MinChunkSize, true}, {driver.MaxChunkSize, true}, {driver.MaxChunkSize + 1, false}} {
		add(fmt.Sprintf("chunk_size %d", e.n), e.accept, func(p *driver.Plan) { p.ChunkSize = e.n })
	}
	for _, e := range []struct {
		n      int
		accept bool
	}{{0, false}, {1, true}, {driver.MaxTargets, true}, {driver.MaxTargets + 1, false}} {
		add(fmt.Sprintf("%d targets", e.n), e.accept, func(p *driver.Plan) { p.Targets = limTargets(e.n) })
	}
	for _, e := range []struct {
		n      int
		accept bool
	}{{0, false}, {1, true}, {driver.MaxNameLen, true}, {driver.MaxNameLen + 1, false}} {
		add(fmt.Sprintf("job_id of %d characters", e.n), e.accept, func(p *driver.Plan) { p.JobID = limName(e.n) })
		add(fmt.Sprintf("tenant of %d characters", e.n), e.accept, func(p *driver.Plan) { p.Tenant = limName(e.n) })
	}
	add("allow_partial false", false, func(p *driver.Plan) { p.AllowPartial = false })
	add("every field at its upper edge", true, func(p *driver.Plan) {
		p.JobID, p.Tenant, p.ChunkSize = limName(driver.MaxNameLen), limName(driver.MaxNameLen), driver.MaxChunkSize
		p.Targets = limTargets(driver.MaxTargets)
		p.Targets[0] = driver.Target{ID: 2147483647, Revision: 2147483646, Qty: 1000}
	})
	add("every field at its lower edge", true, func(p *driver.Plan) {
		p.JobID, p.Tenant, p.ChunkSize = limName(1), limName(1), driver.MinChunkSize
		p.Targets = []driver.Target{{ID: 1, Revision: 0, Qty: 1}}
	})
	return cases
}

func TestLimits(t *testing.T) {
	t.Run("limits.go says what §3 says", func(t *testing.T) {
		got := [5]int{driver.MaxNameLen, driver.MaxTargets, driver.MinChunkSize, driver.MaxChunkSize, driver.MaxMaxChunks}
		if want := [5]int{64, 64, 1, 10, 64}; got != want {
			t.Fatalf("MaxNameLen, MaxTargets, MinChunkSize, MaxChunkSize, MaxMaxChunks = %v, want %v", got, want)
		}
		// The one Go value the SQL face is compared with (TestLimitsSQLIsGo)
		// holds the same numbers, and the target ranges the edges below use.
		// A declared change's job: 10,000 targets, chunks of 1,000 (issue 37).
		want := driver.Limits{NameMaxLength: 64, TargetsMax: 64, ChunkSizeMin: 1, ChunkSizeMax: 10, MaxChunksMax: 64,
			ChangeTargetsMax: 10000, ChangeChunkSizeMax: 1000,
			InputMaxBytes: 1 << 20, CampaignTargetsMax: 1000000, CampaignNameMaxLength: 57, QueueWindowMin: 1, QueueWindowMax: 10000,
			Target: map[string]driver.Range{}}
		for _, f := range limTargetRanges {
			want.Target[f.field] = driver.Range{Min: f.lo, Max: f.hi}
		}
		if got := driver.ContractLimits(); !reflect.DeepEqual(got, want) {
			t.Fatalf("ContractLimits() = %+v, want %+v", got, want)
		}
	})
	s := pgtest.NewSchema(t)
	var accepted, refused int
	for _, c := range limCases() {
		t.Run(c.name, func(t *testing.T) {
			raw, err := json.Marshal(c.plan)
			if err != nil {
				t.Fatal(err)
			}

			parsed, goErr := driver.ParsePlan(raw)
			if (goErr == nil) != c.accept {
				t.Fatalf("ParsePlan: %v, want accept = %t\ninput %s", goErr, c.accept, raw)
			}
			if goErr != nil && !errors.Is(goErr, driver.ErrInvalid) {
				t.Fatalf("ParsePlan refused with %v, not ErrInvalid", goErr)
			}

			manifested, mErr := driver.Manifest(c.plan.JobID, c.plan.Tenant, c.plan.Targets, c.plan.ChunkSize, c.plan.AllowPartial)
			if (mErr == nil) != c.accept {
				t.Fatalf("Manifest: %v, want accept = %t", mErr, c.accept)
			}
			if mErr != nil && !errors.Is(mErr, driver.ErrInvalid) {
				t.Fatalf("Manifest refused with %v, not ErrInvalid", mErr)
			}

			stored, sqlErr := limRegister(t, s.Conn, string(raw), c.plan.JobID)
			if (sqlErr == nil) != c.accept {
				t.Fatalf("register: %v, want accept = %t\ninput %s", sqlErr, c.accept, raw)
			}

			if !c.accept {
				refused++
				var pgErr *pgconn.PgError
				if !errors.As(sqlErr, &pgErr) || pgErr.Code != "22023" {
					t.Fatalf("register refused with %v, want SQLSTATE 22023", sqlErr)
				}
				var e *driver.Error
				if !errors.As(goErr, &e) {
					t.Fatalf("ParsePlan's refusal is a %T", goErr)
				}
				if g, q := limField(e.Msg), limField(pgErr.Message); g != q {
					t.Fatalf("the faces name different fields: Go %q, SQL %q", e.Msg, pgErr.Message)
				}
				return
			}
			accepted++
			if !reflect.DeepEqual(parsed, manifested) {
				t.Fatalf("ParsePlan gave %+v, Manifest %+v", parsed, manifested)
			}
			wantTargets, err := json.Marshal(parsed.Targets)
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, "stored job", stored,
				fmt.Sprintf(`{"tenant": %q, "targets": %s, "chunk_size": %d, "next_index": 0}`, parsed.Tenant, wantTargets, parsed.ChunkSize))
		})
	}
	t.Logf("%d edges accepted and %d refused by ParsePlan, Manifest and register alike", accepted, refused)
	if accepted == 0 || refused == 0 {
		t.Fatalf("accepted %d, refused %d: the table lost its cases", accepted, refused)
	}
}

// limRegister calls register(raw::jsonb) in a transaction that it rolls
// back, so no case sees another's job. On success it returns the stored
// job's tenant, targets, chunk_size and next_index as JSON.
func limRegister(t *testing.T, conn *pgx.Conn, raw, jobID string) (string, error) {
	t.Helper()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tx.Rollback(ctx); err != nil {
			t.Fatalf("rollback: %v", err)
		}
	}()
	var created bool
	if err := tx.QueryRow(ctx, "select register($1::jsonb)", raw).Scan(&created); err != nil {
		return "", err
	}
	if !created {
		t.Fatalf("register returned false for a new job in an empty schema")
	}
	var stored string
	if err := tx.QueryRow(ctx, `select jsonb_build_object('tenant', tenant, 'targets', targets,
	  'chunk_size', chunk_size, 'next_index', next_index)::text from jobs where job_id = $1`, jobID).Scan(&stored); err != nil {
		t.Fatalf("read the stored job: %v", err)
	}
	return stored, nil
}

// limField is the field a refusal message starts with: the text before
// its first ": ".
func limField(msg string) string {
	field, _, _ := strings.Cut(msg, ": ")
	return field
}

// The SQL face's one definition of the limits, limits(), read on a real
// server, is the Go driver's ContractLimits() key for key: a key on one side
// only, or a number that differs, fails. limit_of, which every SQL check
// reads the numbers through, gives each of them.
func TestLimitsSQLIsGo(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	raw := pgtest.MustString(t, s.Conn, "select limits()::text")
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	var sqlLimits driver.Limits
	if err := dec.Decode(&sqlLimits); err != nil {
		t.Fatalf("limits() %s: %v", raw, err)
	}
	goLimits := driver.ContractLimits()
	if !reflect.DeepEqual(sqlLimits, goLimits) {
		t.Fatalf("limits() is %+v\ndriver.ContractLimits() is %+v", sqlLimits, goLimits)
	}
	// Every key of the Go value is in limits(), and limit_of reads it.
	var goKeys map[string]json.RawMessage
	data, err := json.Marshal(goLimits)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &goKeys); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for key, v := range goKeys {
		if key == "target" {
			continue
		}
		var n int64
		if err := json.Unmarshal(v, &n); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		want[key] = n
	}
	for field, r := range goLimits.Target {
		want[field+"_min"], want[field+"_max"] = r.Min, r.Max
	}
	for key, n := range want {
		if got := pgtest.MustString(t, s.Conn, "select limit_of($1)::text", key); got != fmt.Sprint(n) {
			t.Errorf("limit_of(%q) = %s, want %d (driver.ContractLimits())", key, got, n)
		}
	}
	if got := pgtest.MustString(t, s.Conn, "select count(*)::text from jsonb_object_keys(limits())"); got != fmt.Sprint(len(goKeys)) {
		t.Errorf("limits() has %s keys, driver.Limits %d", got, len(goKeys))
	}
}
