// Package localpg starts a throwaway PostgreSQL server from the machine's
// binaries: a fresh cluster in a temporary folder, listening on a free
// loopback port, removed again by Stop. chunks demo, chunks bench and the
// tests use it when no DSN is given.
package localpg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Options says how to start the server. The zero value is a fast,
// non-durable server that dies with this process.
type Options struct {
	// BinDir holds initdb and postgres. Empty: $CHUNKS_PG_BIN, else the folder
	// of initdb on PATH, else the newest /usr/lib/postgresql/*/bin.
	BinDir string
	// Durable keeps Postgres' default durability (fsync, synchronous_commit,
	// full_page_writes on). Otherwise they are off, for speed.
	Durable bool
	// Detach lets the server outlive this process (chunks demo --keep).
	Detach bool
	// Settings are extra "name=value" server settings.
	Settings []string
}

// Server is a running throwaway cluster.
type Server struct {
	Dir     string // the temporary folder: data/, the socket and server.log
	Port    int
	BinDir  string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// FindBinDir returns the folder of the PostgreSQL server binaries, as
// described at [Options.BinDir].
func FindBinDir() (string, error) {
	if dir := os.Getenv("CHUNKS_PG_BIN"); dir != "" {
		return dir, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return majorOf(dirs[i]) > majorOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries found (initdb): install the postgresql package " +
		"(apt-get install -y postgresql), or set CHUNKS_PG_BIN to their folder")
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Start creates and starts a new cluster. When this process runs as root,
// the server runs as the unprivileged user postgres (or nobody), because
// initdb and postgres refuse root.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin := opts.BinDir
	if bin == "" {
		var err error
		if bin, err = FindBinDir(); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp("", "chunks-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, BinDir: bin, exited: make(chan struct{})}
	fail := func(err error) (*Server, error) {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	cred, err := serverCredential()
	if err != nil {
		return fail(err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return fail(err)
		}
	}

	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"),
		"-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("initdb: %w\n%s", err, out))
	}

	if s.Port, err = freePort(); err != nil {
		return fail(err)
	}
	args := []string{"-D", filepath.Join(dir, "data"), "-p", strconv.Itoa(s.Port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir,
		"-c", "max_connections=200"}
	if !opts.Durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	for _, setting := range opts.Settings {
		args = append(args, "-c", setting)
	}
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return fail(err)
	}
	defer logFile.Close() // the child has its own copy of the descriptor
	if cred != nil {
		if err := logFile.Chown(int(cred.Uid), int(cred.Gid)); err != nil {
			return fail(err)
		}
	}
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), args...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	if !opts.Detach {
		// If this process dies without Stop, the server shuts down at once.
		s.cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	}
	if err := s.cmd.Start(); err != nil {
		return fail(fmt.Errorf("start postgres: %w", err))
	}
	go func() { s.waitErr = s.cmd.Wait(); close(s.exited) }()
	if err := s.waitReady(ctx); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

// DSN is a keyword/value connection string for database postgres as the
// superuser postgres.
func (s *Server) DSN() string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", s.Port)
}

// PID is the postmaster's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

func (s *Server) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgx.Connect(cctx, s.DSN())
		cancel()
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-s.exited:
			return fmt.Errorf("postgres exited: %v\n%s", s.waitErr, s.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not accept connections in 30s: %w\n%s", err, s.logTail())
		}
	}
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "server.log"))
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Stop shuts the server down (fast shutdown: open sessions are ended) and
// removes its folder.
func (s *Server) Stop() error {
	var errs []error
	select {
	case <-s.exited:
	default:
		if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
			errs = append(errs, err)
		}
		select {
		case <-s.exited:
		case <-time.After(20 * time.Second):
			errs = append(errs, errors.New("postgres did not stop in 20s; killed"), s.cmd.Process.Kill())
			<-s.exited
		}
	}
	errs = append(errs, os.RemoveAll(s.Dir))
	return errors.Join(errs...)
}

// StopCommand is a shell command that stops a detached server and removes
// its folder.
func (s *Server) StopCommand() string {
	return fmt.Sprintf("kill -INT %d && sleep 2 && rm -rf %s", s.PID(), s.Dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

// serverCredential is nil unless this process is root; then it is the
// postgres user if there is one, else nobody.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("user %s: bad uid/gid %q/%q", name, u.Uid, u.Gid)
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root, and there is no postgres or nobody user to run the server as")
}

// String describes the server for logs.
func (s *Server) String() string {
	return strings.Join([]string{"postgres", filepath.Base(filepath.Dir(s.BinDir)), "on port", strconv.Itoa(s.Port)}, " ")
}
