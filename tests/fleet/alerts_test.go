package fleet

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	metricsapi "github.com/chunks-dev/chunks/internal/app/metrics"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
	"github.com/chunks-dev/chunks/pace"
)

// alertsFile is the example alert rules, from this package's folder.
const alertsFile = "../../docs/alerts.yml"

// docs/alerts.yml has the five rules of docs/production.md, and each names only
// metrics that chunks worker --http and chunks serve --http really export.
func TestAlertRulesNameRealMetrics(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(body, &file); err != nil {
		t.Fatal(err)
	}
	// What the two kinds of targets export, from real registries: a
	// worker's, and serve's gauges read from a real schema.
	l := newLab(t)
	reg := metricsapi.NewRegistry()
	if _, err := metricsapi.NewWorker(reg, func() pace.State { return pace.State{} }, true, func() int { return 0 }); err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(&metricsapi.Database{DB: l.Conn})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, f := range fams {
		exported[f.GetName()] = true
	}
	var alerts []string
	name := regexp.MustCompile(`chunks_[a-z_]+`)
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			used := name.FindAllString(r.Expr, -1)
			if len(used) == 0 {
				t.Errorf("%s: %q names no chunks metric", r.Alert, r.Expr)
			}
			for _, m := range used {
				if !exported[m] {
					t.Errorf("%s: %q names %s, which nothing exports", r.Alert, r.Expr, m)
				}
			}
		}
	}
	if want := []string{"ChunksJobNoProgress", "ChunksConflict", "ChunksErrorPause", "ChunksThrottledLong", "ChunksNoLiveWorker"}; !slices.Equal(alerts, want) {
		t.Fatalf("alerts %v, want %v", alerts, want)
	}
}

