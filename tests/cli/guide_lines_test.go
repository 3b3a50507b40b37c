package cli

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/internal/localpg"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// A guide's session is replayed as a reader types it: every line of its
// blocks, in order, into one shell (guideShell), so that what one line
// exports the next ones see, a line ending in & runs in the background
// until a later line stops it (kill %1), and a guide that leaves a
// process running fails its test. Each test replays its guide on a fresh
// database (guideDatabase), whose schema lab is exactly the guide's, so the
// lines run as written; only the guide's own `export CHUNKS_DSN=...` line
// is replaced, by the one chunks demo --keep prints (readerExport).
//
// A line of a session block says what it prints in its comment
// (checkGuideLine): the parts between "…", in order, on stdout; "exit N, on
// stderr: …" for a failure; a comment in parentheses is a remark, and only
// the exit status 0 is checked; "a moment later: …" runs the line again
// until it prints the parts (at most a minute), as a reader would who looks
// again. The lines of a data block have no comments and must exit 0.

// guideShell is one bash that a test types a guide's lines into.
type guideShell struct {
	t       *testing.T
	cmd     *exec.Cmd
	stdin   *os.File
	status  chan string // a line from bash's fd 3 after each command
	dir     string      // where each command's stdout and stderr go
	n       int
	started []background
}

// background is a command the guide started with &.
type background struct {
	pid     int
	command string
	stderr  string // its file
}

// shellResult is what one command did.
type shellResult struct {
	stdout, stderr string
	code           int
}

// newGuideShell starts bash in dir with env (the reader's environment:
// no $CHUNKS_DSN or $CHUNKS_SCHEMA unless given), in a process group of its
// own that the test's end kills, with whatever the guide left running.
func newGuideShell(t *testing.T, env []string, dir string) *guideShell {
	t.Helper()
	_, err := exec.LookPath("bash")
	pgtest.RequireTool(t, err, "bash (a guide's session is replayed in one shell)", "bash")
	statusR, statusW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "--norc", "--noprofile")
	cmd.Env, cmd.Dir = env, dir
	cmd.Stdin = inR
	cmd.ExtraFiles = []*os.File{statusW} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var shellErr strings.Builder
	cmd.Stdout, cmd.Stderr = &shellErr, &shellErr // bash's own words (a syntax error); commands write to files
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*os.File{statusW, inR} {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s := &guideShell{t: t, cmd: cmd, stdin: inW, status: make(chan string, 1), dir: t.TempDir()}
	go func() {
		sc := bufio.NewScanner(statusR)
		for sc.Scan() {
			s.status <- sc.Text()
		}
		close(s.status)
		_ = statusR.Close()
	}()
	t.Cleanup(func() {
		_ = inW.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // bash and anything the guide left running
		_ = cmd.Wait()
		if strings.TrimSpace(shellErr.String()) != "" {
			t.Logf("bash said: %s", shellErr.String())
		}
	})
	return s
}

// send types text into the shell and waits (at most within) for the line
// it writes to fd 3 when it has run.
func (s *guideShell) send(text string, within time.Duration) (string, bool) {
	s.t.Helper()
	if _, err := s.stdin.WriteString(text); err != nil {
		s.t.Fatalf("type into the shell: %v", err)
	}
	select {
	case line, ok := <-s.status:
		if !ok {
			s.t.Fatalf("the shell ended while running %q", text)
		}
		return line, true
	case <-time.After(within):
		return "", false
	}
}

// run runs one command line of a guide (a command ending in \ goes on on
// the next line) and returns what it printed and its exit status. A
// command ending in & is started in the background, as the reader's shell
// does, with its output in files: its result is exit 0 at once.
func (s *guideShell) run(command string) shellResult {
	s.t.Helper()
	s.n++
	out, errOut := filepath.Join(s.dir, strconv.Itoa(s.n)+".out"), filepath.Join(s.dir, strconv.Itoa(s.n)+".err")
	redirect := fmt.Sprintf(" >%s 2>%s </dev/null", localpg.ShellWord(out), localpg.ShellWord(errOut))
	if bg, ok := strings.CutSuffix(strings.TrimSpace(codeOf(command)), "&"); ok && !strings.HasSuffix(bg, "&") {
		line, _ := s.send(bg+redirect+" &\necho \"$!\" >&3\n", time.Minute)
		pid, err := strconv.Atoi(line)
		if err != nil {
			s.t.Fatalf("%s: no pid: %q", command, line)
		}
		s.started = append(s.started, background{pid: pid, command: strings.TrimSpace(codeOf(command)), stderr: errOut})
		return shellResult{}
	}
	line, ok := s.send("{ "+command+"\n}"+redirect+"; echo \"$?\" >&3\n", 2*time.Minute)
	if !ok {
		s.t.Fatalf("%s: still running after 2 minutes", command)
	}
	code, err := strconv.Atoi(line)
	if err != nil {
		s.t.Fatalf("%s: exit status %q", command, line)
	}
	return shellResult{stdout: readFile(s.t, out), stderr: readFile(s.t, errOut), code: code}
}

// data runs every command of a data block, each of which must exit 0.
func (s *guideShell) data(block string) {
	s.t.Helper()
	for _, command := range guideCommands(block) {
		if r := s.run(command); r.code != 0 {
			s.t.Fatalf("%s: exit %d\n%s%s", command, r.code, r.stdout, r.stderr)
		}
	}
}

