package pgtest

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// WithConn runs fn on a connection of its own to dsn, closed afterwards;
// it returns fn's error joined with the close's.
func WithConn(dsn string, fn func(*pgx.Conn) error) (err error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, conn.Close(ctx)) }()
	return fn(conn)
}
