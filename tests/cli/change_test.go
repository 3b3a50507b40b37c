package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/clitest"
)

// changeShape is a user's table and a declared change of it, for the end
// to end test of declared changes through the binary.
type changeShape struct {
	name    string
	table   string                 // the table's SQL, %[1]s the schema
	def     string                 // the definition, %[1]s the schema
	tenant  string                 // the plan's tenant
	target  func(i int) string     // target i's JSON
	key     func(i int) driver.Key // target i's key as the report has it
	changed string                 // a condition of the rows the change left, as it left them
	drift   string                 // an UPDATE of row 5 (%[1]s the schema) that drifts it
}

var changeShapes = []changeShape{{
	name: "payments, bigint key",
	table: `create table %[1]s.payments(payment_id bigint primary key, merchant_id integer not null, status text not null,
	  amount_cents integer not null, hold_reason text, lock_version integer not null);
	insert into %[1]s.payments select g, 7, 'captured', 100 * g, null, 3 from generate_series(1, 60) g;`,
	def: `{"name": "hold_payment", "table": "%[1]s.payments", "key": "payment_id", "tenant": "merchant_id", "version": "lock_version",
	  "expect": ["amount_cents"], "when": {"status": "captured"}, "set": {"status": "on_hold"}, "set_from_target": {"hold_reason": "reason"}}`,
	tenant: "7",
	target: func(i int) string {
		return fmt.Sprintf(`{"payment_id": %d, "lock_version": 3, "amount_cents": %d, "reason": "chargeback #%[1]d"}`, i, 100*i)
	},
	key:     func(i int) driver.Key { return driver.IntKey(int64(i)) },
	changed: "status = 'on_hold' and lock_version = 4 and hold_reason = 'chargeback #' || payment_id",
	drift:   "update %[1]s.payments set status = 'refunded' where payment_id = 5",
}, {
	name: "contacts, uuid key",
	table: `create table %[1]s.contacts(id uuid primary key, email text, opted_out boolean not null default false);
	insert into %[1]s.contacts select format('00000000-0000-0000-0000-%%s', lpad(g::text, 12, '0'))::uuid, 'c' || g || '@example.com', false
	  from generate_series(1, 60) g;`,
	def:    `{"name": "opt_out", "table": "%[1]s.contacts", "key": "id", "expect": ["email"], "set": {"opted_out": true}}`,
	tenant: "crm",
	target: func(i int) string {
		return fmt.Sprintf(`{"id": "00000000-0000-0000-0000-%012d", "email": "c%d@example.com"}`, i, i)
	},
	key:     func(i int) driver.Key { return driver.TextKey(fmt.Sprintf("00000000-0000-0000-0000-%012d", i)) },
	changed: "opted_out",
	drift:   "update %[1]s.contacts set opted_out = false where id = '00000000-0000-0000-0000-000000000005'",
}, {
	// A text key, a numeric new price from each target (with more digits
	// than a float64 holds: it must arrive exactly) and when on currency;
	// rows in another currency are no targets.
	name: "prices, text key",
	table: `create table %[1]s.prices(sku text primary key, price numeric not null, currency text not null);
	insert into %[1]s.prices select format('SKU-%%s', lpad(g::text, 3, '0')), g + 0.5, 'EUR' from generate_series(1, 60) g;
	insert into %[1]s.prices select format('USD-%%s', lpad(g::text, 3, '0')), g + 0.5, 'USD' from generate_series(1, 5) g;`,
	def:    `{"name": "reprice", "table": "%[1]s.prices", "key": "sku", "expect": ["price"], "when": {"currency": "EUR"}, "set_from_target": {"price": "new_price"}}`,
	tenant: "catalog",
	target: func(i int) string {
		return fmt.Sprintf(`{"sku": "SKU-%03d", "price": %d.5, "new_price": %d.123456789012345678901}`, i, i, 2*i)
	},
	key:     func(i int) driver.Key { return driver.TextKey(fmt.Sprintf("SKU-%03d", i)) },
	changed: "currency = 'EUR' and price = 2 * substr(sku, 5)::integer + 0.123456789012345678901",
	drift:   "update %[1]s.prices set price = price + 1 where sku = 'SKU-005'",
}}

