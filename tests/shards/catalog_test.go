package shards

import (
	"slices"
	"testing"

	"github.com/chunks-dev/chunks/internal/testkit/clitest"
)

// The router's schema: every function documented with COMMENT ON, none
// SECURITY DEFINER; the PL/pgSQL and SQL ones pin search_path to the
// schema (but the inlined helpers of validate.sql, as on a shard), the
// wrappers also hide PL/Proxy's routine NOTICE; the PL/Proxy ones name the
// cluster. It holds no table, and nothing of chunks is in public.
func TestRouterCatalog(t *testing.T) {
	t.Parallel()
	c := newCluster(t, shardServers[:2])
	rows, err := c.router.Query(ctx, `
		select p.proname, l.lanname, coalesce(obj_description(p.oid, 'pg_proc'), ''), p.prosecdef,
		       coalesce(p.proconfig, '{}'), p.prosrc
		  from pg_proc as p join pg_language as l on l.oid = p.prolang
		 where p.pronamespace = $1::regnamespace order by 1`, c.schema)
	if err != nil {
		t.Fatal(err)
	}
	inlined := []string{"excerpt", "target_problem", "targets_look_normal", "limits", "limit_of", "in_range", "target_in_range",
		"is_name", "range_problem", "is_worker", "targets_text_look_normal"}
	wrappers := []string{"register", "register_change", "check_change", "check_plan", "plan_digest", "cancel_chunk", "inspect_job", "run_chunk", "report", "pause_job",
		"pause_job_after", "resume_job", "abandon_job", "skip_target", "register_undo", "job_lineage", "job_status", "worker_status", "status_page",
		"check_shards"}
	var names []string
	for rows.Next() {
		var name, lang, comment, src string
		var secdef bool
		var config []string
		if err := rows.Scan(&name, &lang, &comment, &secdef, &config, &src); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		if len(comment) < 20 || secdef {
			t.Errorf("%s: comment %q, security definer %v", name, comment, secdef)
		}
		switch {
		case lang == "plproxy":
			if !clitest.ContainsAll(src, "cluster 'chunks_"+c.schema+"'") || len(config) != 0 {
				t.Errorf("%s (plproxy): %q, config %v", name, src, config)
			}
		case slices.Contains(inlined, name):
			if len(config) != 0 {
				t.Errorf("%s is inlined, but has config %v", name, config)
			}
		default:
			want := []string{"search_path=" + c.schema + ", pg_temp"}
			if slices.Contains(wrappers, name) {
				want = append(want, "client_min_messages=warning")
			}
			if !slices.Equal(config, want) {
				t.Errorf("%s: config %v, want %v", name, config, want)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, w := range append(wrappers, "shard_of", "shards", "shard_run_chunk", "shard_job_status", "shard_ping") {
		if !slices.Contains(names, w) {
			t.Errorf("the router has no function %s; it has %v", w, names)
		}
	}
	var tables, public int
	if err := c.router.QueryRow(ctx, `select (select count(*) from pg_class where relnamespace = $1::regnamespace),
		(select count(*) from pg_proc where pronamespace = 'public'::regnamespace)`, c.schema).Scan(&tables, &public); err != nil {
		t.Fatal(err)
	}
	if tables != 0 || public != 0 {
		t.Errorf("the router's schema holds %d relations, and public %d functions; want none", tables, public)
	}
}
