package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/fleet"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// resultSchema is a schema with data in every shape the functions that Go
// reads can return: a finished job with an undo, a paused job, a queued
// one, a campaign (and its undo), a live worker, a viewer granted.
func resultSchema(t *testing.T) *pgtest.Schema {
	t.Helper()
	s := pgtest.NewSchema(t)
	registerJob(t, s, "done", "acme", 1, 4, 2)
	s.Exec(t, "select run_chunk('done'), run_chunk('done')")
	registerJob(t, s, "paused", "acme", 11, 4, 2)
	s.Exec(t, "select run_chunk('paused'), pause_job('paused')")
	registerJob(t, s, "queued", "acme", 21, 4, 2)
	s.Exec(t, "select worker_heartbeat('w1', 'host-a', 41, now() - interval '1 minute', 3, 'throttled', 'replica r1 is 2 s behind')")
	seedOrders(t, s, "acme", 101, 30)
	if _, err := driver.CreateCampaign(ctx, s.Conn, driver.CampaignSpec{Name: "c", Tenant: "acme", ChunkSize: 5},
		readTargets(t, campaignLines(101, 30))); err != nil {
		t.Fatal(err)
	}
	s.Exec(t, "select run_chunk('c-000001'), campaign_pause('c')")
	s.Exec(t, "update orders set revision = 4 where id = 130") // a problem for campaign_check to list
	// A campaign of a declared change, one chunk run, a row drifted and one
	// that cannot take its change.
	shop := s.UserSchema(t, paymentsSQL)
	s.Exec(t, "select define_change($1)", pgtest.HoldPayment(shop))
	s.Exec(t, "select campaign_create_change('h', 'hold_payment', '7', 2, $1)", paymentTargets(1, 2, 3, 4))
	s.Exec(t, "select run_chunk('h-000001'), skip_target('h-000001', '3', 'set aside')")
	s.Exec(t, "update "+shop+".payments set hold_reason = 'x' where payment_id = 1")
	s.Exec(t, "update "+shop+".payments set lock_version = 9 where payment_id = 4")
	// A campaign over many tenants (here, one of them).
	s.Exec(t, "select campaign_create_change('mt', 'hold_payment', null, 2, $1, null, 16, array['7'])", paymentTargets(5))
	// Two people: a proposed job of orders, a proposed campaign, and a
	// proposed job of the change with a proposed skip.
	s.Exec(t, "select set_policy(null, true)")
	registerJob(t, s, "tp", "acme", 201, 4, 2)
	seedOrders(t, s, "acme", 301, 2)
	s.Exec(t, "select campaign_create('tc', 'acme', 2, array[301, 302], array[3, 3], array[2, 2], 4)")
	s.Exec(t, "select register_change('hold_payment', $1)", changePlan("th", "7", paymentTargets(5), 2))
	s.Exec(t, "select skip_target('th', '5', 'set aside')")
	return s
}

