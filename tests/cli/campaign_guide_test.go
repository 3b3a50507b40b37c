package cli

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// docs/campaigns.md's real run replays as a reader types it, on a fresh
// database, in one shell (guideShell) after the demo's `export
// CHUNKS_DSN=...`: its data block, then each "$ command" of the session,
// whose output must be the lines after it (the digest, the rates and the
// ETAs aside). The worker it starts with & must be stopped by the session
// itself (its kill %1), exiting 0. A command marked "a few seconds later"
// is run again until it prints its lines (at most a minute), so the drift
// example ends the same way every time.
func TestCampaignGuide(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"psql", "jq"} {
		_, err := exec.LookPath(tool)
		pgtest.RequireTool(t, err, tool+" (docs/campaigns.md uses it)", map[string]string{"psql": "postgresql-client", "jq": "jq"}[tool])
	}
	blocks := pgtest.WantDocBlocks(t, 2, "data, session", "<!-- tests TestCampaignGuide", "campaigns.md")
	s := newGuideShell(t, shellEnv(), t.TempDir())
	s.data(readerExport(guideDatabase(t)) + "\n" + blocks[0])

	varying := regexp.MustCompile(`digest [0-9a-f]+|rate [^,]+, ETA [^;\n]+`)
	same := func(s string) string { return varying.ReplaceAllString(pgtest.TrimLines(s), "…") }
	ran, last := 0, ""
	for _, step := range guideSteps(blocks[1]) {
		command, comment, _ := strings.Cut(step.command, "  # ")
		command = strings.TrimSpace(command)
		if strings.Contains(command, "(the same approval again)") {
			command = last
		}
		if strings.Contains(command, "campaign create") {
			last = command
		}
		r := s.run(command)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		for strings.Contains(comment, "a few seconds later") && same(r.stdout) != same(step.output) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			r = s.run(command)
		}
		cancel()
		if r.code != 0 || same(r.stdout+r.stderr) != same(step.output) {
			t.Errorf("$ %s\n--- got (exit %d)\n%s%s\n--- docs\n%s", command, r.code, r.stdout, r.stderr, step.output)
		}
		ran++
	}
	s.close()
	if ran != 13 {
		t.Errorf("ran %d commands of the session, want 13", ran)
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
