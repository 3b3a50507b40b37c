package tests

import (
	"testing"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// BenchmarkCampaign is campaign status and report of a campaign of 100,000
// targets (1,667 jobs of 60 at chunk size 10), every one committed, with
// another campaign of 100,000 targets, none committed, in the same tables:
// one call on one connection per iteration. The setup (creating both and
// running every chunk of the first, in one transaction, as run_chunk
// would one by one) takes a while; so use a fixed -benchtime:
//
//	go test -run '^$' -bench Campaign -benchtime 20x -count 5 ./tests/ > campaign.txt
func BenchmarkCampaign(b *testing.B) {
	const n = 100000
	s := pgtest.NewSchema(b)
	seedOrders(b, s, "acme", 1, 2*n)
	for _, c := range []struct {
		name  string
		first int
	}{{"c", 1}, {"other", n + 1}} {
		s.Exec(b, `select campaign_create($1, 'acme', 10, array(select generate_series($2::int, $2::int + $3::int - 1)),
		             array_fill(3, array[$3::int]), array_fill(2, array[$3::int]))`, c.name, c.first, n)
	}
	runWholeCampaign(b, s, "c")
	s.Exec(b, "analyze")
	st, err := driver.CampaignStatus(ctx, s.Conn, "c")
	if err != nil {
		b.Fatal(err)
	}
	if st.Committed != n || st.JobsDone != st.Jobs {
		b.Fatalf("status %+v", st)
	}
	b.Run("status", func(b *testing.B) {
		for b.Loop() {
			if _, err := driver.CampaignStatus(ctx, s.Conn, "c"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("report", func(b *testing.B) {
		for b.Loop() {
			if _, err := driver.CampaignReport(ctx, s.Conn, "c"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