// promtool checks docs/alerts.yml and runs it on made-up series: each
// alert fires when its story happens, and not before or otherwise.
func TestAlertRulesFire(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	pgtest.RequireTool(t, err, "promtool", "prometheus")
	rules, err := filepath.Abs(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", rules).CombinedOutput(); err != nil || !strings.Contains(string(out), "SUCCESS: 5 rules found") {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	tests := filepath.Join(t.TempDir(), "alerts_test.yml")
	if err := os.WriteFile(tests, []byte(strings.ReplaceAll(alertTests, "RULES", rules)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "test", "rules", tests).CombinedOutput(); err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}

// alertTests is a promtool rule test of docs/alerts.yml (RULES is its path).
const alertTests = `
rule_files: [RULES]
evaluation_interval: 1m
tests:
  # A job 11 minutes without progress: pending, then firing a minute later.
  - interval: 1m
    input_series:
      - series: 'chunks_longest_no_progress_seconds{instance="dash:8080", job="chunks-serve"}'
        values: '0 300 660 720'
    alert_rule_test:
      - {eval_time: 2m, alertname: ChunksJobNoProgress}
      - eval_time: 3m
        alertname: ChunksJobNoProgress
        exp_alerts:
          - exp_labels: {severity: warning, instance: "dash:8080", job: chunks-serve}
            exp_annotations:
              summary: A chunks job is queued but has not moved for 10 minutes
              description: >-
                Of the queued jobs, one has gone 12m 0s without progress. The status page says which
                (its ETA says stalled or throttled); see also chunks status and the workers' logs.

  # A conflict on one worker fires at once; none before.
  - interval: 1m
    input_series:
      - series: 'chunks_conflicts_total{instance="w1:9187", job="chunks-worker"}'
        values: '0 0 0 1 1'
      - series: 'chunks_conflicts_total{instance="w2:9187", job="chunks-worker"}'
        values: '0 0 0 0 0'
    alert_rule_test:
      - {eval_time: 2m, alertname: ChunksConflict}
      - eval_time: 4m
        alertname: ChunksConflict
        exp_alerts:
          - exp_labels: {severity: warning}
            exp_annotations:
              summary: A chunks job was paused by a conflict
              description: >-
                A chunk met a conflict in the last 15 minutes and paused its job. chunks status shows
                which and why; chunks report JOB shows the orders; then chunks resume JOB, or leave it
                paused.

  # An error pause on one worker (a trigger's exception) fires at once;
  # transient errors (chunk_errors_total) do not.
  - interval: 1m
    input_series:
      - series: 'chunks_error_pauses_total{instance="w1:9187", job="chunks-worker"}'
        values: '0 0 0 1 1'
      - series: 'chunks_error_pauses_total{instance="w2:9187", job="chunks-worker"}'
        values: '0 0 0 0 0'
      - series: 'chunks_chunk_errors_total{instance="w2:9187", job="chunks-worker", sqlstate="40001"}'
        values: '0 1 2 3 4'
    alert_rule_test:
      - {eval_time: 2m, alertname: ChunksErrorPause}
      - eval_time: 4m
        alertname: ChunksErrorPause
        exp_alerts:
          - exp_labels: {severity: warning}
            exp_annotations:
              summary: A chunks job was paused by an error that retrying does not fix
              description: >-
                A chunk failed in the last 15 minutes with an error that is neither a conflict nor
                transient (a trigger's exception, a constraint...) and paused its job. chunks status
                shows which job, the server's message and its SQLSTATE; fix the cause, then chunks
                resume JOB.

  # w1 held 40 minutes for replica lag; w2 40 minutes, first for the lag,
  # then for the throttle query; w3 only 20 minutes. At 35 minutes, w1 and
  # w2 fire.
  - interval: 1m
    input_series:
      - series: 'chunks_throttled{instance="w1:9187", job="chunks-worker", reason="replica_lag"}'
        values: '1x40'
      - series: 'chunks_throttled{instance="w1:9187", job="chunks-worker", reason="throttle_query"}'
        values: '0x40'
      - series: 'chunks_throttled{instance="w2:9187", job="chunks-worker", reason="replica_lag"}'
        values: '1x20 0x20'
      - series: 'chunks_throttled{instance="w2:9187", job="chunks-worker", reason="throttle_query"}'
        values: '0x20 1x20'
      - series: 'chunks_throttled{instance="w3:9187", job="chunks-worker", reason="replica_lag"}'
        values: '1x20 0x20'
    alert_rule_test:
      - {eval_time: 25m, alertname: ChunksThrottledLong}
      - eval_time: 35m
        alertname: ChunksThrottledLong
        exp_alerts:
          - exp_labels: {severity: warning, instance: "w1:9187"}
            exp_annotations:
              summary: A chunks worker has been throttled for over 30 minutes
              description: >-
                w1:9187 has held new chunks for 30 minutes. The status page and chunks status give
                the reason (a standby behind in replay, the throttle query, or a check that fails).
          - exp_labels: {severity: warning, instance: "w2:9187"}
            exp_annotations:
              summary: A chunks worker has been throttled for over 30 minutes
              description: >-
                w2:9187 has held new chunks for 30 minutes. The status page and chunks status give
                the reason (a standby behind in replay, the throttle query, or a check that fails).

  # Three jobs queued; the last worker goes at minute 2: pending, then
  # firing two minutes later.
  - interval: 1m
    input_series:
      - series: 'chunks_jobs{instance="dash:8080", job="chunks-serve", state="queued"}'
        values: '3x10'
      - series: 'chunks_jobs{instance="dash:8080", job="chunks-serve", state="running"}'
        values: '0x10'
      - series: 'chunks_live_workers{instance="dash:8080", job="chunks-serve", state="running"}'
        values: '1 1 0x8'
      - series: 'chunks_live_workers{instance="dash:8080", job="chunks-serve", state="idle"}'
        values: '0x10'
    alert_rule_test:
      - {eval_time: 3m, alertname: ChunksNoLiveWorker}
      - eval_time: 4m
        alertname: ChunksNoLiveWorker
        exp_alerts:
          - exp_labels: {severity: critical}
            exp_annotations:
              summary: chunks jobs are queued but no worker is alive
              description: >-
                3 jobs are queued and no chunks worker has sent a heartbeat for 2 minutes. Start
                chunks worker (after chunks migrate).
`
