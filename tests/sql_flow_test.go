package tests

import (
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

func TestSQLFlow(t *testing.T) {
	s := pgtest.NewSchema(t)
	registerJob(t, s, "festival", "alien-desert", 1, 25, 10)
	seedOrders(t, s, "other", 100, 3)

	sameJSON(t, "chunk 1", queryString(t, s, "select run_chunk('festival')::text"),
		`{"processed": [1,2,3,4,5,6,7,8,9,10], "next_index": 10, "done": false}`)
	sameJSON(t, "chunk 2", queryString(t, s, "select run_chunk('festival')::text"),
		`{"processed": [11,12,13,14,15,16,17,18,19,20], "next_index": 20, "done": false}`)
	sameJSON(t, "chunk 3", queryString(t, s, "select run_chunk('festival')::text"),
		`{"processed": [21,22,23,24,25], "next_index": 25, "done": true}`)
	sameJSON(t, "after done", queryString(t, s, "select run_chunk('festival')::text"),
		`{"processed": [], "next_index": 25, "done": true}`)
	s.Exec(t, "update orders set qty = 5, revision = revision + 1 where id = 4")
	s.Exec(t, "delete from orders where id = 7")
	sameJSON(t, "report", queryString(t, s, "select report('festival')::text"), `{
	  "approved": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25],
	  "committed": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25],
	  "remaining": [],
	  "matching": [1,2,3,5,6,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25],
	  "drifted": [4], "missing": [7]}`)
}
