package driver

import (
	"context"
	"errors"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// QueryOne runs sql, one statement the operator typed (--from-query,
// --throttle-query), on tx through the extended protocol
// ([pgx.QueryExecModeDescribeExec]), whatever default_query_exec_mode the
// DSN asks for. The simple protocol would run "select 1; commit; delete
// ..." as three statements, the COMMIT ending tx's READ ONLY transaction
// and the DELETE running on its own; one Parse message holds one statement,
// so the server refuses such a text before running any of it. That refusal
// is an [ErrInvalid] naming field: "field: must be one statement, got
// several". opts are more of pgx's query options
// ([pgx.QueryResultFormats]).
func QueryOne(ctx context.Context, tx pgx.Tx, field, sql string, opts ...any) (pgx.Rows, error) {
	rows, err := tx.Query(ctx, sql, append([]any{pgx.QueryExecModeDescribeExec}, opts...)...)
	var pgErr *pgconn.PgError
	// 42601 from exec_parse_message is only ever this refusal (other syntax
	// errors come from the parser), in whatever language the server speaks.
	if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.SyntaxError && pgErr.Routine == "exec_parse_message" {
		return nil, NewError(ErrInvalid, err, "%s: must be one statement, got several", field)
	}
	return rows, err
}
