package cli

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/internal/pgtest"
)

// docs/campaigns.md's real run replays as written, on this test's schema:
// its data block, then each "$ command" of the session, whose output must
// be the lines after it (the digest, the rates and the ETAs aside). A
// command ending in & runs in the background until the end; one marked
// "a few seconds later" is run again until it prints its lines (at most a
// minute). So the drift example ends the same way every time.
func TestCampaignGuide(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"psql", "jq"} {
		_, err := exec.LookPath(tool)
		pgtest.RequireTool(t, err, tool+" (docs/campaigns.md uses it)", map[string]string{"psql": "postgresql-client", "jq": "jq"}[tool])
	}
	blocks := pgtest.WantDocBlocks(t, 2, "data, session", "<!-- tests TestCampaignGuide", "campaigns.md")
	l := newLab(t)
	ours := strings.NewReplacer("--schema lab", "--schema "+l.Name, "lab.orders", l.Name+".orders", "search_path = lab", "search_path = "+l.Name)
	env := shellEnv("CHUNKS_DSN=" + l.ChunksDSN)
	dir := t.TempDir()
	sh := func(command string) string {
		cmd := exec.Command("sh", "-e", "-c", ours.Replace(command))
		cmd.Env, cmd.Dir = env, dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", command, err, out)
		}
		return string(out)
	}
	sh(blocks[0])

	varying := regexp.MustCompile(`digest [0-9a-f]+|rate [0-9.]+/s, ETA [^;]+;`)
	same := func(s string) string { return varying.ReplaceAllString(pgtest.TrimLines(s), "…") }
	ran, last := 0, ""
	for _, step := range guideSteps(blocks[1]) {
		command, comment, _ := strings.Cut(step.command, "  # ")
		command = strings.TrimSpace(command)
		switch {
		case strings.Contains(command, "(the same approval again)"):
			command = last
		case strings.HasSuffix(command, "&"):
			worker := exec.Command("sh", "-c", "exec "+ours.Replace(strings.TrimSuffix(command, "&")))
			worker.Env, worker.Dir = env, dir
			if err := worker.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := worker.Process.Signal(syscall.SIGTERM); err != nil {
					t.Errorf("stop the worker: %v", err)
				}
				if err := worker.Wait(); err != nil {
					t.Errorf("the worker: %v", err)
				}
			})
			ran++
			continue
		}
		if strings.Contains(command, "campaign create") {
			last = command
		}
		got := sh(command)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		for strings.Contains(comment, "a few seconds later") && same(got) != same(step.output) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			got = sh(command)
		}
		cancel()
		if same(got) != same(step.output) {
			t.Errorf("$ %s\n--- got\n%s\n--- docs\n%s", command, got, step.output)
		}
		ran++
	}
	if ran != 12 {
		t.Errorf("ran %d commands of the session, want 12", ran)
	}
}

// guideStep is one "$ command" of a transcript and the lines it printed.
type guideStep struct{ command, output string }

// guideSteps splits a shell transcript into its commands (a line that
// ends in \ goes on on the next) and their output.
func guideSteps(block string) []guideStep {
	var steps []guideStep
	lines := strings.Split(strings.TrimRight(block, "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		command, ok := strings.CutPrefix(lines[i], "$ ")
		if !ok {
			steps[len(steps)-1].output += lines[i] + "\n"
			continue
		}
		for strings.HasSuffix(command, `\`) && i+1 < len(lines) {
			i++
			command = strings.TrimSuffix(command, `\`) + strings.TrimSpace(lines[i])
		}
		steps = append(steps, guideStep{command: command})
	}
	return steps
}
