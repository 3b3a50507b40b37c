package web

import (
	"errors"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/chunks-dev/chunks/driver"
)

// The reasons an answer gives for a database error: a fixed few, chosen
// by the SQLSTATE's class. The error's own text names the user, the
// database, the host and the port, and nobody needs to log in to read an
// answer: it goes to the log, never to the client.
const (
	reasonUnavailable = "database unavailable"
	reasonNoAccess    = "chunks is not installed, is older than this binary, or this role lacks access"
	reasonNoGrant     = "this role has no chunks access: the schema's owner grants it with chunks grant"
	reasonFailed      = "database error"
)

// reason is what a client is told of err, a failed query or [Server.Ready]:
// one of the reasons above, and where the details are.
func reason(err error) string {
	return classify(err) + " (details in the chunks log)"
}

func classify(err error) string {
	if errors.Is(err, ErrNotInstalled) {
		return reasonNoAccess
	}
	if _, ok := errors.AsType[*driver.AccessError](err); ok {
		return reasonNoGrant // the role and schema it names are for the log
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return reasonUnavailable // no answer: refused, timed out, lost
	}
	switch code := pgErr.Code; {
	case pgerrcode.IsSyntaxErrororAccessRuleViolation(code), // 42883 no such function, 42501 no privilege
		pgerrcode.IsInvalidSchemaName(code):
		return reasonNoAccess
	case pgerrcode.IsConnectionException(code), // 08: the connection
		pgerrcode.IsInvalidAuthorizationSpecification(code), // 28: the login
		pgerrcode.IsInvalidCatalogName(code),                // 3D: the database
		pgerrcode.IsInsufficientResources(code),             // 53: too many connections, disk full
		pgerrcode.IsOperatorIntervention(code):              // 57: shutdown, statement timeout
		return reasonUnavailable
	}
	return reasonFailed
}
