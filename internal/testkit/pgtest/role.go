package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

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
// without search_path), named after suffix. On the test database's server
// ([DSN]), what it owns goes back to the superuser when the test ends (so a
// schema it owned is dropped by the test's own clean-up), its privileges
// are revoked and it is dropped; on any other server it goes with the
// server.
func NewRole(t testing.TB, base, suffix string) Role {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	r := Role{Name: "r_" + hex.EncodeToString(b[:]) + "_" + suffix, Password: hex.EncodeToString(b[:])}
	id := pgx.Identifier{r.Name}.Sanitize()
	if err := runOn(base, "create role "+id+" login password '"+r.Password+"'"); err != nil {
		t.Fatalf("create role %s: %v", r.Name, err)
	}
	if base == DSN() {
		t.Cleanup(func() {
			// The test's connections of the role are closed by now, but
			// their backends may still be exiting, dropping their temporary
			// tables: DROP OWNED racing that fails with "could not open
			// relation with OID" (XX000).
			if err := waitGone(base, r.Name); err != nil {
				t.Errorf("drop role %s: %v", r.Name, err)
				return
			}
			if err := runOn(base, "reassign owned by "+id+" to current_user", "drop owned by "+id, "drop role "+id); err != nil {
				t.Errorf("drop role %s: %v", r.Name, err)
			}
		})
	}
	return r
}

// sessionsGoneTimeout bounds how long a Role's clean-up waits for the
// backends of its closed sessions to exit.
const sessionsGoneTimeout = 30 * time.Second

// waitGone waits until no backend of role is left on the server of dsn,
// and says which are left after sessionsGoneTimeout.
func waitGone(dsn, role string) error {
	return WithConn(dsn, func(conn *pgx.Conn) error {
		deadline := time.Now().Add(sessionsGoneTimeout)
		for {
			var pids []int32
			if err := conn.QueryRow(context.Background(), `select coalesce(array_agg(pid order by pid), '{}') from pg_stat_activity
			  where usename = $1 and pid <> pg_backend_pid()`, role).Scan(&pids); err != nil {
				return err
			}
			if len(pids) == 0 {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the backends %v of the role still run after %s: a connection of the test was left open", pids, sessionsGoneTimeout)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// runOn runs statements on a connection of its own.
func runOn(dsn string, statements ...string) error {
	return WithConn(dsn, func(conn *pgx.Conn) error {
		for _, sql := range statements {
			if _, err := conn.Exec(context.Background(), sql); err != nil {
				return err
			}
		}
		return nil
	})
}

// DSN is base (key=value or a URL) logging in as the role.
func (r Role) DSN(base string) string {
	if strings.HasPrefix(base, "postgres://") || strings.HasPrefix(base, "postgresql://") {
		if u, err := url.Parse(base); err == nil {
			u.User = url.UserPassword(r.Name, r.Password)
			return u.String()
		}
	}
	return base + " user=" + r.Name + " password=" + r.Password
}