// What each function that Go reads (QueryJSON, fleet.LoadOverview, fleet.Workers)
// returns, called on a server with data, has exactly the keys of the Go
// type that mirrors it, at every depth: no key the type does not name,
// none it names missing (only omitempty keys may be absent, as the
// absent list says: shard comes only through a router), none of a field
// filled in Go (sql:"-"). Each row names every list of objects it covers.
func TestResultKeysMatchGoTypes(t *testing.T) {
	t.Parallel()
	s := resultSchema(t)
	viewer := pgtest.NewRole(t, pgtest.DSN(), "viewer")
	cases := []struct {
		name, sql string
		args      []any
		goType    any
		absent    []string // keys of the type this result lacks, path.key
	}{
		{"inspect_job", "select inspect_job('done')::text", nil, driver.Job{}, []string{"change"}},                       // a declared change's job only
		{"report", "select report('done')::text", nil, driver.JobReport{}, []string{"skipped"}},                          // a job with skips only
		{"report of a change", "select report('h-000001')::text", nil, driver.JobReport{}, []string{"skipped[].job_id"}}, // a campaign report's only
		{"check_plan", "select check_plan($1)::text", []any{plan("fresh", "acme", 1, 3, 2)}, driver.PlanCheck{}, nil},
		{"register_undo", "select register_undo('done')::text", nil, driver.Undo{}, []string{"change"}},   // a declared change's job only
		{"job_lineage", "select job_lineage('done')::text", nil, driver.JobLineage{}, []string{"change"}}, // a declared change's job only
		{"worker_status", "select worker_status()::text", nil, []fleet.WorkerStatus{}, []string{"[].shard"}},
		{"job_status", "select job_status()::text", nil, []fleet.JobStatus{}, []string{"[].shard"}},
		{"status_page", "select status_page(null, null)::text", nil, fleet.Overview{},
			[]string{"jobs[].shard", "workers[].shard", "campaigns[].shard", "attention[].shard"}},
		{"campaign_status", "select campaign_status('c')::text", nil, driver.CampaignProgress{}, []string{"tenants", "proposed_by", "proposed_at", "approved_by", "approved_at"}}, // over many tenants only; two people only
		{"campaign_status over many tenants", "select campaign_status('mt')::text", nil, driver.CampaignProgress{}, []string{"proposed_by", "proposed_at", "approved_by", "approved_at"}},
		{"campaign_status of two people", "select campaign_status('tc')::text", nil, driver.CampaignProgress{}, []string{"tenants"}},
		{"job_proposals", "select job_proposals('th')::text", nil, []driver.Proposal{}, []string{"[].detail.key", "[].detail.reason"}}, // a run's detail is {}
		{"policy_list", "select policy_list()::text", nil, []driver.Policy{}, nil},
		{"plan_digest", "select plan_digest(null, $1)::text", []any{plan("fresh", "acme", 1, 3, 2)}, driver.PlanDigest{}, nil},
		{"skip_target proposed", "select skip_target('th', '5', 'set aside')::text", nil, fleet.Skipped{}, nil},
		{"abandon_job proposed", "select abandon_job('tp', 'not now')::text", nil, fleet.Abandoned{}, nil},
		{"campaign_report", "select campaign_report('c')::text", nil, driver.CampaignDrift{}, []string{"skipped", "skipped_count"}},
		{"campaign_check", "select campaign_check('c', 100)::text", nil, driver.CampaignCheck{}, []string{"listed[].key"}},
		{"campaign_check of a change", "select campaign_check('h', 100)::text", nil, driver.CampaignCheck{}, []string{"listed[].id"}},
		{"campaign_report of a change", "select campaign_report('h')::text", nil, driver.CampaignDrift{}, nil},
		{"campaign_status of a change", "select campaign_status('h')::text", nil, driver.CampaignProgress{}, []string{"tenants", "proposed_by", "proposed_at", "approved_by", "approved_at"}},
		{"campaign_pause", "select campaign_pause('c')::text", nil, driver.CampaignChange{}, nil},
		{"campaign_undo", "select campaign_undo('c')::text", nil, driver.CampaignUndo{}, []string{"change"}}, // a change's campaign only
		{"campaign_undo again", "select campaign_undo('c')::text", nil, driver.CampaignUndo{}, []string{"drifted", "missing", "change"}},
		{"campaign_resume", "select campaign_resume('c')::text", nil, driver.CampaignChange{}, nil},
		{"campaign_create", "select campaign_create('c2', 'acme', 2, array[101], array[3], array[2], 4)::text", nil,
			driver.CampaignCreated{}, nil},
		{"campaign_create_change", "select campaign_create_change('h2', 'hold_payment', '7', 2, $1, array['line 1'])::text",
			[]any{paymentTargets(5)}, driver.CampaignCreated{}, nil},
		{"campaign_undo of a change", "select campaign_undo('h')::text from campaign_pause('h')", nil, driver.CampaignUndo{}, nil},
		{"grant_access", "select grant_access($1, 'viewer')::text", []any{viewer.Name}, driver.Granted{}, nil},
	}
	for _, c := range cases { // in order: the campaign's undo needs it paused
		body := pgtest.MustString(t, s.Conn, c.sql, c.args...)
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		seen := map[string][]string{} // the keys of every object of a struct, by path
		for _, e := range compareKeys(v, reflect.TypeOf(c.goType), "", seen) {
			t.Errorf("%s: %s", c.name, e)
		}
		// Each struct of the type came back, with every key (omitempty
		// ones aside, where the case says so): the data covers it all.
		for path, keys := range structPaths(reflect.TypeOf(c.goType), "") {
			got, ok := seen[path]
			if !ok && !slices.Contains(c.absent, strings.TrimSuffix(path, "[]")) {
				t.Errorf("%s: no object at %s came back: the data does not cover it", c.name, where(path))
			}
			for _, k := range keys {
				if ok && !slices.Contains(got, k) && !slices.Contains(c.absent, join(path, k)) {
					t.Errorf("%s: key %s of the Go type never came back", c.name, join(path, k))
				}
			}
		}
	}
}

