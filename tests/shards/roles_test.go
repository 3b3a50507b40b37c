package shards

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
	"github.com/chunks-dev/chunks/router"
)

// With least privilege on the shards (docs/roles.md), the router reaches
// them as an operator: a role that chunks grant --operator made one on
// every shard, and that holds no privilege to write a table. Register,
// drain, report and undo through the router work as that role.
func TestRouterAsOperator(t *testing.T) {
	t.Parallel()
	c := newCluster(t, shardServers[:2])
	// One role of the same name and password on every shard (a role is
	// its server's).
	role := pgtest.NewRole(t, c.shards[0].server.DSN(), "router")
	op := role.Name
	var dsns []string
	for i, sh := range c.shards {
		if i > 0 {
			if _, err := sh.conn.Exec(ctx, "create role "+pgx.Identifier{op}.Sanitize()+" login password '"+role.Password+"'"); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := driver.Grant(ctx, sh.conn, op, driver.Operator); err != nil {
			t.Fatalf("grant on %s: %v", sh.name, err)
		}
		dsns = append(dsns, role.DSN(sh.server.DSN()))
	}
	t.Cleanup(func() {
		for _, sh := range c.shards {
			if err := pgtest.WithConn(sh.server.DSN(), func(conn *pgx.Conn) error {
				_, err := conn.Exec(ctx, "drop owned by "+pgx.Identifier{op}.Sanitize()+"; drop role "+pgx.Identifier{op}.Sanitize())
				return err
			}); err != nil {
				t.Errorf("drop role %s on %s: %v", op, sh.name, err)
			}
		}
	})
	if err := router.Install(ctx, pgtest.Connect(t, routerServer.DSN()), router.Config{Schema: c.schema, Shards: dsns}); err != nil {
		t.Fatalf("router install as the operator: %v", err)
	}

	list := jobs([]string{"acme", "initech"}, 1, 5) // acme on p0, initech on p1
	c.place(t, list, 2)
	for _, j := range list {
		all, err := driver.DrainConfig(ctx, c.router.Config(), driver.JobRef{Tenant: j.tenant, ID: j.id}, 64, nil)
		if err != nil || !all.Done {
			t.Fatalf("drain %s through the router: %+v, %v", j.id, all, err)
		}
		rep, err := driver.JobRef{Tenant: j.tenant, ID: j.id}.Report(ctx, c.router)
		if err != nil || len(rep.Matching) != 5 {
			t.Fatalf("report %s: %+v, %v", j.id, rep, err)
		}
	}
	c.checkExactlyOnce(t, list)
	undo, err := driver.JobRef{Tenant: "acme", ID: list[0].id}.RegisterUndo(ctx, c.router, "")
	if err != nil || !undo.Created || len(undo.Targets) != 5 {
		t.Fatalf("undo through the router: %+v, %v", undo, err)
	}
	// And that role still writes no table of a shard itself.
	for _, sh := range c.shards {
		var owner bool
		if err := sh.conn.QueryRow(ctx, "select has_table_privilege($1, 'jobs', 'UPDATE') or has_table_privilege($1, 'job_audit', 'INSERT')", op).Scan(&owner); err != nil || owner {
			t.Fatalf("the router's role may write the tables of %s: %v, %v", sh.name, owner, err)
		}
	}
}
