package localpg

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrMissingBinary is wrapped by the error of a function that needs a
// PostgreSQL program that is not in the server's BinDir. The
// @embedded-postgres builds that CI uses for the other majors hold only
// initdb, pg_ctl and postgres, so for example [Server.StartStandby] fails
// there; a test can skip on errors.Is(err, ErrMissingBinary).
var ErrMissingBinary = errors.New("PostgreSQL program missing")

// StandbyOptions says how to start a streaming standby. The zero value is an
// asynchronous standby named standby<N>, replaying at once, as durable as
// its upstream.
type StandbyOptions struct {
	// Name is the standby's application_name on the upstream (the
	// application_name of pg_stat_replication, and what
	// synchronous_standby_names names). Letters, digits, _ and -, at most 63.
	// Empty: standby1 for the upstream's first standby, standby2 for its
	// second, and so on.
	Name string
	// ApplyDelay is recovery_min_apply_delay: the standby receives the WAL at
	// once but applies a commit only this long after the upstream committed
	// it. [Server.SetApplyDelay] changes it later. Whole milliseconds.
	ApplyDelay time.Duration
	// Synchronous makes the upstream wait for this standby at each commit:
	// synchronous_standby_names is set to its name alone (ALTER SYSTEM and a
	// reload on the upstream, replacing any earlier one), and if the
	// upstream's synchronous_commit is off or local (as on a non-durable
	// server) it is set to on, because otherwise commits would not wait.
	// While the standby is down, commits on the upstream hang.
	Synchronous bool
	// Durable, if not nil, overrides the durability ([Options.Durable]) that
	// the standby otherwise inherits from its upstream's configuration.
	Durable *bool
	// Settings are extra "name=value" settings for the standby only.
	Settings []string
}

