package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// terminal is a pseudo-terminal: a process writes to tty as to a terminal,
// and everything it wrote is read back from the other side.
type terminal struct {
	tty    *os.File
	master *os.File
	out    bytes.Buffer
	done   chan struct{}
}

// newTerminal opens a pseudo-terminal that the test closes at its end.
func newTerminal(t *testing.T) *terminal {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		cannotRun(t, "no pseudo-terminals here: %v", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pseudo-terminal number: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{tty: tty, master: master, done: make(chan struct{})}
	go func() {
		defer close(term.done)
		_, _ = io.Copy(&term.out, master) // ends with EIO once no process holds the tty
	}()
	t.Cleanup(func() {
		if err := master.Close(); err != nil {
			t.Error(err)
		}
	})
	return term
}

// output is everything written to the terminal, once the processes that
// held it have ended; it closes the test's own end of the tty first.
func (term *terminal) output(t *testing.T) string {
	t.Helper()
	if err := term.tty.Close(); err != nil {
		t.Fatal(err)
	}
	<-term.done
	return term.out.String()
}
