package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/chunks-dev/chunks/internal/localpg"
)

// The application scenario (issue 37): what a changed row costs the
// application that runs beside the change. pgbench's TPC-B (4 clients) is
// the application, on its own tables in a schema of the bench's; for the
// same time it runs alone, beside the DBA's loop (2 connections, batch 10)
// and beside chunks (2 worker processes, chunk size 10), the three in turn,
// round after round. Both changes set pgbench_accounts.filler of accounts
// no one else updates by that column, pinned on bid, so they conflict with
// the application only on the rows' locks. The figures: the application's
// transactions per second and p99 latency (pgbench's per-transaction log),
// and the rows each change committed in that time.

// appClients is the application's pgbench clients (its -c).
const appClients = 4

// appChange is the declared change the chunks side runs on pgbench_accounts.
const appChange = "bench_app_mark"

// appRun is one timed run of the application, beside a change or alone.
type appRun struct {
	tps       float64 // application transactions per second
	mean, p50 time.Duration
	p99       time.Duration
	rows      int // rows the change beside it committed in the run
	secs      float64
}

// pgbenchPath finds pgbench among the server binaries, then on PATH.
func pgbenchPath() (string, error) {
	if dir, err := localpg.FindBinDir(); err == nil {
		if p := filepath.Join(dir, "pgbench"); fileExists(p) {
			return p, nil
		}
	}
	return exec.LookPath("pgbench")
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// pgEnv is the environment of a pgbench of cfg's server, working in schema:
// the connection in PG* variables, never in argv (which ps shows).
func pgEnv(cfg *pgx.ConnConfig, schema string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	env = append(env, "PGHOST="+cfg.Host, "PGPORT="+strconv.Itoa(int(cfg.Port)), "PGUSER="+cfg.User,
		"PGDATABASE="+cfg.Database, "PGOPTIONS=-c search_path="+schema)
	if cfg.Password != "" {
		env = append(env, "PGPASSWORD="+cfg.Password)
	}
	if cfg.TLSConfig != nil {
		env = append(env, "PGSSLMODE=require")
	}
	return env
}

// runPgbench runs pgbench with args for the application's schema, in dir
// (where -l writes its logs); its error holds what pgbench printed.
func runPgbench(ctx context.Context, bin string, cfg *pgx.ConnConfig, schema, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env, cmd.Dir = pgEnv(cfg, schema), dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgbench %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// appLatencies reads pgbench's per-transaction logs in dir (-l: each line
// "client transaction latency_us script epoch us") and removes them.
func appLatencies(dir string) ([]time.Duration, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "pgbench_log.*"))
	if err != nil {
		return nil, err
	}
	var all []time.Duration
	for _, name := range logs {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 3 {
				continue
			}
			us, err := strconv.ParseInt(fields[2], 10, 64)
			if err != nil {
				return nil, errors.Join(fmt.Errorf("pgbench log %s: %q: %w", name, sc.Text(), err), f.Close())
			}
			all = append(all, time.Duration(us)*time.Microsecond)
		}
		if err := errors.Join(sc.Err(), f.Close(), os.Remove(name)); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// applicationScenario measures the application alone, beside the loop and
// beside chunks, rounds times each in turn, and adds its Results and Pairs.
func applicationScenario(ctx context.Context, admin *pgx.Conn, o Options, rounds int, logf func(string, ...any),
	add func(Result), pair func(Pair)) (err error) {
	bin, err := pgbenchPath()
	if err != nil {
		logf("application: skipped, no pgbench (it ships with the PostgreSQL server binaries): %v", err)
		return nil
	}
	schema := "chunks_bench_app_" + randomHex()
	_, seed, drop, err := newSchema(ctx, admin, o.Conn, schema)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, drop()) }()
	app := seed.shop // the application's tables, dropped with the bench's schema
	dir, err := os.MkdirTemp("", "chunks-bench-app-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(dir)) }()
	scale, secs := "10", max(2, int(o.Duration.Seconds()))
	if o.Duration < time.Second {
		scale, secs = "1", 1 // a smoke run
	}
	if _, err := seed.conn.Exec(ctx, "create schema "+pgx.Identifier{app}.Sanitize()); err != nil {
		return err
	}
	logf("application: pgbench -i -s %s in %s", scale, app)
	if err := runPgbench(ctx, bin, o.Conn, app, dir, "-i", "-q", "-s", scale); err != nil {
		return err
	}
	for _, sql := range []string{
		fmt.Sprintf(`do $g$ declare w text := (select quote_ident(role) from change_writer); begin
		  execute format('grant usage on schema %%1$I to %%2$s; grant select, update on %%1$I.pgbench_accounts to %%2$s', %s, w); end $g$`, pgQuote(app)),
		fmt.Sprintf(`select define_change('{"name": %q, "table": %q, "key": "aid", "expect": ["bid"], "set": {"filler": "chunks"}}')`,
			appChange, app+".pgbench_accounts"),
		"create table " + pgx.Identifier{app, "loop_audit"}.Sanitize() + "(aid integer primary key, bid integer not null, at timestamptz not null default now())",
	} {
		if _, err := seed.conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("application: %w", err)
		}
	}
	conns, stop, err := bothSides(ctx, o, schema, seed)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stop()) }()
	maxAid := int64(100000) // pgbench: 100,000 accounts a branch
	if n, err := strconv.Atoi(scale); err == nil {
		maxAid *= int64(n)
	}
	smoke := o.Duration < time.Second
	nextAid := int64(1) // each run changes accounts from here on, never the same twice
	// timed runs pgbench for secs seconds beside a change (nil: alone):
	// prepare readies it before the clock starts and returns what runs
	// beside pgbench until its context ends, returning the rows it
	// committed, and the accounts it took (the next change starts after).
	timed := func(prepare func(first int64) (run func(context.Context) (int, error), span int64, err error)) (appRun, error) {
		changeCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan struct{})
		var rows int
		var changeErr error
		if prepare != nil {
			run, span, err := prepare(nextAid)
			if err != nil {
				return appRun{}, err
			}
			nextAid += span
			go func() { defer close(done); rows, changeErr = run(changeCtx) }()
		} else {
			close(done)
		}
		benchErr := runPgbench(ctx, bin, o.Conn, app, dir, "-n", "-c", strconv.Itoa(appClients), "-j", "2", "-T", strconv.Itoa(secs), "-l")
		cancel()
		<-done
		if err := errors.Join(benchErr, changeErr); err != nil {
			return appRun{}, err
		}
		lat, err := appLatencies(dir)
		if err != nil || len(lat) == 0 {
			return appRun{}, errors.Join(err, errors.New("pgbench logged no transaction"))
		}
		slices.Sort(lat)
		var sum time.Duration
		for _, l := range lat {
			sum += l
		}
		return appRun{tps: float64(len(lat)) / float64(secs), mean: sum / time.Duration(len(lat)), p50: lat[len(lat)/2],
			p99: lat[len(lat)*99/100], rows: rows, secs: float64(secs)}, nil
	}
	loop := func(first int64) (func(context.Context) (int, error), int64, error) {
		// As many accounts as the loop could reach at 30,000 rows/s, within the table.
		span := min(maxAid-first+1, int64(30000*secs))
		return func(ctx context.Context) (int, error) { return appLoop(ctx, conns, app, first, first+span-1) }, span, nil
	}
	chunks := func(first int64) (func(context.Context) (int, error), int64, error) {
		jobs := int64(20000*secs) / targetsPerJob // more than 2 workers run in secs here
		if smoke {
			jobs = 20
		}
		jobs = min(jobs, (maxAid-first+1)/targetsPerJob)
		prefix, err := appJobs(ctx, seed, app, first, jobs)
		return func(ctx context.Context) (int, error) { return appChunks(ctx, seed, prefix) }, jobs * targetsPerJob, err
	}
	logf("application: pgbench TPC-B, %d clients, %d s alone, beside the DBA's loop and beside chunks, %d rounds", appClients, secs, rounds)
	var runs [3][]appRun
	for i := range rounds {
		order := []int{0, 1, 2}
		if i%2 == 1 {
			order = []int{0, 2, 1}
		}
		for _, k := range order {
			var r appRun
			switch k {
			case 0:
				r, err = timed(nil)
			case 1:
				r, err = timed(loop)
			case 2:
				r, err = timed(chunks)
			}
			if err != nil {
				return fmt.Errorf("application, round %d: %w", i+1, err)
			}
			runs[k] = append(runs[k], r)
		}
	}
	for k, variant := range []string{"pgbench alone", "pgbench beside the DBA's loop (2 connections, batch 10)",
		"pgbench beside chunks (2 worker processes, chunk size 10)"} {
		s := sample{}
		var means, p50s, p99s []float64
		for _, r := range runs[k] {
			s.chunks += int(r.tps * r.secs)
			s.orders += r.rows
			s.elapsed += time.Duration(r.secs * float64(time.Second))
			means, p50s, p99s = append(means, ms(r.mean)), append(p50s, ms(r.p50)), append(p99s, ms(r.p99))
		}
		// Chunks are the application's transactions, rows the change's; the
		// latencies are the application's, each the median of the rounds'.
		res := s.result("application", variant, false)
		res.MeanMs, res.P50Ms, res.P99Ms = median(means), median(p50s), median(p99s)
		add(res)
	}
	// The toll of a changed row: the application's transactions per second
	// lost, per row per second the change committed, round by round.
	toll := func(k, i int) float64 {
		r := runs[k][i]
		return (runs[0][i].tps - r.tps) / (float64(r.rows) / r.secs)
	}
	p := Pair{Name: appPairName, A: "beside chunks (2 worker processes)", B: "beside the DBA's loop (2 connections)"}
	for i := range rounds {
		if runs[1][i].rows == 0 || runs[2][i].rows == 0 {
			return fmt.Errorf("application, round %d: a change committed no row (loop %d, chunks %d)", i+1, runs[1][i].rows, runs[2][i].rows)
		}
		// A round where the loop cost the application nothing measurable (a
		// run too short to tell) has no ratio: 0, never an infinity JSON
		// cannot carry.
		ratio := 0.0
		if loop := toll(1, i); loop > 0 {
			ratio = toll(2, i) / loop
		}
		p.Rounds = append(p.Rounds, ratio)
	}
	p.Median = median(p.Rounds)
	pair(p)
	return nil
}