// A declared change end to end through the binary, on a user's table in a
// schema of its own: chunks change define, check --change, register
// --change, a drain by two chunks worker processes with one SIGKILLed
// inside a chunk, each row changed exactly once (change_audit, and the
// table's own row trigger), then chunks report after a row drifted by hand.
// Once with a bigint key (the report's int lists), once with a uuid key
// and once with a text key (its keys).
func TestChangeEndToEnd(t *testing.T) {
	t.Parallel()
	for _, shape := range changeShapes {
		t.Run(strings.Fields(shape.name)[0], func(t *testing.T) {
			t.Parallel()
			changeEndToEnd(t, shape)
		})
	}
}

func changeEndToEnd(t *testing.T, shape changeShape) {
	l := newLab(t)
	shop := l.UserSchema(t, shape.table)
	def, err := driver.ParseChange(strings.NewReader(fmt.Sprintf(shape.def, shop)))
	if err != nil {
		t.Fatal(err)
	}
	table := strings.TrimPrefix(def.Table, shop+".")
	// The table's own triggers (run as the writer, which may write their
	// table of updates): one row per changed row, and a sleep in
	// each chunk of the victim's sessions (so that it can be killed inside
	// one) and a short one in the other's (so that the job outlives the kill).
	victim := l.Name + "-victim"
	l.Exec(t, fmt.Sprintf(`create table %[1]s.updates(key text);
	  create function %[1]s.count_update() returns trigger language plpgsql as $t$
	  begin insert into %[1]s.updates values (new.%[3]s::text); return new; end $t$;
	  create trigger counted after update on %[1]s.%[2]s for each row execute function %[1]s.count_update();
	  create function %[1]s.slow() returns trigger language plpgsql as $t$
	  begin perform pg_sleep(case when current_setting('application_name') = '%[4]s' then 2 else 0.05 end); return null; end $t$;
	  create trigger slow after update on %[1]s.%[2]s for each statement execute function %[1]s.slow();
	  do $g$ begin execute format('grant insert on %[1]s.updates to %%I', (select role from change_writer)); end $g$;`, shop, table, def.Key, victim))

	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	defFile := write("change.json", fmt.Sprintf(shape.def, shop))
	if out := wantOK(t, l.Chunks(t, "change", "define", defFile)); out != fmt.Sprintf("defined change %s on %s (its function: apply_%[1]s; chunks change show %[1]s prints it)\n", def.Name, def.Table) {
		t.Fatalf("change define: %q", out)
	}
	show := wantOK(t, l.Chunks(t, "change", "show", def.Name))
	if !clitest.ContainsAll(show, "CREATE OR REPLACE FUNCTION "+l.Name+".apply_"+def.Name+"(", "SECURITY DEFINER") {
		t.Fatalf("change show:\n%s", show)
	}
	const n = 60
	targets := make([]string, n)
	for i := range targets {
		targets[i] = shape.target(n - i) // in descending key order: register sorts them
	}
	plan := write("plan.json", fmt.Sprintf(`{"job_id": "big", "tenant": %q, "chunk_size": 2, "allow_partial": true, "targets": [%s]}`,
		shape.tenant, strings.Join(targets, ",\n")))
	if out := wantOK(t, l.Chunks(t, "check", "--change", def.Name, plan)); out != "job big: the id is free; register would create the job\n60 of 60 targets would be changed now; 0 would not\n" {
		t.Fatalf("check --change: %q", out)
	}
	if out := wantOK(t, l.Chunks(t, "register", "--change", def.Name, plan)); out != fmt.Sprintf("registered job big of change %s: 60 targets of %s, 2 per chunk\n", def.Name, shape.tenant) {
		t.Fatalf("register --change: %q", out)
	}

	start := func(app, id string) *clitest.Proc {
		return clitest.Start(t, clitest.Options{Name: id}, "--dsn", l.ChunksDSN+" application_name="+app, "--schema", l.Name,
			"worker", "--id", id, "--verbose", "--concurrency", "1", "--poll", "200ms")
	}
	killed := start(victim, "victim")
	killed.WaitLine(t, 0, 20*time.Second, "msg=ready")
	inFlight := func() bool {
		var k int
		if err := l.Conn.QueryRow(ctx, `select count(*) from pg_stat_activity
		    where application_name = $1 and query like '%run_%chunk%' and wait_event = 'PgSleep'`, victim).Scan(&k); err != nil {
			t.Fatal(err)
		}
		return k > 0
	}
	for deadline := time.Now().Add(20 * time.Second); !inFlight(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the victim is not inside a chunk within 20 s")
		}
	}
	other := start(l.Name, "w1")
	other.WaitLine(t, 0, 20*time.Second, "msg=ready")
	killed.Signal(t, syscall.SIGKILL)
	if r := killed.WaitWithin(t, 10*time.Second); r.Signal != syscall.SIGKILL {
		t.Fatalf("want the victim killed by SIGKILL, got %v", r)
	}
	nextIndex := func() int {
		var k int
		if err := l.Conn.QueryRow(ctx, "select next_index from jobs where job_id = 'big'").Scan(&k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	if nextIndex() == n {
		t.Fatal("the job finished before the kill: the test proves nothing")
	}
	for deadline := time.Now().Add(60 * time.Second); nextIndex() < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the job is not drained within 60 s: next_index %d", nextIndex())
		}
	}
	other.Signal(t, syscall.SIGTERM)
	if r := other.WaitWithin(t, 20*time.Second); r.Code != 0 {
		t.Fatalf("want w1 to exit 0 after SIGTERM, got %v", r)
	}

	// Exactly once: one audit row per target, in key order; each row
	// updated once (the killed chunk rolled back), and as the change says.
	var audit, keys, updates, distinctUpdates, changed int
	if err := l.Conn.QueryRow(ctx, fmt.Sprintf(`select (select count(*) from change_audit where job_id = 'big'),
	    (select count(distinct key) from change_audit where job_id = 'big'),
	    (select count(*) from %[1]s.updates), (select count(distinct key) from %[1]s.updates),
	    (select count(*) from %[1]s.%[2]s where %[3]s)`, shop, table, shape.changed)).Scan(&audit, &keys, &updates, &distinctUpdates, &changed); err != nil {
		t.Fatal(err)
	}
	if audit != n || keys != n || updates != n || distinctUpdates != n || changed != n {
		t.Fatalf("audit rows %d (%d keys), row updates %d (%d rows), rows changed %d: want %d each", audit, keys, updates, distinctUpdates, changed, n)
	}

	// A row drifted by hand: the report says which.
	l.Exec(t, fmt.Sprintf(shape.drift, shop))
	r := decode[driver.JobReport](t, l.Chunks(t, "report", "--json", "big"))
	all := r.AllKeys()
	var matching []driver.Key
	for i := 1; i <= n; i++ {
		if i != 5 {
			matching = append(matching, shape.key(i))
		}
	}
	if len(all.Approved) != n || len(all.Committed) != n || len(all.Remaining) != 0 || !slices.Equal(all.Drifted, []driver.Key{shape.key(5)}) ||
		!slices.Equal(all.Matching, matching) || len(all.Missing) != 0 {
		t.Fatalf("report --json: %+v", r)
	}
	if _, integer := shape.key(1).Int(); integer != (r.Keys == nil) {
		t.Fatalf("report --json: int lists %v, keys %v (an integer key fills the int lists, any other the keys)", r.Approved, r.Keys)
	}
	text := wantOK(t, l.Chunks(t, "report", "big"))
	if !clitest.ContainsAll(text, "│ KEY", shape.key(5).String()+" ", "drifted", "job big: 60 approved, 60 committed, 0 remaining: 59 matching, 1 drifted, 0 missing") {
		t.Fatalf("report:\n%s", text)
	}
}