// compareKeys walks v, a JSON value, along t, the Go type it decodes into,
// and lists where they differ: an object key t does not name, a key it
// names (without omitempty) that the object lacks, a key of a field
// tagged sql:"-" (filled in Go); seen collects the keys of every object
// of a struct, by path ("jobs[]" for the elements of jobs).
func compareKeys(v any, t reflect.Type, path string, seen map[string][]string) []string {
	var out []string
	switch t.Kind() {
	case reflect.Pointer:
		return compareKeys(v, t.Elem(), path, seen)
	case reflect.Slice:
		list, _ := v.([]any)
		for _, e := range list {
			out = append(out, compareKeys(e, t.Elem(), path+"[]", seen)...)
		}
	case reflect.Map:
		obj, _ := v.(map[string]any)
		for _, e := range obj {
			out = append(out, compareKeys(e, t.Elem(), path+"{}", seen)...)
		}
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if isValue(t) || !ok {
			return nil
		}
		fields := map[string]reflect.StructField{}
		for _, f := range jsonFields(t) {
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			fields[name] = f
			e, present := obj[name]
			switch {
			case f.Tag.Get("sql") == "-" && present:
				out = append(out, "key "+join(path, name)+" is filled in Go, but the function returns it")
			case f.Tag.Get("sql") == "-":
			case present:
				out = append(out, compareKeys(e, f.Type, join(path, name), seen)...)
			case !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero"):
				out = append(out, "key "+join(path, name)+" of the Go type is missing")
			}
		}
		for k := range obj {
			if _, ok := fields[k]; !ok {
				out = append(out, "key "+join(path, k)+" is not in the Go type")
			}
			if !slices.Contains(seen[path], k) {
				seen[path] = append(seen[path], k)
			}
		}
		if seen[path] == nil {
			seen[path] = []string{}
		}
	}
	return out
}

// structPaths is, for every struct in t (time.Time and driver.Key are values), its keys
// read from SQL (not those tagged sql:"-"), by path.
func structPaths(t reflect.Type, path string) map[string][]string {
	out := map[string][]string{}
	switch t.Kind() {
	case reflect.Pointer:
		return structPaths(t.Elem(), path)
	case reflect.Slice:
		return structPaths(t.Elem(), path+"[]")
	case reflect.Map:
		return structPaths(t.Elem(), path+"{}")
	case reflect.Struct:
		if isValue(t) {
			return out
		}
		out[path] = []string{}
		for _, f := range jsonFields(t) {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Tag.Get("sql") == "-" {
				continue
			}
			out[path] = append(out[path], name)
			maps.Copy(out, structPaths(f.Type, join(path, name)))
		}
	}
	return out
}

// jsonFields is the fields of the struct type t that encoding/json reads,
// an embedded struct's promoted to t's (fleet.CampaignRow's CampaignProgress).
func jsonFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for _, f := range reflect.VisibleFields(t) {
		if !f.Anonymous && f.IsExported() {
			out = append(out, f)
		}
	}
	return out
}

// isValue says whether the struct type t reads its JSON itself (a
// time.Time, a driver.Key): a value, not an object of its fields.
func isValue(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]())
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func where(path string) string {
	if path == "" {
		return "the result"
	}
	return path
}