// appPairName names the application scenario's Pair: the lost application
// TPS per changed row/s beside chunks over that beside the loop.
const appPairName = "the application's lost TPS per changed row/s: beside chunks vs beside the DBA's loop (chunk and batch 10)"

// appLoop is the DBA's loop on pgbench_accounts from aid first to last,
// batches of 10 on each of conns, until ctx ends (a batch in flight then
// still commits); it returns the rows it committed.
func appLoop(ctx context.Context, conns []*pgx.Conn, app string, first, last int64) (int, error) {
	statement := fmt.Sprintf(`with t as (select * from unnest($1::integer[], $2::integer[]) as t(aid, bid)),
		changed as (update %[1]s.pgbench_accounts as a set filler = 'chunks' from t where a.aid = t.aid and a.bid = t.bid returning a.aid, a.bid)
		insert into %[1]s.loop_audit (aid, bid) select aid, bid from changed`, pgx.Identifier{app}.Sanitize())
	work := make(chan loopBatch)
	go func() {
		defer close(work)
		for from := first; from+9 <= last; from += 10 {
			aids, bids := make([]int32, 10), make([]int32, 10)
			for k := range aids {
				aid := from + int64(k)
				aids[k], bids[k] = int32(aid), int32((aid-1)/100000+1) // pgbench: 100,000 accounts a branch
			}
			select {
			case work <- loopBatch{args: []any{aids, bids}, rows: 10}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return runLoop(ctx, conns, statement, work)
}

// appJobs registers jobs of the change over accounts from aid first (64
// targets each, chunk size 10), paused, and returns their ids' prefix.
func appJobs(ctx context.Context, seed *seeder, app string, first, jobs int64) (string, error) {
	prefix := fmt.Sprintf("app%d-", first)
	err := pgx.BeginFunc(ctx, seed.conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `select count(register_change($1, jsonb_build_object('job_id', $2::text || j, 'tenant', $3::text,
		    'chunk_size', 10, 'allow_partial', true, 'targets', (select jsonb_agg(jsonb_build_object('aid', a.aid, 'bid', a.bid) order by a.aid)
		      from `+pgx.Identifier{app, "pgbench_accounts"}.Sanitize()+` as a where a.aid between $4 + j * 64 and $4 + j * 64 + 63))))
		    from generate_series(0, $5 - 1) as j`, appChange, prefix, seed.tenant, first, jobs); err != nil {
			return fmt.Errorf("register the application's jobs: %w", err)
		}
		_, err := tx.Exec(ctx, "update job_queue set paused = true where job_id like $1 || '%'", prefix)
		return err
	})
	return prefix, err
}

// appChunks releases the jobs of prefix to the workers and, when ctx ends,
// pauses what is left of them and returns the rows committed (a chunk in
// flight then still commits).
func appChunks(ctx context.Context, seed *seeder, prefix string) (int, error) {
	bg := context.WithoutCancel(ctx)
	if _, err := seed.conn.Exec(bg, `with go as (update job_queue set paused = false, visible_at = clock_timestamp()
		where job_id like $1 || '%' returning 1) select count(*), pg_notify(queue_channel(), 'go') from go`, prefix); err != nil {
		return 0, err
	}
	<-ctx.Done()
	if _, err := seed.conn.Exec(bg, "update job_queue set paused = true where job_id like $1 || '%'", prefix); err != nil {
		return 0, err
	}
	var rows int
	err := seed.conn.QueryRow(bg, "select count(*)::int from change_audit where job_id like $1 || '%'", prefix).Scan(&rows)
	return rows, err
}
