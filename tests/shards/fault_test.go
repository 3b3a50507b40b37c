package shards

import (
	"errors"
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

// RunChunk takes a fault through a router as on one server (one API), and
// refuses it there before anything runs: the router commits the chunk on its
// shard inside the call, so no hook could run before that COMMIT, and a
// drill that "rolled back" would have committed. No hook is called and the
// job does not move; without a fault the same JobRef runs the chunk.
func TestFaultThroughRouter(t *testing.T) {
	t.Parallel()
	c := newCluster(t, shardServers[:2])
	j := job{tenant: "acme", id: "drill", orders: []int64{1, 2, 3}}
	c.place(t, []job{j}, 2)
	ref := driver.JobRef{Tenant: j.tenant, ID: j.id}
	called := 0
	_, err := ref.RunChunk(ctx, c.router, func(string) error { called++; return nil })
	if !errors.Is(err, driver.ErrInvalid) || !clitest.ContainsAll(err.Error(), "fault:", "run the drill on the shard itself") || called != 0 {
		t.Fatalf("a fault through the router: %v, %d hooks called; want ErrInvalid naming fault, no hook", err, called)
	}
	if job, err := ref.Inspect(ctx, c.router); err != nil || job == nil || job.NextIndex != 0 {
		t.Fatalf("after the refusal: %+v, %v; want next_index 0", job, err)
	}
	// On the shard itself, the same call and the same fault run the drill.
	sh := c.shardOf(t, j.tenant)
	failed := errors.New("drill")
	if _, err := ref.RunChunk(ctx, sh.conn, func(p string) error {
		if p == driver.AfterAudit {
			return failed
		}
		return nil
	}); !errors.Is(err, failed) {
		t.Fatalf("the drill on the shard: %v", err)
	}
	if res, err := ref.RunChunk(ctx, c.router, nil); err != nil || res.NextIndex != 2 {
		t.Fatalf("the chunk through the router after the drill: %+v, %v; want next_index 2 (the drill rolled back)", res, err)
	}
}
