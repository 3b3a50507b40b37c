package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Role is a login role of one test: not a superuser, with no attribute
// (no CREATEDB, CREATEROLE, BYPASSRLS...) and no privilege but what the
// test grants it.
type Role struct {
	Name     string
	Password string
}

// NewRole creates a Role on the server of base (a DSN of a superuser
// without search_path), named after suffix. When the test ends, what it owns
// goes back to base's user (so a schema it owned is dropped by the test's
// own clean-up), its privileges are revoked and it is dropped.
func NewRole(t testing.TB, base, suffix string) Role {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	r := Role{Name: "r_" + hex.EncodeToString(b[:]) + "_" + suffix, Password: hex.EncodeToString(b[:])}
	admin := Connect(t, base)
	ctx := context.Background()
	id := pgx.Identifier{r.Name}.Sanitize()
	if _, err := admin.Exec(ctx, "create role "+id+" login password '"+r.Password+"'"); err != nil {
		t.Fatalf("create role %s: %v", r.Name, err)
	}
	t.Cleanup(func() {
		for _, sql := range []string{"reassign owned by " + id + " to current_user", "drop owned by " + id, "drop role " + id} {
			if _, err := admin.Exec(ctx, sql); err != nil {
				t.Errorf("%s: %v", sql, err)
				return
			}
		}
	})
	return r
}

// DSN is base (a key=value DSN) logging in as the role.
func (r Role) DSN(base string) string {
	return base + " user=" + r.Name + " password=" + r.Password
}