// A result that does not fit its Go type exactly is an error naming the
// function and the key, never a zero value read in silence: an unknown key,
// a missing one (at the top, or nested in a list), a key of a field Go
// fills in. Functions of another version are what makes them: here each
// is replaced by hand.
func TestResultsDecodeStrictly(t *testing.T) {
	t.Parallel()
	s := resultSchema(t)
	workers := func() error { _, err := fleet.Workers(ctx, s.Conn); return err }
	look := func() error { _, err := fleet.LoadOverview(ctx, s.Conn, "", 0); return err }
	for _, c := range []struct {
		fn   string // the function, replaced by one returning edit of what it returns now (%s)
		edit string
		call func() error
		want string
	}{
		{"worker_status()", `jsonb_set(%s, '{0,load}', '1')`, workers, `worker_status: json: unknown field "load"`},
		{"worker_status()", `%s #- '{0,reason}'`, workers, `worker_status: missing key [0].reason`},
		{"campaign_status(text)", `%s - 'created_at'`,
			func() error { _, err := driver.CampaignStatus(ctx, s.Conn, "c"); return err },
			`campaign_status: missing key created_at`},
		{"status_page(text, integer)", `%s #- '{jobs,0,tenant}'`, look, `status_page: missing key jobs[0].tenant`},
		{"status_page(text, integer)", `%s #- '{workers,0,host}'`, look, `status_page: missing key workers[0].host`},
		{"status_page(text, integer)", `jsonb_set(%s, '{jobs,1,eta}', '{"kind": "done"}')`, look,
			`status_page: unexpected key jobs[1].eta (it is filled in Go)`},
		{"check_plan(jsonb)", `%s #- '{targets,0,committed}'`,
			func() error { _, err := driver.CheckPlan(ctx, s.Conn, goPlan("fresh", "acme", 1, 3, 2)); return err },
			`check_plan: missing key targets[0].committed`},
		{"campaign_check(text, integer)", `jsonb_set(%s, '{listed,0,hint}', '"x"')`,
			func() error { _, err := driver.CheckCampaign(ctx, s.Conn, "c", 10); return err },
			`campaign_check: json: unknown field "hint"`},
	} {
		name, _, _ := strings.Cut(c.fn, "(")
		def := pgtest.MustString(t, s.Conn, "select pg_get_functiondef($1::regprocedure)", c.fn)
		v := pgtest.MustString(t, s.Conn, "select "+name+"("+callArgs[name]+")::text")
		params := pgtest.MustString(t, s.Conn, "select pg_get_function_arguments($1::regprocedure)", c.fn)
		s.Exec(t, "create or replace function "+name+"("+params+") returns jsonb language sql as $f$ select "+
			fmt.Sprintf(c.edit, "$v$"+v+"$v$::jsonb")+" $f$")
		err := c.call()
		if err == nil || err.Error() != c.want+" (are the functions installed those of this chunks? run chunks migrate)" {
			t.Errorf("%s returning %s: got %v, want %q", c.fn, c.edit, err, c.want)
		}
		if errors.Is(err, driver.ErrInvalid) || errors.Is(err, driver.ErrConflict) {
			t.Errorf("%s: %v is no bad input and no conflict", c.fn, err)
		}
		s.Exec(t, def)
	}
	if err := look(); err != nil {
		t.Fatalf("status after: %v", err)
	}
}

// callArgs are the arguments TestResultsDecodeStrictly calls each function
// with to learn what it returns.
var callArgs = map[string]string{
	"worker_status": "", "campaign_status": "'c'", "status_page": "null, null", "campaign_check": "'c', 10",
	"check_plan": `'{"job_id": "fresh", "tenant": "acme", "targets": [{"id": 1, "revision": 3, "qty": 2}], "chunk_size": 2, "allow_partial": true}'`,
}

// Every timestamp Go reads is a time.Time, equal to what the tables hold:
// a campaign's created_at, a job's paused_at and visible_at, a worker's
// started_at and last_seen, the status page's now and oldest progress.
func TestResultTimestampsAreTimes(t *testing.T) {
	t.Parallel()
	s := resultSchema(t)
	at := func(sql string) time.Time {
		t.Helper()
		var v time.Time
		if err := s.Conn.QueryRow(ctx, sql).Scan(&v); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return v
	}
	st, err := driver.CampaignStatus(ctx, s.Conn, "c")
	if err != nil {
		t.Fatal(err)
	}
	if want := at("select created_at from campaigns where name = 'c'"); !st.CreatedAt.Equal(want) || st.CreatedAt.IsZero() {
		t.Errorf("campaign created_at %v, want %v", st.CreatedAt, want)
	}
	ov, err := fleet.LoadOverview(ctx, s.Conn, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	jobs := map[string]fleet.JobStatus{}
	for _, j := range ov.Jobs {
		jobs[j.JobID] = j
	}
	if p := jobs["paused"].PausedAt; p == nil || !p.Equal(at("select paused_at from job_queue where job_id = 'paused'")) {
		t.Errorf("paused_at %v", p)
	}
	if v := jobs["queued"].VisibleAt; v == nil || !v.Equal(at("select visible_at from job_queue where job_id = 'queued'")) {
		t.Errorf("visible_at %v", v)
	}
	if len(ov.Workers) != 1 {
		t.Fatalf("workers %+v", ov.Workers)
	}
	w := ov.Workers[0]
	if !w.StartedAt.Equal(at("select started_at from workers")) || !w.LastSeen.Equal(at("select last_seen from workers")) {
		t.Errorf("worker started_at %v, last_seen %v", w.StartedAt, w.LastSeen)
	}
	if o := ov.OldestProgressAt; o == nil || !o.Equal(at("select visible_at from job_queue where job_id = 'queued'")) {
		t.Errorf("oldest_progress_at %v", o)
	}
	if now := at("select now()"); ov.Now.IsZero() || ov.Now.After(now) {
		t.Errorf("now %v, server now %v", ov.Now, now)
	}
}
