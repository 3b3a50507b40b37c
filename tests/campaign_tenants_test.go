package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// TestCampaignOverManyTenants (issue 38, item 5): one campaign of a
// declared change over three merchants: one approval and one digest, the
// targets sorted by tenant then key, each job of one tenant (as every job
// is), each row changed once, progress by tenant in campaign status, one
// report and one undo over all of them. Refused before anything is
// written: a tenant list of another length, a tenant that is no value of
// the tenant column (naming its target), both a tenant and tenants, a key
// under two tenants.
func TestCampaignOverManyTenants(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	shop := s.UserSchema(t, paymentsSQL)
	s.Exec(t, fmt.Sprintf(`insert into %[1]s.payments select g, case when g <= 9 then 8 else 9 end, 'captured', 100 * g, null, 3, 'r' || g, g
	    from generate_series(6, 12) g`, shop))
	pgtest.MustBool(t, s.Conn, "select define_change($1)", pgtest.HoldPayment(shop))
	q := func(sql string, args ...any) string { return pgtest.MustString(t, s.Conn, sql, args...) }
	ids := []int{12, 1, 6, 2, 10, 7, 3, 11, 8}
	tenant := map[int]string{1: "7", 2: "7", 3: "7", 6: "8", 7: "8", 8: "8", 10: "9", 11: "9", 12: "9"}
	var tenants []string
	for _, id := range ids {
		tenants = append(tenants, tenant[id])
	}
	targets := paymentTargets(ids...)
	create := "select campaign_create_change('m', 'hold_payment', $1, 2, $2::jsonb, null, 16, $3)::text"

	refuse(t, s, "22023", "tenants: must name the tenant of each of the 9 targets, got 2", create, nil, targets, []string{"7", "8"})
	refuse(t, s, "22023", "tenant: give one tenant, or each target's (tenants), not both", create, "7", targets, tenants)
	bad := append([]string{}, tenants...)
	bad[3] = "x"
	refuse(t, s, "22023", "targets[3]: tenant: must be a value of column "+shop+".payments.merchant_id (integer) as it prints, got \"x\"", create, nil, targets, bad)
	twice := strings.Replace(targets, `"payment_id": 12,`, `"payment_id": 1,`, 1)
	refuse(t, s, "22023", "targets[1]: duplicate payment_id 1 (first at targets[0])", create, nil, twice, tenants)

	var created struct {
		Jobs    int    `json:"jobs"`
		Targets int    `json:"targets"`
		Digest  string `json:"digest"`
	}
	if err := json.Unmarshal([]byte(q(create, nil, targets, tenants)), &created); err != nil || created.Jobs != 3 || created.Targets != 9 {
		t.Fatalf("created %+v, %v", created, err)
	}
	sameJSON(t, "again", q("select (campaign_create_change('m', 'hold_payment', null, 2, $1::jsonb, null, 16, $2) -> 'created')::text", targets, tenants), `false`)
	sameJSON(t, "jobs", q(`select jsonb_agg(jsonb_build_array(j.job_id, j.tenant, a.tenant, job_targets(j.job_id) @? '$[*].payment_id') order by cj.seq)::text
	    from campaign_jobs as cj join jobs as j on j.job_id = cj.job_id join job_approval as a on a.job_id = j.job_id where cj.campaign = 'm'`),
		`[["m-000001", "7", "7", true], ["m-000002", "8", "8", true], ["m-000003", "9", "9", true]]`)
	sameJSON(t, "keys by job", q(`select jsonb_object_agg(t.job_id, t.keys)::text from (select ct.job_id, jsonb_agg(ct.target -> 'payment_id' order by ct.ordinal) as keys
	    from change_targets as ct where ct.job_id like 'm-%' group by ct.job_id) as t`),
		`{"m-000001": [1, 2, 3], "m-000002": [6, 7, 8], "m-000003": [10, 11, 12]}`)
	sameJSON(t, "campaign's tenant", q("select coalesce(tenant, 'null') from campaigns where name = 'm'"), `null`)

	for range 20 {
		q("select coalesce(run_next_chunk('w')::text, '')")
	}
	sameJSON(t, "status by tenant", q(`select jsonb_build_array(s -> 'tenant', s -> 'committed', s -> 'tenants')::text from campaign_status('m') as s`),
		`[null, 9, [{"tenant": "7", "targets": 3, "committed": 3, "jobs": 1, "jobs_done": 1}, {"tenant": "8", "targets": 3, "committed": 3, "jobs": 1, "jobs_done": 1},
		            {"tenant": "9", "targets": 3, "committed": 3, "jobs": 1, "jobs_done": 1}]]`)
	sameJSON(t, "report", q(`select jsonb_build_array(r -> 'matching', r -> 'drifted_count')::text from campaign_report('m') as r`), `[9, 0]`)
	if got := q(fmt.Sprintf("select string_agg(distinct status, ' ') from %s.payments where payment_id in (1, 2, 3, 6, 7, 8, 10, 11, 12)", shop)); got != "on_hold" {
		t.Errorf("payments: %s", got)
	}
	sameJSON(t, "undo", q(`select jsonb_build_array(u -> 'jobs', u -> 'targets')::text from campaign_undo('m', null) as u`), `[3, 9]`)
	sameJSON(t, "undo's jobs", q(`select jsonb_agg(j.tenant order by cj.seq)::text from campaign_jobs as cj join jobs as j on j.job_id = cj.job_id
	    where cj.campaign = 'm-undo'`), `["7", "8", "9"]`)
	// Another tenant for one target is another approval.
	other := append([]string{}, tenants...)
	other[0] = "8"
	s.Exec(t, "update "+shop+".payments set merchant_id = 8 where payment_id = 12")
	var second struct {
		Digest string `json:"digest"`
	}
	if err := json.Unmarshal([]byte(q("select campaign_create_change('m2', 'hold_payment', null, 2, $1::jsonb, null, 16, $2)::text", targets, other)), &second); err != nil || second.Digest == created.Digest {
		t.Errorf("digest with another tenant for one target: %+v (first %s), %v", second, created.Digest, err)
	}
}
