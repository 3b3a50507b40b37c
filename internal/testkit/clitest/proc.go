package clitest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chunks-dev/chunks/driver"
	"github.com/chunks-dev/chunks/internal/testkit/pgtest"
)

// Timeout bounds every chunks process whose [Options] set none: one still
// running then is killed and its test fails, never mistaking that kill for
// a crash drill's SIGKILL.
const Timeout = 60 * time.Second

// Options are the extras of one chunks process; the zero value runs chunks
// with the cleaned environment ([pgtest.CleanEnv]) and an empty stdin.
type Options struct {
	Name    string        // what messages call the process; "chunks ARGS" when empty
	Env     []string      // VAR=value added to the cleaned environment
	Stdin   string        // what the process reads on stdin
	Timeout time.Duration // [Timeout] when zero
	Stderr  io.Writer     // where stderr goes instead of the result and [Proc.Lines] (a terminal, say)
	Under   []string      // a command that runs chunks (its args, then chunks and its args), such as /usr/bin/time
	Binary  string        // the chunks binary to run, such as an older build; [pgtest.Binary] when empty
}

// Result is how one chunks process ended.
type Result struct {
	Args   []string
	Stdout string
	Stderr string
	Code   int            // the exit status, or -1 when a signal killed it
	Signal syscall.Signal // the signal that killed it, or 0
}

// String is the command, how it ended and all it printed, for a failure
// message.
func (r Result) String() string {
	end := fmt.Sprintf("exit status %d", r.Code)
	if r.Signal != 0 {
		end = "killed by " + r.Signal.String()
	}
	return fmt.Sprintf("chunks %s: %s\n--- stdout:\n%s--- stderr:\n%s", driver.Excerpt(strings.Join(r.Args, " "), false), end, r.Stdout, r.Stderr)
}

// Proc is a started chunks process. Its stderr is read as it comes, so a
// test can wait for a log line while it runs; it is killed when the test
// ends if it still runs.
type Proc struct {
	Name     string
	cmd      *exec.Cmd
	timeout  time.Duration
	stdout   Output
	stderr   Output
	ended    chan struct{} // closed once the process has been waited for
	timedOut bool          // the process outlived its timeout and was killed; set before ended closes
	res      Result        // set before ended closes
}

// Start starts chunks (the binary under test, [pgtest.Binary], unless
// o.Binary names another) with args.
func Start(t testing.TB, o Options, args ...string) *Proc {
	t.Helper()
	bin := o.Binary
	if bin == "" {
		bin = pgtest.Binary()
	}
	if bin == "" {
		t.Fatalf("no chunks binary under test: $%s is not set (run the tests under pgtest.MainWithBinary or pgtest.WithBinary)", pgtest.BinaryEnv)
	}
	if o.Timeout == 0 {
		o.Timeout = Timeout
	}
	if o.Name == "" {
		o.Name = "chunks " + driver.Excerpt(strings.Join(args, " "), false)
	}
	p := &Proc{Name: o.Name, timeout: o.Timeout, ended: make(chan struct{})}
	pctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	argv := append(append(o.Under[:len(o.Under):len(o.Under)], bin), args...)
	p.cmd = exec.CommandContext(pctx, argv[0], argv[1:]...)
	p.cmd.Env = append(pgtest.CleanEnv(), o.Env...)
	p.cmd.Stdin = strings.NewReader(o.Stdin)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	// Once the process has ended (or been killed at the timeout), its
	// output is read for at most 5 s more: a child it started and left
	// running (a bench's worker, orphaned by the kill) keeps the pipes open,
	// and Wait would otherwise wait for it for ever (a TestBenchSmoke under
	// a heavy load did, 19 minutes).
	p.cmd.WaitDelay = 5 * time.Second
	if o.Stderr != nil {
		p.cmd.Stderr = o.Stderr
	}
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", p.Name, err)
	}
	go func() {
		defer close(p.ended)
		defer cancel()
		err := p.cmd.Wait() // returns once stdout and stderr are read to their end
		p.timedOut = pctx.Err() != nil
		p.res = Result{Args: args, Stdout: p.stdout.String(), Stderr: p.stderr.String()}
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			p.res.Code, p.res.Stderr = -1, p.res.Stderr+"(wait: "+err.Error()+")\n"
			return
		}
		status := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
		p.res.Code = status.ExitStatus()
		if status.Signaled() {
			p.res.Signal = status.Signal()
		}
	}()
	t.Cleanup(func() {
		select {
		case <-p.ended:
		default:
			_ = p.cmd.Process.Kill() // it may end meanwhile; the wait below says nothing either way
			<-p.ended
		}
	})
	return p
}

// Run runs chunks with args to its end.
func Run(t testing.TB, args ...string) Result {
	t.Helper()
	return Start(t, Options{}, args...).Wait(t)
}

// RunWith is [Run] with options.
func RunWith(t testing.TB, o Options, args ...string) Result {
	t.Helper()
	return Start(t, o, args...).Wait(t)
}

// PID is the process id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Wait waits for the process to end, at most its timeout, and says how it
// ended; the test fails if the timeout killed it.
func (p *Proc) Wait(t testing.TB) Result {
	t.Helper()
	<-p.ended
	if p.timedOut {
		t.Fatalf("%s still running after %s, killed by the test:\n%v", p.Name, p.timeout, p.res)
	}
	return p.res
}

// WaitWithin is [Proc.Wait] bounded by within: the test fails, and the
// process is killed, if it still runs then.
func (p *Proc) WaitWithin(t testing.TB, within time.Duration) Result {
	t.Helper()
	select {
	case <-p.ended:
		return p.Wait(t)
	case <-time.After(within):
		_ = p.cmd.Process.Kill() // it may end meanwhile; the result says how
		<-p.ended
		t.Fatalf("%s still running after %s; killed:\n%v", p.Name, within, p.res)
		return Result{}
	}
}

// Signal sends sig to the process.
func (p *Proc) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("%s: signal %v: %v", p.Name, sig, err)
	}
}

// Lines is the stderr lines written so far: the complete ones while the
// process runs, every one once it has ended.
func (p *Proc) Lines() []string {
	select {
	case <-p.ended:
		return p.stderr.lines(true)
	default:
		return p.stderr.lines(false)
	}
}

// LineCount is len(p.Lines()).
func (p *Proc) LineCount() int { return len(p.Lines()) }

// WaitLine waits, at most within, until a stderr line from index from on
// contains every one of parts, and returns its index. The test fails if the
// process ends, or within passes, before it.
func (p *Proc) WaitLine(t testing.TB, from int, within time.Duration, parts ...string) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var ended bool
		select {
		case <-p.ended:
			ended = true
		default:
		}
		lines := p.Lines() // read after the end is seen: they are all there
		for i := from; i < len(lines); i++ {
			if ContainsAll(lines[i], parts...) {
				return i
			}
		}
		if ended {
			t.Fatalf("%s ended before logging %q:\n%v", p.Name, parts, p.res)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no line with %q within %s; stderr so far:\n%s", p.Name, parts, within, strings.Join(lines, "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ContainsAll says whether s contains every one of parts.
func ContainsAll(s string, parts ...string) bool {
	for _, part := range parts {
		if !strings.Contains(s, part) {
			return false
		}
	}
	return true
}
