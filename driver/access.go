package driver

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// AccessError is a role that may not use the schema chunks is installed
// in: it holds no USAGE on it, because it was never granted access (chunks
// grant) or because the access was revoked. To such a role the functions
// look missing (SQLSTATE 42883), so [ExplainMissing] turns that error into
// this one, which says which grant is missing. It reads as SQLSTATE 42501,
// as every other refused call of chunks does.
type AccessError struct {
	Role   string // the session's role (current_user), as pg_roles spells it
	Schema string // the schema of the search_path that holds chunks
	Owner  string // the schema's owner: it runs chunks grant
	Need   Access // the access the failed call needs
}

// Error says what is missing and the command that grants it.
func (e *AccessError) Error() string {
	return fmt.Sprintf("permission denied for schema %s (SQLSTATE 42501): role %s has no chunks access;"+
		" the schema's owner (%s) grants it: chunks grant --schema %s --%s %s",
		e.Schema, e.Role, e.Owner, e.Schema, e.Need, e.Role)
}

// SQLState is 42501, insufficient_privilege.
func (e *AccessError) SQLState() string { return pgerrcode.InsufficientPrivilege }

// CheckAccess returns an [*AccessError] when the session's role holds no
// USAGE on a schema of its search_path that holds chunks, nil when it holds
// it on every one, or the error of asking. need is the access the caller
// is about to use, for the message.
func CheckAccess(ctx context.Context, db DB, need Access) error {
	// A schema holds chunks when it has grant_access (a router has none):
	// pg_proc and pg_namespace are readable without USAGE.
	e := &AccessError{Need: need}
	err := db.QueryRow(ctx, `select n.nspname::text, pg_get_userbyid(n.nspowner)::text, current_user::text
	    from unnest(string_to_array(current_setting('search_path'), ',')) with ordinality as s(name, ord)
	    join pg_namespace as n on n.nspname = replace(btrim(btrim(s.name), '"'), '""', '"')
	   where not has_schema_privilege(n.oid, 'USAGE')
	     and exists (select from pg_proc as p where p.pronamespace = n.oid and p.proname = 'grant_access')
	   order by s.ord
	   limit 1`).Scan(&e.Schema, &e.Owner, &e.Role)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("check access: %w", err)
	}
	return e
}

// ExplainMissing returns, in place of err, the [*AccessError] that caused it
// when err is a function or table that does not exist (SQLSTATE 42883,
// 42P01) and the session's role has no USAGE on the schema of chunks.
// Otherwise, or when db cannot answer (an aborted transaction, a lost
// connection), it returns err unchanged. need is as for [CheckAccess].
func ExplainMissing(ctx context.Context, db DB, err error, need Access) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != pgerrcode.UndefinedFunction && pgErr.Code != pgerrcode.UndefinedTable {
		return err
	}
	var access *AccessError
	if errors.As(CheckAccess(ctx, db, need), &access) {
		return access
	}
	return err
}

// OwnerError is a role that may not define or drop a declared change:
// only the owner of the chunks schema, or a member of its role, may
// (docs/roles.md), and no access that chunks grant gives changes that.
// [DefineChange] and [DropChange] turn the server's 42501 into this one
// when the session's role is not such a member. It reads as SQLSTATE 42501
// and unwraps to the server's error.
type OwnerError struct {
	Action string // "define" or "drop"
	Role   string // the session's role (current_user)
	Schema string // the schema that holds chunks
	Owner  string // the schema's owner
	Err    error  // the server's error
}

// Error says who may do it, and that no grant helps.
func (e *OwnerError) Error() string {
	return fmt.Sprintf("permission denied to %s a change in schema %s (SQLSTATE 42501): only its owner (%s), or a member of that role,"+
		" may define or drop a change, and role %s is neither; chunks grant gives no such right", e.Action, e.Schema, e.Owner, e.Role)
}

// SQLState is 42501, insufficient_privilege.
func (e *OwnerError) SQLState() string { return pgerrcode.InsufficientPrivilege }

// Unwrap returns the server's error.
func (e *OwnerError) Unwrap() error { return e.Err }

// explainOwnerOnly returns, in place of err, an [*OwnerError] when err is
// a 42501 and the session's role is no member of the owner of the schema
// of its search_path that holds chunks (define_change). Otherwise, or when
// db cannot answer (an aborted transaction), it returns err unchanged.
func explainOwnerOnly(ctx context.Context, db DB, err error, action string) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != pgerrcode.InsufficientPrivilege {
		return err
	}
	e := &OwnerError{Action: action, Err: err}
	var member bool
	if qerr := db.QueryRow(ctx, `select n.nspname::text, pg_get_userbyid(n.nspowner)::text, current_user::text,
	         pg_has_role(current_user, n.nspowner, 'MEMBER')
	    from unnest(string_to_array(current_setting('search_path'), ',')) with ordinality as s(name, ord)
	    join pg_namespace as n on n.nspname = replace(btrim(btrim(s.name), '"'), '""', '"')
	   where exists (select from pg_proc as p where p.pronamespace = n.oid and p.proname = 'define_change')
	   order by s.ord
	   limit 1`).Scan(&e.Schema, &e.Owner, &e.Role, &member); qerr != nil || member {
		return err
	}
	return e
}