var standbyName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,63}$`)

// StartStandby makes a streaming standby of s: a base backup of s by
// pg_basebackup (-X stream) into a new folder, started as a hot standby on a
// new free loopback port, with primary_conninfo pointing at s. It returns
// when the standby accepts connections and s's pg_stat_replication shows it
// streaming (and, with [StandbyOptions.Synchronous], sync). The standby has
// the same binaries and Detach choice as s, its own server.log, and its Stop
// removes only its own folder. s must be running; it may itself be a
// standby (cascading replication), but then not Synchronous.
//
// The upstream gets wal_keep_size 256MB if it had 0, so that a standby
// that was down for a moment can catch up without a replication slot.
// The standby gets wal_retrieve_retry_interval 200ms, so that it reconnects
// quickly after its upstream restarts.
func (s *Server) StartStandby(ctx context.Context, opts StandbyOptions) (*Server, error) {
	basebackup := filepath.Join(s.BinDir, "pg_basebackup")
	if _, err := os.Stat(basebackup); err != nil {
		return nil, fmt.Errorf("%w: StartStandby needs pg_basebackup, which is not in %s "+
			"(the @embedded-postgres builds ship only initdb, pg_ctl and postgres): %v",
			ErrMissingBinary, s.BinDir, err)
	}
	if opts.ApplyDelay < 0 {
		return nil, fmt.Errorf("standby: negative ApplyDelay %v", opts.ApplyDelay)
	}
	settings, err := parseSettings(opts.Settings)
	if err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		s.opMu.Lock()
		s.standbys++
		name = "standby" + strconv.Itoa(s.standbys)
		s.opMu.Unlock()
	}
	if !standbyName.MatchString(name) {
		return nil, fmt.Errorf("standby name %q: want 1 to 63 letters, digits, _ or -", name)
	}
	if err := s.prepareUpstream(ctx, name, opts.Synchronous); err != nil {
		return nil, err
	}

	dir, err := os.MkdirTemp("", "chunks-pg-")
	if err != nil {
		return nil, err
	}
	sb := &Server{Dir: dir, BinDir: s.BinDir, cred: s.cred, detach: s.detach, name: name}
	fail := func(err error) (*Server, error) {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	if err := sb.chown(dir); err != nil {
		return fail(err)
	}
	args := []string{"-D", sb.DataDir(), "-h", "127.0.0.1", "-p", strconv.Itoa(s.Port), "-U", "postgres",
		"-X", "stream", "-c", "fast", "--no-manifest"}
	durable, err := s.showBool(ctx, "fsync")
	if err != nil {
		return fail(err)
	}
	if opts.Durable != nil {
		durable = *opts.Durable
	}
	if !durable {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, basebackup, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("pg_basebackup from %v: %w\n%s", s, err, out))
	}

	conf := []setting{{"hot_standby", "on"}, {"wal_retrieve_retry_interval", "200ms"}}
	if opts.Durable != nil {
		conf = append(conf, durability(*opts.Durable)...)
	}
	if err := appendConf(filepath.Join(sb.DataDir(), "postgresql.conf"), append(conf, settings...)); err != nil {
		return fail(err)
	}
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", s.Port, name)
	if err := rewriteAutoConf(filepath.Join(sb.DataDir(), "postgresql.auto.conf"), []setting{
		{"primary_conninfo", conninfo},
		{"recovery_min_apply_delay", strconv.FormatInt(opts.ApplyDelay.Milliseconds(), 10) + "ms"},
	}); err != nil {
		return fail(err)
	}
	signal := filepath.Join(sb.DataDir(), "standby.signal")
	if err := os.WriteFile(signal, nil, 0o600); err != nil {
		return fail(err)
	}
	if err := sb.chown(signal); err != nil {
		return fail(err)
	}

	if sb.Port, err = freePort(); err != nil {
		return fail(err)
	}
	if err := sb.launch(ctx); err != nil {
		if errors.Is(err, errNotStarted) {
			return fail(err)
		}
		return nil, errors.Join(err, sb.Stop())
	}
	if err := s.waitStreaming(ctx, sb, opts.Synchronous); err != nil {
		return nil, errors.Join(err, sb.Stop())
	}
	return sb, nil
}

// prepareUpstream sets what s needs before a standby of it is copied: a WAL
// reserve, and for a synchronous standby a primary that can wait.
func (s *Server) prepareUpstream(ctx context.Context, name string, synchronous bool) error {
	return s.withConn(ctx, func(conn *pgx.Conn) error {
		var inRecovery, taken bool
		var keep, syncCommit string
		if err := conn.QueryRow(ctx, `select pg_is_in_recovery(), current_setting('wal_keep_size'),
				current_setting('synchronous_commit'),
				exists (select from pg_stat_replication where application_name = $1)`, name).
			Scan(&inRecovery, &keep, &syncCommit, &taken); err != nil {
			return fmt.Errorf("read the settings of %v: %w", s, err)
		}
		if taken {
			return fmt.Errorf("a standby named %s already streams from %v", name, s)
		}
		if synchronous && inRecovery {
			return fmt.Errorf("a synchronous standby needs a primary, and %v is a standby", s)
		}
		var alter []string
		if keep == "0" && !inRecovery {
			alter = append(alter, "alter system set wal_keep_size = '256MB'")
		}
		if synchronous && (syncCommit == "off" || syncCommit == "local") {
			alter = append(alter, "alter system set synchronous_commit = 'on'")
		}
		return alterSystem(ctx, conn, alter...)
	})
}

// alterSystem runs ALTER SYSTEM statements and reloads the configuration.
func alterSystem(ctx context.Context, conn *pgx.Conn, statements ...string) error {
	if len(statements) == 0 {
		return nil
	}
	for _, st := range statements {
		if _, err := conn.Exec(ctx, st); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	if _, err := conn.Exec(ctx, "select pg_reload_conf()"); err != nil {
		return fmt.Errorf("reload the configuration: %w", err)
	}
	return nil
}

// waitStreaming waits until s's pg_stat_replication shows standby sb
// streaming. For a synchronous standby it first names sb in
// synchronous_standby_names and then also waits for sync_state sync.
func (s *Server) waitStreaming(ctx context.Context, sb *Server, synchronous bool) error {
	return s.withConn(ctx, func(conn *pgx.Conn) error {
		if synchronous {
			// Double quotes: a standby name is an identifier there.
			if err := alterSystem(ctx, conn, `alter system set synchronous_standby_names = '"`+sb.name+`"'`); err != nil {
				return err
			}
		}
		var state, syncState string
		err := poll(ctx, 30*time.Second, func() (bool, error) {
			err := conn.QueryRow(ctx, `select state, sync_state from pg_stat_replication
				where application_name = $1`, sb.name).Scan(&state, &syncState)
			if errors.Is(err, pgx.ErrNoRows) {
				return false, nil
			}
			return err == nil && state == "streaming" && (!synchronous || syncState == "sync"), err
		})
		if err != nil {
			return fmt.Errorf("standby %s on port %d is not streaming from %v (state %q, sync_state %q): %w\n%s",
				sb.name, sb.Port, s, state, syncState, err, sb.logTail())
		}
		return nil
	})
}

// Promote ends recovery on a standby (pg_promote, waiting for it), so that
// it becomes a primary of its own, and returns when pg_is_in_recovery() is
// false. Its old upstream is not told; it runs on. Promoting a server that
// is not a standby is an error.
func (s *Server) Promote(ctx context.Context) error {
	return s.withConn(ctx, func(conn *pgx.Conn) error {
		var promoted bool
		if err := conn.QueryRow(ctx, "select pg_promote(wait => true, wait_seconds => 60)").Scan(&promoted); err != nil {
			return fmt.Errorf("promote %v: %w", s, err)
		}
		if !promoted {
			return fmt.Errorf("promote %v: not promoted in 60s\n%s", s, s.logTail())
		}
		return poll(ctx, 30*time.Second, func() (bool, error) {
			var inRecovery bool
			err := conn.QueryRow(ctx, "select pg_is_in_recovery()").Scan(&inRecovery)
			return err == nil && !inRecovery, err
		})
	})
}

// SetApplyDelay sets a standby's recovery_min_apply_delay (ALTER SYSTEM on
// the standby and a reload) and returns when a session on the standby sees
// the new value; the startup process, which applies the WAL, is sent the
// reload at the same moment. A shorter delay also applies to the commits
// already waiting. Whole milliseconds.
func (s *Server) SetApplyDelay(ctx context.Context, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("negative apply delay %v", d)
	}
	ms := d.Milliseconds()
	return s.withConn(ctx, func(conn *pgx.Conn) error {
		var inRecovery bool
		if err := conn.QueryRow(ctx, "select pg_is_in_recovery()").Scan(&inRecovery); err != nil {
			return err
		}
		if !inRecovery {
			return fmt.Errorf("set the apply delay of %v: it is not a standby", s)
		}
		if err := alterSystem(ctx, conn, fmt.Sprintf("alter system set recovery_min_apply_delay = '%dms'", ms)); err != nil {
			return err
		}
		// A session rereads the configuration before its next statement once
		// the postmaster has passed the reload on; so has the startup process.
		return poll(ctx, 10*time.Second, func() (bool, error) {
			var got int64
			err := conn.QueryRow(ctx, "select setting::bigint from pg_settings where name = 'recovery_min_apply_delay'").Scan(&got)
			return err == nil && got == ms, err
		})
	})
}

// showBool reads a boolean setting of s.
func (s *Server) showBool(ctx context.Context, name string) (bool, error) {
	var on bool
	err := s.withConn(ctx, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, "select current_setting($1)::bool", name).Scan(&on)
	})
	return on, err
}

// withConn runs f on a new connection to s and closes it.
func (s *Server) withConn(ctx context.Context, f func(*pgx.Conn) error) (err error) {
	conn, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		return fmt.Errorf("connect to %v: %w", s, err)
	}
	defer func() { err = errors.Join(err, conn.Close(context.WithoutCancel(ctx))) }()
	return f(conn)
}

// poll calls done every 50ms until it says true, returns an error, or the
// timeout or ctx ends.
func poll(ctx context.Context, timeout time.Duration, done func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done in %v", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// rewriteAutoConf replaces settings in a postgresql.auto.conf copied from
// the upstream: their old lines go, and so does synchronous_standby_names,
// which would make a promoted standby wait for standbys it does not have.
// The other lines (the upstream's ALTER SYSTEM settings) stay.
func rewriteAutoConf(path string, settings []setting) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	drop := map[string]bool{"synchronous_standby_names": true, "primary_slot_name": true}
	for _, st := range settings {
		drop[st.name] = true
	}
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(old)))
	for sc.Scan() {
		line := sc.Text()
		name, _, _ := strings.Cut(strings.TrimSpace(line), "=")
		if drop[strings.TrimSpace(name)] {
			continue
		}
		b.WriteString(line + "\n")
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for _, st := range settings {
		b.WriteString(confLine(st))
	}
	// The file exists, so writing keeps its owner and mode.
	return os.WriteFile(path, []byte(b.String()), 0o600)
}
