package main

import (
	"context"
	"io"

	"github.com/jackc/pgx/v5"
)

// printResult runs call on a connection (d.withConn) and prints what it
// returns to out: as JSON with --json, else as text says. Most commands are
// one such call.
func printResult[T any](ctx context.Context, d deps, out io.Writer,
	call func(ctx context.Context, conn *pgx.Conn) (T, error), text func(v T)) error {
	var v T
	err := d.withConn(ctx, func(ctx context.Context, conn *pgx.Conn) (err error) {
		v, err = call(ctx, conn)
		return err
	})
	if err != nil {
		return err
	}
	if d.json {
		return printJSON(out, v)
	}
	text(v)
	return nil
}
