// Package localpg starts a throwaway PostgreSQL server from the machine's
// binaries: a fresh cluster in a temporary folder, listening on a free
// loopback port, removed again by Stop. chunks demo, chunks bench and the
// tests use it when no DSN is given.
//
// For fault-injection tests a server can also be crashed ([Server.Crash]),
// shut down cleanly ([Server.Shutdown]) and started again on the same folder
// and port ([Server.Restart]), and it can get streaming standbys
// ([Server.StartStandby]) that can be delayed ([Server.SetApplyDelay]) and
// promoted ([Server.Promote]).
//
// The server's settings that are the same for every server made from one
// cluster (durability, max_connections, [Options.Settings]) are appended to
// the cluster's postgresql.conf, so that a standby copied from it inherits
// them and ALTER SYSTEM can still change them. Only what is particular to
// one server (port, socket folder, listen address) is on the postgres
// command line.
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
	"sync"
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
	// Durable keeps Postgres' default durability: fsync, synchronous_commit
	// and full_page_writes on, so a commit's WAL is flushed to disk before
	// the commit returns, and the commit survives [Server.Crash]. (initdb
	// runs with --no-sync either way, so the new cluster's first files may
	// still be only in the OS cache: a crash of the machine is not covered.)
	// Otherwise the three are off, for speed: a commit returns before its WAL
	// is even written, so a [Server.Crash] loses the commits of up to the
	// last 600ms (three times wal_writer_delay), and a crash of the machine
	// may corrupt the cluster.
	// Use Durable for tests that crash the server and check committed data,
	// and for a server a person keeps (chunks demo --keep).
	Durable bool
	// Detach lets the server outlive this process (chunks demo --keep).
	Detach bool
	// Settings are extra "name=value" server settings. They go into the
	// cluster's postgresql.conf after the durability settings, so they can
	// override them, and ALTER SYSTEM can override them in turn.
	Settings []string
}

// Server is a throwaway cluster: a primary made by [Start] or a standby made
// by [Server.StartStandby]. Its methods may be called from several
// goroutines; Crash, Shutdown, Restart and Stop run one at a time.
type Server struct {
	Dir    string // the temporary folder: data/, the socket and server.log
	Port   int
	BinDir string

	cred   *syscall.Credential // whom the server runs as; nil: this process's user
	detach bool
	name   string // application_name on the upstream, for a standby

	// opMu serialises the lifecycle operations (Crash, Shutdown, Restart,
	// Stop), which replace proc.
	opMu    sync.Mutex
	removed bool // Stop removed Dir; guarded by opMu
	// standbys counts the standbys started from this server, for their
	// default names; guarded by opMu.
	standbys int

	mu   sync.Mutex // guards proc
	proc *process
}

// process is one run of the postmaster. err is written before exited is
// closed and read only after it is closed.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
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
	return startCluster(ctx, opts, "")
}

// startCluster is [Start]; with a template, the new cluster is a copy of that
// data folder instead of a fresh initdb (see [StartMany]).
func startCluster(ctx context.Context, opts Options, template string) (*Server, error) {
	bin := opts.BinDir
	if bin == "" {
		var err error
		if bin, err = FindBinDir(); err != nil {
			return nil, err
		}
	}
	settings, err := parseSettings(opts.Settings)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "chunks-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, BinDir: bin, detach: opts.Detach}
	fail := func(err error) (*Server, error) {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	if s.cred, err = serverCredential(); err != nil {
		return fail(err)
	}
	if err := s.chown(dir); err != nil {
		return fail(err)
	}

	if template != "" {
		// cp -a keeps the owner and the modes postgres insists on.
		if out, err := exec.CommandContext(ctx, "cp", "-a", template, s.DataDir()).CombinedOutput(); err != nil {
			return fail(fmt.Errorf("copy the template cluster: %w\n%s", err, out))
		}
	} else if err := initdb(ctx, bin, s.cred, s.DataDir()); err != nil {
		return fail(err)
	}
	conf := append([]setting{{"max_connections", "200"}}, durability(opts.Durable)...)
	if err := appendConf(filepath.Join(s.DataDir(), "postgresql.conf"), append(conf, settings...)); err != nil {
		return fail(err)
	}

	if s.Port, err = freePort(); err != nil {
		return fail(err)
	}
	if err := s.launch(ctx); err != nil {
		if errors.Is(err, errNotStarted) {
			return fail(err)
		}
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

// initdb makes a new cluster in dataDir, as the user of cred.
func initdb(ctx context.Context, bin string, cred *syscall.Credential, dataDir string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", dataDir,
		"-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return nil
}

// durability is the settings of [Options.Durable]: Postgres' defaults when
// durable, spelled out so that a standby of a non-durable server can be made
// durable by appending them.
func durability(durable bool) []setting {
	v := "off"
	if durable {
		v = "on"
	}
	return []setting{{"fsync", v}, {"synchronous_commit", v}, {"full_page_writes", v}}
}

// DataDir is the cluster's data directory (PGDATA): data/ in Dir.
func (s *Server) DataDir() string { return filepath.Join(s.Dir, "data") }

// chown gives path to the user the server runs as.
func (s *Server) chown(path string) error {
	if s.cred == nil {
		return nil
	}
	return os.Chown(path, int(s.cred.Uid), int(s.cred.Gid))
}

// errNotStarted marks a launch that failed before postgres ran.
var errNotStarted = errors.New("postgres did not start")

// launch starts the postmaster on the server's folder and port and waits
// until it accepts connections.
func (s *Server) launch(ctx context.Context) error {
	logFile, err := os.OpenFile(s.LogFile(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o666)
	if err != nil {
		return errors.Join(errNotStarted, err)
	}
	if err := s.chown(logFile.Name()); err != nil {
		return errors.Join(errNotStarted, err, logFile.Close())
	}
	cmd := exec.Command(filepath.Join(s.BinDir, "postgres"), "-D", s.DataDir(), "-p", strconv.Itoa(s.Port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+s.Dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	if !s.detach {
		// If this process dies without Stop, the server shuts down at once.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	}
	err = cmd.Start()
	closeErr := logFile.Close() // the child has its own copy of the descriptor
	if err != nil {
		return errors.Join(errNotStarted, fmt.Errorf("start postgres: %w", err), closeErr)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	if closeErr != nil {
		return closeErr
	}
	return s.waitReady(ctx, p)
}

// current is the latest run of the postmaster (nil before the first).
func (s *Server) current() *process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// DSN is a keyword/value connection string for database postgres as the
// superuser postgres.
func (s *Server) DSN() string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable", s.Port)
}

// PID is the postmaster's process id (after [Server.Restart], the new one's).
func (s *Server) PID() int { return s.current().cmd.Process.Pid }

// Name is a standby's application_name on its upstream, as in the upstream's
// pg_stat_replication; "" for a server made by [Start].
func (s *Server) Name() string { return s.name }

func (s *Server) waitReady(ctx context.Context, p *process) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		conn, err := pgx.Connect(cctx, s.DSN())
		cancel()
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-p.exited:
			return fmt.Errorf("postgres exited: %v\n%s", p.err, s.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres did not accept connections in 30s: %w\n%s", err, s.logTail())
		}
	}
}

// LogFile is the server's log: what the postmaster and every server process
// write to stderr (logging_collector is off), appended to by each
// [Server.Restart].
func (s *Server) LogFile() string { return filepath.Join(s.Dir, "server.log") }

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.LogFile())
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Stop shuts the server down (fast shutdown: open sessions are ended) and
// removes its folder. It works after [Server.Crash] and [Server.Restart]
// too, and a second Stop does nothing. A standby's Stop removes only the
// standby's own folder; its upstream runs on (if the standby was
// synchronous, the upstream's commits then hang until a standby of that name
// is back).
func (s *Server) Stop() error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	err := s.shutdown()
	s.removed = true
	return errors.Join(err, os.RemoveAll(s.Dir))
}

// Shutdown stops the server like Stop (fast shutdown) but keeps its folder,
// so that [Server.Restart] can start it again. It does nothing when the
// server is not running.
func (s *Server) Shutdown() error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	return s.shutdown()
}

func (s *Server) shutdown() error {
	p := s.current()
	if p == nil || !p.running() {
		return nil
	}
	var errs []error
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		errs = append(errs, err)
	}
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		errs = append(errs, errors.New("postgres did not stop in 20s; killed"), killGroup(p))
		<-p.exited
	}
	return errors.Join(append(errs, waitGroupGone(p.cmd.Process.Pid))...)
}

