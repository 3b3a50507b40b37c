package cli

import (
	"testing"

	"github.com/chunks-dev/chunks/driver"
)

// --tenant works against one server too: the job must be that tenant's. The
// right tenant runs, reports, pauses and drains as without it; another
// tenant is a conflict (exit 3), and nothing is written.
func TestTenantOnOneServer(t *testing.T) {
	t.Parallel()
	l := newLab(t)
	j := seedJob(t, l, "tenanted", 6, 2)

	for _, args := range [][]string{
		{"run", "--tenant", "lunar-bazaar", j.ID},
		{"drain", "--tenant", "lunar-bazaar", j.ID},
		{"report", "--tenant", "lunar-bazaar", j.ID},
		{"pause", "--tenant", "lunar-bazaar", j.ID},
		{"pause", "--after", "1", "--tenant", "lunar-bazaar", j.ID},
		{"undo", "--tenant", "lunar-bazaar", j.ID},
	} {
		wantFailure(t, l.Chunks(t, args...), 3, "job tenanted: not found for tenant lunar-bazaar")
	}
	wantJSON(t, l.Chunks(t, "inspect", "--json", "--tenant", "lunar-bazaar", j.ID), (*driver.Job)(nil))
	j.wantState(t, 0)
	wantFailure(t, l.Chunks(t, "run", "--tenant", "a b", j.ID), 2, "tenant")

	wantJSON(t, l.Chunks(t, "run", "--json", "--tenant", j.Tenant, j.ID),
		driver.ChunkResult{Processed: j.ids(0, 2), NextIndex: 2})
	j.wantState(t, 2)
	wantFailure(t, l.Chunks(t, "run", "--json", "--fail-at", "after-audit", "--tenant", j.Tenant, j.ID), 1, "drill failure")
	j.wantState(t, 2)
	wantJSON(t, l.Chunks(t, "drain", "--json", "--tenant", j.Tenant, j.ID),
		driver.DrainResult{Calls: 2, Processed: j.ids(2, 6), NextIndex: 6, Done: true})
	j.wantState(t, 6)
	wantOK(t, l.Chunks(t, "report", "--tenant", j.Tenant, j.ID))
}