// walk runs every line of a session block, each checked against its
// comment (after rewrite), and returns how many ran.
func (s *guideShell) walk(block string, rewrite func(string) string) int {
	s.t.Helper()
	ran := 0
	for _, line := range guideCommands(block) {
		code := codeOf(line)
		if code == line {
			s.t.Fatalf("guide line without its comment: %q", line)
		}
		comment := rewrite(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line[len(code):]), "#")))
		want, later := strings.CutPrefix(comment, "a moment later: ")
		deadline := time.Now().Add(time.Minute)
		for {
			r := s.run(line)
			problem := checkGuideLine(want, r)
			if problem == "" || !later || time.Now().After(deadline) {
				if problem != "" {
					s.t.Errorf("%s: %s; it printed\n%s%s", strings.TrimSpace(code), problem, r.stdout, r.stderr)
				}
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		ran++
	}
	return ran
}

// close checks that the guide stopped every command it started in the
// background, each with exit status 0, and ends the shell.
func (s *guideShell) close() {
	s.t.Helper()
	for _, b := range s.started {
		line, ok := s.send(fmt.Sprintf("wait %d; echo \"$?\" >&3\n", b.pid), 15*time.Second)
		if !ok {
			s.t.Errorf("the guide starts %q and never stops it (a later guide's commands would race it)", b.command)
			_ = syscall.Kill(b.pid, syscall.SIGKILL)
			line, _ = <-s.status
		}
		if ok && line != "0" {
			s.t.Errorf("%q exited %s once stopped:\n%s", b.command, line, readFile(s.t, b.stderr))
		}
	}
	if _, ok := s.send("echo end >&3\n", time.Minute); !ok {
		s.t.Fatal("the shell does not answer")
	}
	if err := s.stdin.Close(); err != nil {
		s.t.Fatal(err)
	}
	if err := s.cmd.Wait(); err != nil {
		s.t.Errorf("the guide's shell: %v", err)
	}
}

// guideCommands are a block's command lines: a line that ends in \ goes
// on on the next one; blank lines are skipped.
func guideCommands(block string) []string {
	var commands []string
	lines := strings.Split(strings.TrimSpace(block), "\n")
	for i := 0; i < len(lines); i++ {
		command := lines[i]
		for strings.HasSuffix(strings.TrimRight(codeOf(command), " "), `\`) && i+1 < len(lines) {
			i++
			command += "\n" + lines[i]
		}
		if strings.TrimSpace(command) != "" {
			commands = append(commands, command)
		}
	}
	return commands
}

// shellComment is where a line's comment starts: a # after white space.
var shellComment = regexp.MustCompile(`\s#(\s|$)`)

// codeOf is a command line without its comment.
func codeOf(line string) string {
	if loc := shellComment.FindStringIndex(line); loc != nil {
		return line[:loc[0]]
	}
	return line
}

// checkGuideLine is what is wrong with r for a line whose comment is
// comment, or "": the parts between "…" in order on stdout, or "exit N, on
// stderr: …" for a failure; a comment in parentheses checks exit 0 only.
func checkGuideLine(comment string, r shellResult) string {
	wantCode := 0
	if rest, failure := strings.CutPrefix(comment, "exit "); failure {
		code, says, _ := strings.Cut(rest, ", on stderr: ")
		n, err := strconv.Atoi(code)
		if err != nil {
			return fmt.Sprintf("guide comment %q: %v", comment, err)
		}
		wantCode, comment = n, says
	}
	out := r.stdout
	if wantCode != 0 {
		out = r.stderr
	}
	var parts []string
	if !strings.HasPrefix(comment, "(") {
		for _, p := range strings.Split(comment, "…") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
	}
	if r.code != wantCode || !containsInOrder(out, parts) {
		return fmt.Sprintf("exit %d, want %d, and in order: %q", r.code, wantCode, parts)
	}
	return ""
}

// runGuideLines replays one session block in a shell of its own, in dir
// with env (see walk), and checks that the block stops whatever it starts.
// It returns how many lines ran.
func runGuideLines(t *testing.T, block string, env []string, dir string, rewrite func(string) string) int {
	t.Helper()
	s := newGuideShell(t, env, dir)
	ran := s.walk(block, rewrite)
	s.close()
	return ran
}

// containsInOrder is whether s holds every part, one after the other.
func containsInOrder(s string, parts []string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

// guideDatabase is a new, empty database of the test server, dropped when
// the test ends, and a superuser's DSN of it: a guide replayed there finds
// no schema lab, as on the throwaway server of chunks demo --keep.
func guideDatabase(t *testing.T) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := "guide_" + hex.EncodeToString(b[:])
	admin := pgtest.Connect(t, pgtest.DSN())
	if _, err := admin.Exec(ctx, "create database "+name); err != nil {
		cannotRun(t, "a guide's test needs a database of its own: %v", err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "drop database "+name+" with (force)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return pgtest.DSN() + " dbname=" + name
}

// readerExport is the line chunks demo --keep prints for the reader to
// paste, for dsn, in place of a guide's own `export CHUNKS_DSN=...` line.
func readerExport(dsn string) string {
	return "export CHUNKS_DSN=" + localpg.ShellWord(dsn)
}

// pasteDemoExport is block with its first line, which must be the guide's
// `export CHUNKS_DSN=...` and nothing more, replaced by the demo's line for
// dsn: what a reader of the guide does.
func pasteDemoExport(t *testing.T, block, dsn string) string {
	t.Helper()
	first, rest, _ := strings.Cut(block, "\n")
	if !regexp.MustCompile(`^export CHUNKS_DSN=\S+$`).MatchString(strings.TrimSpace(codeOf(first))) {
		t.Fatalf("the block does not start with a line that exports $CHUNKS_DSN and nothing else, to be replaced by the demo's: %q", first)
	}
	return readerExport(dsn) + "\n" + rest
}

// readFile is the text of path.
func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
