package localpg

import (
	"fmt"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// OSUser is the name of the operating system user the server runs as:
// this process's user, or the one it chose when run as root (postgres, else
// nobody).
func (s *Server) OSUser() (string, error) {
	if s.cred == nil {
		u, err := user.Current()
		if err != nil {
			return "", err
		}
		return u.Username, nil
	}
	u, err := user.LookupId(strconv.FormatUint(uint64(s.cred.Uid), 10))
	if err != nil {
		return "", err
	}
	return u.Username, nil
}

// PgCtlCommand is a shell command that runs pg_ctl with args on the
// server's data directory (-D), as the user the server runs as: through
// runuser when this process is root, since pg_ctl refuses to run as root.
// pg_ctl start and restart take the server's own command line (port,
// socket folder) from the data directory's postmaster.opts.
func (s *Server) PgCtlCommand(args ...string) (string, error) {
	words := append([]string{filepath.Join(s.BinDir, "pg_ctl")}, args...)
	words = append(words, "-D", s.DataDir())
	if s.cred != nil {
		name, err := s.OSUser()
		if err != nil {
			return "", err
		}
		words = append([]string{"runuser", "-u", name, "--"}, words...)
	}
	for i, w := range words {
		words[i] = ShellWord(w)
	}
	return strings.Join(words, " "), nil
}

// CrashCommand is a shell command that restarts the server as a crash
// would ([Server.Crash], then [Server.Restart]): pg_ctl restart -m
// immediate, which ends every server process at once without a
// checkpoint and starts the server again with crash recovery, logging to
// its server.log. The new postmaster's PID is then the first line of
// postmaster.pid in [Server.DataDir].
func (s *Server) CrashCommand() (string, error) {
	return s.PgCtlCommand("restart", "-m", "immediate", "-l", filepath.Join(s.Dir, "server.log"))
}

// StopCommand is a shell command that stops a detached server (a fast
// shutdown, waiting for it, whichever postmaster runs now) and removes its
// folder.
func (s *Server) StopCommand() (string, error) {
	stop, err := s.PgCtlCommand("stop", "-m", "fast")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s && rm -rf %s", stop, ShellWord(s.Dir)), nil
}

// ShellWord quotes w for a POSIX shell when it needs it.
func ShellWord(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+,=-") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