// Crash stops the server the way a crash would: an immediate shutdown
// (pg_ctl stop -m immediate, SIGQUIT to the postmaster), which ends every
// server process at once without a checkpoint. It returns when the
// postmaster and all its children are gone; the folder stays, and
// [Server.Restart] starts the server again with crash recovery. Crashing a
// server that is not running is an error.
func (s *Server) Crash() error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	p := s.current()
	if p == nil || !p.running() {
		return fmt.Errorf("crash %v: it is not running", s)
	}
	var errs []error
	if err := p.cmd.Process.Signal(syscall.SIGQUIT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		errs = append(errs, err)
	}
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		errs = append(errs, errors.New("postgres did not exit in 20s after SIGQUIT; killed"), killGroup(p))
		<-p.exited
	}
	return errors.Join(append(errs, waitGroupGone(p.cmd.Process.Pid))...)
}

// Restart starts the server again on the same folder and port and waits
// until it accepts connections. After [Server.Crash] the server runs crash
// recovery first. A running server is shut down first (fast shutdown), as
// with pg_ctl restart. The new postmaster, like the first, dies with this
// process unless [Options.Detach]. A standby comes back as a standby (a
// promoted one as a primary); Restart does not wait for it to stream again,
// as its upstream may be down.
func (s *Server) Restart(ctx context.Context) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if s.removed {
		return fmt.Errorf("restart %v: it was stopped and its folder removed", s)
	}
	if err := s.shutdown(); err != nil {
		return err
	}
	return s.launch(ctx)
}

// killGroup kills the postmaster's process group: the postmaster and the
// server processes it started (it was started with Setpgid).
func killGroup(p *process) error {
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// waitGroupGone waits until no process is left in process group pgid. The
// postmaster waits for its children before it exits; this makes sure.
func waitGroupGone(pgid int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Kill(-pgid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("check the server's processes: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server processes of group %d still there 10s after the postmaster exited", pgid)
		}
		time.Sleep(10 * time.Millisecond)
	}
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

// setting is one server setting: name and value.
type setting struct{ name, value string }

// parseSettings splits "name=value" strings.
func parseSettings(list []string) ([]setting, error) {
	out := make([]setting, 0, len(list))
	for _, s := range list {
		name, value, ok := strings.Cut(s, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("server setting %q is not name=value", s)
		}
		out = append(out, setting{name, value})
	}
	return out, nil
}

// confLine is a postgresql.conf line setting name to the quoted value.
func confLine(st setting) string {
	v := strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(st.value)
	return fmt.Sprintf("%s = '%s'\n", st.name, v)
}

// appendConf appends settings to a postgresql.conf; later lines win.
func appendConf(path string, settings []setting) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	var b strings.Builder
	b.WriteString("\n# Added by chunks' internal/localpg:\n")
	for _, st := range settings {
		b.WriteString(confLine(st))
	}
	_, err = f.WriteString(b.String())
	return err
}
