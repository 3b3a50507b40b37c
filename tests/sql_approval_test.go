package tests

import (
	"strings"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// A stored job rewritten after register, even by the owner, into another
// sound approval is refused by run_chunk, report and register_undo with a
// conflict naming what differs, and paused by a worker's pass, before any
// order changes: the approval job_approval recorded is what counts.
func TestSQLApprovalRewriteIsRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, tamper, msg string
	}{
		{"another order in the targets", `update jobs set targets = jsonb_set(targets, '{7,id}', '199')`,
			"job j: the stored job is no longer the registered approval: its targets were changed after register (sha256 "},
		{"another tenant", `update jobs set tenant = 'globex'`,
			`job j: the stored job is no longer the registered approval: its tenant is "globex", registered "acme"`},
		{"another chunk size", `update jobs set chunk_size = 1`,
			"job j: the stored job is no longer the registered approval: its chunk_size is 1, registered 2"},
		{"another kind", `insert into job_kind (job_id, kind, undoes) values ('j', 'restore', 'other')`,
			"job j: the stored job is no longer the registered approval: its kind is restore, registered cancel"},
		{"the approval deleted", `delete from job_approval`,
			"job j: was never registered through chunks (job_approval has no record of it): a job row written by hand is not an approval"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := pgtest.NewSchema(t)
			registerJob(t, s, "j", "acme", 1, 8, 2)
			registerJob(t, s, "other", "acme", 101, 1, 1)
			seedOrders(t, s, "acme", 199, 1)
			s.Exec(t, "select run_chunk('j')")
			s.Exec(t, c.tamper)
			before := state(t, s)
			for _, sql := range []string{"select run_chunk('j')::text", "select report('j')::text"} {
				_, err := pgtest.TryString(s.Conn, sql)
				pgtest.WantPgErrorContaining(t, err, "CH409", c.msg)
				unchanged(t, s, sql, before)
			}
			s.Exec(t, "select pause_job('j')")
			_, err := pgtest.TryString(s.Conn, "select register_undo('j')::text")
			if c.name == "another kind" { // an undo is refused before its approval is read
				pgtest.WantPgErrorContaining(t, err, "CH409", "job j: is the undo of other")
			} else {
				pgtest.WantPgErrorContaining(t, err, "CH409", c.msg)
			}
			s.Exec(t, "select resume_job('j')")
			// A worker's pass pauses the job with the reason, in its commit.
			s.Exec(t, "delete from job_queue where job_id <> 'j'")
			pass := pgtest.MustString(t, s.Conn, "select run_next_chunk('w1')::text")
			if !strings.Contains(pass, `"paused": true`) || !strings.Contains(pass, `"sqlstate": "CH409"`) {
				t.Fatalf("pass: %s", pass)
			}
			if reason := pgtest.MustString(t, s.Conn, "select pause_reason from job_queue where job_id = 'j'"); !strings.HasPrefix(reason, c.msg) {
				t.Fatalf("pause_reason %q", reason)
			}
			unchanged(t, s, "the pass", before)
		})
	}
}

// A job row written by hand, without register, is never run or reported,
// and register of the same approval under its id is a conflict: it was
// never approved through chunks.
func TestSQLApprovalHandWrittenJob(t *testing.T) {
	t.Parallel()
	s := pgtest.NewSchema(t)
	seedOrders(t, s, "acme", 1, 2)
	s.Exec(t, `insert into jobs values ('forged', 'acme', $1::jsonb, 1, 0)`, targets(1, 2))
	const never = "job forged: was never registered through chunks (job_approval has no record of it): a job row written by hand is not an approval"
	refuse(t, s, "CH409", never, "select run_chunk('forged')::text")
	refuse(t, s, "CH409", never, "select report('forged')::text")
	refuse(t, s, "CH409", "job forged: a job row with this id exists but was never registered through chunks (job_approval has no record of it)",
		"select register($1::jsonb)::text", plan("forged", "acme", 1, 2, 1))
	if got := pgtest.MustString(t, s.Conn, "select check_plan($1::jsonb) ->> 'job_problem'", plan("forged", "acme", 1, 2, 1)); !strings.Contains(got, "never registered through chunks") {
		t.Fatalf("check_plan: %s", got)
	}
	// register records the approval; the owner's digest is of the stored,
	// normalized targets (sorted by id), so it matches them exactly.
	registerJob(t, s, "real", "acme", 11, 3, 2)
	sameJSON(t, "job_approval", pgtest.MustString(t, s.Conn, `select jsonb_build_object('kind', a.kind, 'tenant', a.tenant, 'chunk_size', a.chunk_size,
	    'digest_matches', a.targets_sha256 = encode(sha256(convert_to(j.targets::text, 'UTF8')), 'hex'),
	    'recorded_from', a.recorded_from, 'recorded_by', a.recorded_by = session_user)::text
	  from job_approval as a join jobs as j using (job_id) where job_id = 'real'`),
		`{"kind": "cancel", "tenant": "acme", "chunk_size": 2, "digest_matches": true, "recorded_from": "register", "recorded_by": true}`)
}
