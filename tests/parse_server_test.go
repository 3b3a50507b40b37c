package tests

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// The Go face and the SQL face of register agree on every seed of the
// FuzzParsePlan corpus (driver/testdata/fuzz/FuzzParsePlan).
//
// The server never sees the raw text: register receives jsonb, which has
// already parsed it. The cast turns 1e3 into 1000, keeps the last of
// duplicate keys, and refuses some input before register runs (invalid
// UTF-8, \u0000, anything that is not JSON). So the property is stated in
// two parts, each exactly testable:
//
//	(a) if ParsePlan(original) accepts, register(original::jsonb) returns
//	    a boolean with no error (the Go face is never stricter in what it lets
//	    through than the server, so a plan Go accepts always registers), and
//	    stores the same normalized plan;
//	(b) with canonical := original::jsonb::text (the case is skipped, and
//	    counted, when the cast itself fails: the input never reaches
//	    register), ParsePlan(canonical) accepts if and only if
//	    register(original::jsonb) accepts. Every refusal by the server is
//	    SQLSTATE 22023, and names the same top-level field as Go's.
//
// Inputs that ParsePlan refuses but whose canonical text it accepts are the
// ones jsonb hides from the server (1e3, duplicate keys, ...); they are
// counted, and there must be some, or the corpus has lost those seeds.

// psSeed is one corpus file: its name and its []byte value.
type psSeed struct {
	name string
	data []byte
}

// psReadCorpus reads the `go test fuzz v1` files of dir, each holding one
// []byte value.
func psReadCorpus(t *testing.T, dir string) []psSeed {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var seeds []psSeed
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		body, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		header, value, ok := strings.Cut(string(body), "\n")
		if !ok || header != "go test fuzz v1" {
			t.Fatalf("%s: not a `go test fuzz v1` file", e.Name())
		}
		value = strings.TrimSpace(value)
		literal, prefixed := strings.CutPrefix(value, "[]byte(")
		literal, suffixed := strings.CutSuffix(literal, ")")
		if !prefixed || !suffixed || strings.Contains(literal, "\n") {
			t.Fatalf("%s: want exactly one []byte(\"...\") value, got %q", e.Name(), value)
		}
		data, err := strconv.Unquote(literal)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		seeds = append(seeds, psSeed{e.Name(), []byte(data)})
	}
	return seeds
}

// psServer is what the server made of one input.
type psServer struct {
	castErr   error  // the ::jsonb cast failed: register never saw the input
	canonical string // the input's jsonb text
	accepted  bool
	refusal   *pgconn.PgError // register's error when it refused
	stored    string          // the stored job, when accepted
}

func psAsk(t *testing.T, s *pgtest.Schema, data []byte) psServer {
	t.Helper()
	var out psServer
	if err := s.Conn.QueryRow(ctx, "select $1::jsonb::text", string(data)).Scan(&out.canonical); err != nil {
		out.castErr = err
		return out
	}
	tx, err := s.Conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tx.Rollback(ctx); err != nil {
			t.Fatalf("rollback: %v", err)
		}
	}()
	var created bool
	if err := tx.QueryRow(ctx, "select register($1::jsonb)", string(data)).Scan(&created); err != nil {
		if !errors.As(err, &out.refusal) || out.refusal.Code != "22023" {
			t.Fatalf("register failed with %v, want a boolean or SQLSTATE 22023", err)
		}
		return out
	}
	if !created {
		t.Fatal("register returned false for a new job in an empty schema")
	}
	out.accepted = true
	if err := tx.QueryRow(ctx, `select jsonb_build_object('job_id', job_id, 'tenant', tenant, 'targets', targets,
	  'chunk_size', chunk_size, 'next_index', next_index)::text from jobs`).Scan(&out.stored); err != nil {
		t.Fatalf("read the stored job: %v", err)
	}
	return out
}

// psTopField is the top-level field a refusal names: the start of the
// message up to the first ':', '.' or '['.
func psTopField(msg string) string {
	if i := strings.IndexAny(msg, ":.["); i >= 0 {
		return msg[:i]
	}
	return msg
}

