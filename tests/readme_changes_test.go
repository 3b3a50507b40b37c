package tests

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// docs/your-own-tables.md: the SQL session, from define to undo, runs as
// shown (on a shop.payments of this test's own schema), each result it shows in a
// comment is the result, and the table of fields names exactly the fields
// of driver.ChangeDefinition, in order.
func TestREADMEYourOwnTables(t *testing.T) {
	t.Parallel()
	blocks := pgtest.WantDocBlocks(t, 2, "session, fields", "<!-- tests TestREADMEYourOwnTables", "your-own-tables.md")
	session, fields := blocks[0], blocks[1]

	var documented []string
	field := regexp.MustCompile("^\\| `([a-z_]+)` \\|")
	for _, line := range strings.Split(fields, "\n") {
		if m := field.FindStringSubmatch(line); m != nil {
			documented = append(documented, m[1])
		}
	}
	var tags []string
	typ := reflect.TypeOf(driver.ChangeDefinition{})
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		tags = append(tags, name)
	}
	if !slices.Equal(documented, tags) {
		t.Errorf("the guide's fields %v, driver.ChangeDefinition's %v", documented, tags)
	}

	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, `create table %[1]s.payments(payment_id bigint primary key, merchant_id integer not null,
	  status text not null, amount_cents integer not null, hold_reason text, lock_version integer not null);
	  insert into %[1]s.payments values (5, 42, 'captured', 300, null, 0), (7, 42, 'captured', 1200, null, 3);`)
	session = strings.ReplaceAll(session, "shop.payments", shop+".payments")
	session = strings.ReplaceAll(session, "schema shop ", "schema "+shop+" ")
	session = strings.ReplaceAll(session, "lab_writer", writerOf(t, s))
	var statement strings.Builder
	ran := 0
	for _, line := range strings.Split(session, "\n") {
		code, comment, _ := strings.Cut(line, "--")
		if strings.TrimSpace(code) == "" || strings.HasPrefix(strings.TrimSpace(code), "```") {
			continue
		}
		statement.WriteString(code + "\n")
		if !strings.HasSuffix(strings.TrimSpace(code), ";") {
			continue
		}
		sql := strings.TrimSuffix(strings.TrimSpace(statement.String()), ";")
		statement.Reset()
		ran++
		switch want := strings.TrimSpace(comment); {
		case strings.HasPrefix(want, "{"):
			sameJSON(t, sql, pgtest.MustString(t, s.Conn, "select ("+sql+")::text"), want)
		case strings.HasPrefix(want, "true"):
			if got := pgtest.MustString(t, s.Conn, "select ("+sql+")::text"); got != "true" {
				t.Errorf("%s: %s, the guide says true", sql, got)
			}
		default:
			s.Exec(t, sql)
		}
	}
	if ran != 12 {
		t.Fatalf("ran %d statements of the guide's session, want 12", ran)
	}
	// 5 drifted by hand and was left alone; 7 has its values back, version + 1.
	sameJSON(t, "payments", pgtest.MustString(t, s.Conn, "select jsonb_agg(jsonb_build_array(payment_id, status, hold_reason, lock_version) order by payment_id)::text from "+shop+".payments"),
		`[[5, "on_hold", "disputed", 1], [7, "captured", null, 5]]`)
	sameJSON(t, "report", pgtest.MustString(t, s.Conn, "select report('holds-1')::text"),
		`{"approved": [5, 7], "committed": [5, 7], "remaining": [], "matching": [], "drifted": [5, 7], "missing": []}`)
}
