package tests

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// A hostile plan's huge values come back as a short excerpt and a length,
// from the Go face and from the SQL face alike: never the value itself.
func TestLongValuesAreExcerpted(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	digits := "1" + strings.Repeat("0", 99_999) // 100,000 digits: more than jsonb's numeric takes is refused by the cast
	zeros64 := "1" + strings.Repeat("0", 63)
	keyOf := strings.Repeat("k", 1_000_000)
	k64 := strings.Repeat("k", 64)
	cases := []struct {
		name, plan string
		goMsg      string // ParsePlan's message, without "invalid: "
		sqlMsg     string // register's
	}{
		{"a chunk_size of 100,000 digits", planWith(map[string]string{"chunk_size": digits}),
			"chunk_size: must be between 1 and 10, got " + zeros64 + "… (100000 characters)",
			"chunk_size: must be between 1 and 10, got " + zeros64 + "… (100000 characters)"},
		{"a chunk_size of 1e400", planWith(map[string]string{"chunk_size": "1e400"}),
			"chunk_size: must be an integer, got 1e400", // Go reads the text
			"chunk_size: must be between 1 and 10, got " + zeros64 + "… (401 characters)"},
		{"an id of 1e400", planWith(map[string]string{"targets": list(entry("1e400", "3", "2"))}),
			"targets[0].id: must be an integer, got 1e400",
			"targets[0].id: must be between 1 and 2147483647, got " + zeros64 + "… (401 characters)"},
		{"an id of 100,000 digits", planWith(map[string]string{"targets": list(entry(digits, "3", "2"))}),
			"targets[0].id: must be between 1 and 2147483647, got " + zeros64 + "… (100000 characters)",
			"targets[0].id: must be between 1 and 2147483647, got " + zeros64 + "… (100000 characters)"},
		{"a key of 1,000,000 characters", planWith(map[string]string{keyOf: "1"}),
			`plan: unexpected key "` + k64 + `"… (1000000 characters)`,
			`plan: unexpected key "` + k64 + `"… (1000000 characters)`},
		{"an allow_partial of 1,000,000 characters", planWith(map[string]string{"allow_partial": `"` + keyOf + `"`}),
			`allow_partial: must be true (each chunk commits on its own), got string "` + k64 + `"… (1000000 characters)`,
			`allow_partial: must be true (each chunk commits on its own), got "` + k64[:63] + `… (1000002 characters)`},
		{"a target with a key of 1,000,000 characters", planWith(map[string]string{"targets": `[{"id": 1, "qty": 2, "` + keyOf + `": 3}]`}),
			"targets[0]: must have exactly the keys id, revision, qty, got id, qty, " + k64[:55] + "… (1000009 characters)",
			`targets[0]: must have exactly the keys id, revision, qty, got {"id": 1, "qty": 2, "` + k64[:43] + "… (1000026 characters)"},
		{"a job_id of 1,000,000 characters", planWith(map[string]string{"job_id": `"` + keyOf + `"`}),
			"job_id: must be 1 to 64 ASCII letters, digits, _ or -, got 1000000 characters",
			"job_id: must be 1 to 64 ASCII letters, digits, _ or -, got 1000000 characters"},
		{"a job_id of 64 characters with a space", planWith(map[string]string{"job_id": `"` + strings.Repeat("j", 63) + ` "`}),
			`job_id: must be 1 to 64 ASCII letters, digits, _ or -, got "` + strings.Repeat("j", 63) + ` "`,
			`job_id: must be 1 to 64 ASCII letters, digits, _ or -, got "` + strings.Repeat("j", 63) + ` "`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := driver.ParsePlan([]byte(c.plan))
			if !errors.Is(err, driver.ErrInvalid) || err.Error() != "invalid: "+c.goMsg {
				t.Errorf("ParsePlan:\n got %v\nwant invalid: %s", err, c.goMsg)
			}
			_, err = pgtest.TryString(s.Conn, "select register($1::jsonb)::text", c.plan)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "22023" || pgErr.Message != c.sqlMsg {
				t.Errorf("register:\n got %v\nwant 22023 %s", err, c.sqlMsg)
			}
		})
	}
}

// Issue 35 item 15: a campaign query's value that does not scan, and its
// columns, come back shortened too: pgx's own words quote the value whole.
func TestCampaignQueryValuesExcerpted(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	columns, names := make([]string, 200), make([]string, 200)
	for i := range columns {
		columns[i], names[i] = fmt.Sprintf("%d as c%d", i, i), fmt.Sprintf("c%d", i)
	}
	for _, c := range []struct{ name, query, msg string }{
		{"an id of 1000 digits", "select repeat('9', 1000)::numeric as id, 0 as revision, 1 as qty",
			"invalid: row 1: can't scan into dest[0] (col: id): " + strings.Repeat("9", 64) + "… (1000 characters) is out of range for int64"},
		{"200 columns", "select " + strings.Join(columns, ", "),
			"invalid: query: must return exactly the columns id, revision, qty, got " + driver.Excerpt(strings.Join(names, ", "), false)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := driver.CampaignTargetsFromQuery(ctx, s.Conn, c.query); !errors.Is(err, driver.ErrInvalid) || err.Error() != c.msg {
				t.Fatalf("CampaignTargetsFromQuery:\n got %v\nwant %s", err, c.msg)
			}
		})
	}
}