func TestParseServerAgree(t *testing.T) {
	seeds := psReadCorpus(t, filepath.Join("..", "driver", "testdata", "fuzz", "FuzzParsePlan"))
	s := pgtest.NewSchema(t)
	var n struct {
		seeds, goAccepted, checked, skipped, bothAccept, bothRefuse, hidden, sameMessage int
	}
	n.seeds = len(seeds)
	for _, seed := range seeds {
		t.Run(seed.name, func(t *testing.T) {
			plan, goErr := driver.ParsePlan(seed.data)
			srv := psAsk(t, s, seed.data)

			// (a) what Go accepts, the server registers, as the same plan.
			if goErr == nil {
				n.goAccepted++
				if srv.castErr != nil {
					t.Fatalf("ParsePlan accepted what the ::jsonb cast refuses (%v)\ninput %q", srv.castErr, seed.data)
				}
				if !srv.accepted {
					t.Fatalf("ParsePlan accepted, register refused: %s %s\ninput %q", srv.refusal.Code, srv.refusal.Message, seed.data)
				}
				want, err := json.Marshal(driver.Job{JobID: plan.JobID, Tenant: plan.Tenant, Targets: plan.Targets, ChunkSize: plan.ChunkSize})
				if err != nil {
					t.Fatal(err)
				}
				sameJSON(t, "stored job", srv.stored, string(want))
			}

			// (b) on what the server can see, the faces agree.
			if srv.castErr != nil {
				n.skipped++
				t.Logf("skipped: the ::jsonb cast refuses the input: %v", srv.castErr)
				return
			}
			n.checked++
			canon, canonErr := driver.ParsePlan([]byte(srv.canonical))
			switch {
			case canonErr == nil && srv.accepted:
				n.bothAccept++
				if goErr != nil {
					n.hidden++
					t.Logf("jsonb hides what Go refuses (%v): the server sees %s", goErr, srv.canonical)
				}
				if goErr == nil && !reflect.DeepEqual(canon, plan) {
					t.Fatalf("ParsePlan gives %+v for the canonical text, %+v for the original", canon, plan)
				}
			case canonErr != nil && !srv.accepted:
				n.bothRefuse++
				var e *driver.Error
				if !errors.As(canonErr, &e) {
					t.Fatalf("ParsePlan's refusal is a %T", canonErr)
				}
				if g, q := psTopField(e.Msg), psTopField(srv.refusal.Message); g != q {
					t.Fatalf("the faces name different fields for %s:\n Go  %s\n SQL %s", srv.canonical, e.Msg, srv.refusal.Message)
				}
				if e.Msg == srv.refusal.Message {
					n.sameMessage++
				} else {
					t.Logf("same field, other words:\n Go  %s\n SQL %s", e.Msg, srv.refusal.Message)
				}
				if goErr == nil {
					t.Fatalf("unreachable: (a) already failed")
				}
			case canonErr == nil:
				t.Fatalf("ParsePlan accepts the canonical text %s, register refuses it: %s", srv.canonical, srv.refusal.Message)
			default:
				t.Fatalf("register accepts %s, ParsePlan refuses it: %v", srv.canonical, canonErr)
			}
		})
	}
	t.Logf("%d seeds: %d accepted by ParsePlan and registered (a); %d checked on their jsonb text (b): "+
		"%d accepted by both, %d refused by both (%d with the very same message); %d skipped (the ::jsonb cast refused them); "+
		"%d refused by Go but hidden from the server by jsonb",
		n.seeds, n.goAccepted, n.checked, n.bothAccept, n.bothRefuse, n.sameMessage, n.skipped, n.hidden)
	for _, c := range []struct {
		what string
		got  int
	}{{"seeds", n.seeds}, {"accepted by ParsePlan", n.goAccepted}, {"checked", n.checked}, {"skipped", n.skipped},
		{"accepted by both", n.bothAccept}, {"refused by both", n.bothRefuse}, {"hidden by jsonb", n.hidden}} {
		if c.got == 0 {
			t.Errorf("no seed was %s: the corpus has lost the cases this property is about", c.what)
		}
	}
	if !t.Failed() && n.checked+n.skipped != n.seeds {
		t.Errorf("checked %d + skipped %d != %d seeds", n.checked, n.skipped, n.seeds)
	}
}
