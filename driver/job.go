package driver

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/chunks-dev/chunks/internal/chunktx"
)

// JobRef names one job for the job operations ([JobRef.RunChunk],
// [JobRef.Inspect], [JobRef.Report], [JobRef.RegisterUndo],
// [JobRef.Lineage], [DrainConfig], and fleet's Pause, PauseAfter and
// Resume): its id and, optionally, its tenant. The same JobRef works on one
// server and through a chunks router (package router), with the same SQL.
//
// Without a tenant an operation calls the contract's function of the job,
// run_chunk(job_id). With one it calls the same function's tenant-scoped
// signature, run_chunk(tenant, job_id), which one server and a router both
// have: it runs only when the job is that tenant's, and answers a job of
// another tenant as missing (an [ErrConflict] "job x: not found for tenant
// t", or nil where the operation answers nil for an unknown job). A router
// needs the tenant (a job id is unique per shard only); on one server it is
// a check.
type JobRef struct {
	ID     string // the job id
	Tenant string // the job's tenant; "" for any (on one server only)
}

// Validate checks the id and the tenant, if any, before any connection, as
// every operation on the job does: a 22023 [Error] naming the field.
func (j JobRef) Validate() error {
	if j.Tenant != "" {
		if err := checkName("tenant", j.Tenant); err != nil {
			return err
		}
	}
	return checkName("job_id", j.ID)
}

// Call checks the names and returns the SQL of job function fn on this
// job, "select fn($1, ...)", with its arguments ([JobRef.Args]). Every job
// operation sends it, so a new operation is one SQL function (with its
// tenant-scoped signature and its routed template) and one Go function
// around Call.
func (j JobRef) Call(fn string, args ...any) (string, []any, error) {
	if err := j.Validate(); err != nil {
		return "", nil, err
	}
	all := j.Args(args...)
	return "select " + fn + "(" + params(len(all)) + ")", all, nil
}

// Args is the arguments of a job function's call: the tenant first when
// there is one, then the id, then args.
func (j JobRef) Args(args ...any) []any {
	all := []any{j.ID}
	if j.Tenant != "" {
		all = []any{j.Tenant, j.ID}
	}
	return append(all, args...)
}

// chunkCall is run_chunk's call on this job for the chunk path
// (internal/chunktx): the expression, which a caller selects, and its
// arguments.
func (j JobRef) chunkCall() (string, []chunktx.Arg) {
	if j.Tenant == "" {
		return "run_chunk($1)::text", []chunktx.Arg{{Text: j.ID, OID: pgtype.TextOID}}
	}
	return "run_chunk($1, $2)::text", []chunktx.Arg{{Text: j.Tenant, OID: pgtype.TextOID}, {Text: j.ID, OID: pgtype.TextOID}}
}

// params is "$1, $2, ..., $n".
func params(n int) string {
	p := make([]string, n)
	for i := range p {
		p[i] = "$" + strconv.Itoa(i+1)
	}
	return strings.Join(p, ", ")
}

// routerFunction is the PL/Proxy function that routes run_chunk on a
// chunks router; a server whose search_path has it is a router.
const routerFunction = "to_regprocedure('shard_run_chunk(text, text)')"

// Routed says whether db is a chunks router (package router installs
// one): whether its search_path has the PL/Proxy function that routes
// run_chunk. A crash drill ([Fault]) and pacing need the shard itself.
func Routed(ctx context.Context, db DB) (bool, error) {
	var yes bool
	err := db.QueryRow(ctx, "select "+routerFunction+" is not null").Scan(&yes)
	return yes, MapError(err)
}
