package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
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
	query   string                 // the targets of every row as it was first (row 5 aside, once drifted), %[1]s the schema
}

// rawKey is the key whose JSON text is s (as the server writes it: an
// object's columns in jsonb's order, shortest name first).
func rawKey(s string) driver.Key {
	var k driver.Key
	if err := json.Unmarshal([]byte(s), &k); err != nil {
		panic(err)
	}
	return k
}

// eventAt is event i's created_at, in 2025 or 2026 (two partitions), as
// the writer prints a timestamptz in JSON.
func eventAt(i int) string {
	return time.Date(2025+i%2, 1, 1, 0, i, 0, 0, time.UTC).Format("2006-01-02T15:04:05+00:00")
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
	query:   "select payment_id, lock_version, amount_cents, 'again' as reason from %[1]s.payments where status = 'captured'",
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
	query:   "select id, email from %[1]s.contacts where not opted_out and id <> '00000000-0000-0000-0000-000000000005'",
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
	query:   "select sku, price, price * 2 as new_price from %[1]s.prices where currency = 'EUR' and sku <> 'SKU-005'",
}, {
	// A composite key whose first column is the tenant (issue 36, item 2).
	name: "torders, composite key",
	table: `create table %[1]s.torders(tenant_id integer not null, order_no integer not null, status text not null,
	  lock_version integer not null, primary key (tenant_id, order_no));
	insert into %[1]s.torders select t, g, 'open', 1 from generate_series(1, 2) t, generate_series(1, 60) g;`,
	def: `{"name": "close_order", "table": "%[1]s.torders", "key": ["tenant_id", "order_no"], "tenant": "tenant_id",
	  "version": "lock_version", "when": {"status": "open"}, "set": {"status": "closed"}}`,
	tenant:  "2",
	target:  func(i int) string { return fmt.Sprintf(`{"tenant_id": 2, "order_no": %d, "lock_version": 1}`, i) },
	key:     func(i int) driver.Key { return rawKey(fmt.Sprintf(`{"order_no": %d, "tenant_id": 2}`, i)) },
	changed: "tenant_id = 2 and status = 'closed' and lock_version = 2",
	drift:   "update %[1]s.torders set status = 'reopened' where tenant_id = 2 and order_no = 5",
	query:   "select tenant_id, order_no, lock_version from %[1]s.torders where tenant_id = 2 and status = 'open'",
}, {
	// The usual partitioned table: its primary key holds the partition key.
	name: "events, partitioned table",
	table: `create table %[1]s.events(id bigint not null, created_at timestamptz not null, status text not null,
	  primary key (id, created_at)) partition by range (created_at);
	create table %[1]s.events_2025 partition of %[1]s.events for values from ('2025-01-01 00:00+00') to ('2026-01-01 00:00+00');
	create table %[1]s.events_2026 partition of %[1]s.events for values from ('2026-01-01 00:00+00') to ('2027-01-01 00:00+00');
	insert into %[1]s.events select g, make_timestamptz(2025 + g %% 2, 1, 1, 0, 0, 0, 'UTC') + g * interval '1 minute', 'new' from generate_series(1, 60) g;`,
	def:     `{"name": "ack_event", "table": "%[1]s.events", "key": ["id", "created_at"], "expect": ["status"], "set": {"status": "acked"}}`,
	tenant:  "ops",
	target:  func(i int) string { return fmt.Sprintf(`{"id": %d, "created_at": %q, "status": "new"}`, i, eventAt(i)) },
	key:     func(i int) driver.Key { return rawKey(fmt.Sprintf(`{"id": %d, "created_at": %q}`, i, eventAt(i))) },
	changed: "status = 'acked'",
	drift:   "update %[1]s.events set status = 'reopened' where id = 5",
	query:   "select id, created_at, status from %[1]s.events where status = 'new'",
}, {
	// A citext key: keys compare as the type compares them (case aside).
	name: "users, citext key",
	table: `create extension if not exists citext schema %[1]s;
	create table %[1]s.users(email %[1]s.citext primary key, active boolean not null);
	insert into %[1]s.users select format('User%%s@Example.com', lpad(g::text, 3, '0')), true from generate_series(1, 60) g;`,
	def:     `{"name": "deactivate", "table": "%[1]s.users", "key": "email", "expect": ["active"], "set": {"active": false}}`,
	tenant:  "crm",
	target:  func(i int) string { return fmt.Sprintf(`{"email": "user%03d@example.com", "active": true}`, i) },
	key:     func(i int) driver.Key { return driver.TextKey(fmt.Sprintf("user%03d@example.com", i)) },
	changed: "not active",
	drift:   "update %[1]s.users set active = true where lower(email::text) = 'user005@example.com'",
	query:   "select email, active from %[1]s.users where active and lower(email::text) <> 'user005@example.com'",
}, {
	// A numeric key: a number in every list.
	name: "lots, numeric key",
	table: `create table %[1]s.lots(lot numeric(12, 2) primary key, state text not null);
	insert into %[1]s.lots select g + 0.25, 'open' from generate_series(1, 60) g;`,
	def:     `{"name": "close_lot", "table": "%[1]s.lots", "key": "lot", "expect": ["state"], "set": {"state": "closed"}}`,
	tenant:  "yard",
	target:  func(i int) string { return fmt.Sprintf(`{"lot": %d.25, "state": "open"}`, i) },
	key:     func(i int) driver.Key { return rawKey(fmt.Sprintf("%d.25", i)) },
	changed: "state = 'closed'",
	drift:   "update %[1]s.lots set state = 'reopened' where lot = 5.25",
	query:   "select lot, state from %[1]s.lots where state = 'open'",
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
	parts := make([]string, len(def.Key.Columns))
	for i, c := range def.Key.Columns {
		parts[i] = "new." + c + "::text"
	}
	keyText := strings.Join(parts, " || ',' || ") // a row's key as text, in its trigger
	// The table's own triggers (run as the writer, which may write their
	// table of updates): one row per changed row, and a sleep in
	// each chunk of the victim's sessions (so that it can be killed inside
	// one) and a short one in the other's (so that the job outlives the kill).
	victim := l.Name + "-victim"
	l.Exec(t, fmt.Sprintf(`create table %[1]s.updates(key text);
	  create function %[1]s.count_update() returns trigger language plpgsql as $t$
	  begin insert into %[1]s.updates values (%[3]s); return new; end $t$;
	  create trigger counted after update on %[1]s.%[2]s for each row execute function %[1]s.count_update();
	  create function %[1]s.slow() returns trigger language plpgsql as $t$
	  begin perform pg_sleep(case when current_setting('application_name') = '%[4]s' then 2 else 0.05 end); return null; end $t$;
	  create trigger slow after update on %[1]s.%[2]s for each statement execute function %[1]s.slow();
	  do $g$ begin execute format('grant insert on %[1]s.updates to %%I', (select role from change_writer)); end $g$;`, shop, table, keyText, victim))

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
	// report --json: the six lists hold the keys, whatever their type
	// (numbers, strings, objects), and nothing else.
	res := l.Chunks(t, "report", "--json", "big")
	if fields := decode[map[string]json.RawMessage](t, res); len(fields) != 6 || fields["keys"] != nil {
		t.Fatalf("report --json: want exactly the six lists, got %s", res.Stdout)
	}
	all := decode[driver.ReportKeys](t, res)
	var matching []driver.Key
	for i := 1; i <= n; i++ {
		if i != 5 {
			matching = append(matching, shape.key(i))
		}
	}
	if len(all.Approved) != n || len(all.Committed) != n || len(all.Remaining) != 0 || !slices.Equal(all.Drifted, []driver.Key{shape.key(5)}) ||
		!slices.Equal(all.Matching, matching) || len(all.Missing) != 0 {
		t.Fatalf("report --json: %+v", all)
	}
	text := wantOK(t, l.Chunks(t, "report", "big"))
	if !clitest.ContainsAll(text, "│ KEY", shape.key(5).String()+" ", "drifted", "job big: 60 approved, 60 committed, 0 remaining: 59 matching, 1 drifted, 0 missing") {
		t.Fatalf("report:\n%s", text)
	}

	// The undo restores the 59 rows still as the job left them; the drifted one is left alone.
	undo := decode[map[string]json.RawMessage](t, l.Chunks(t, "--json", "undo", "big"))
	var drifted []driver.Key
	if err := json.Unmarshal(undo["drifted"], &drifted); err != nil || !slices.Equal(drifted, []driver.Key{shape.key(5)}) || undo["keys"] != nil {
		t.Fatalf("undo --json: %v (%v)", undo, err)
	}
	wantOK(t, l.Chunks(t, "drain", "big-undo"))
	if k := pgtest.MustInt(t, l.Conn, fmt.Sprintf("select count(*) from %s.%s where %s", shop, table, shape.changed)); k != 0 {
		t.Fatalf("%d rows still changed after the undo, want 0", k)
	}

	// A campaign from a query of the rows as they are again, drained and reported.
	if out := wantOK(t, l.Chunks(t, "campaign", "create", "--change", def.Name, "--tenant", shape.tenant, "--chunk-size", "7", "--allow-partial",
		"--from-query", fmt.Sprintf(shape.query, shop), "again")); !strings.Contains(out, "59 targets of "+shape.tenant+" in 1 job of up to 700") {
		t.Fatalf("campaign create --from-query: %q", out)
	}
	wantOK(t, l.Chunks(t, "drain", "again-000001"))
	if out := wantOK(t, l.Chunks(t, "campaign", "report", "again")); !strings.Contains(out, "59 matching") {
		t.Fatalf("campaign report:\n%s", out)
	}
}
