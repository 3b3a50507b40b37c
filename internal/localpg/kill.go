package localpg

import "fmt"

// Kill stops the server the hardest way: SIGKILL to the postmaster and to
// every server process (its process group) at once, as the kernel's OOM
// killer or a lost machine would, with no shutdown of any kind (Crash's
// immediate shutdown still lets the postmaster stop its children). It
// returns when all of them are gone. The folder stays, and [Server.Restart]
// starts the server again with crash recovery: what was committed is there
// when the server is [Options.Durable]. Killing a server that is not
// running is an error.
func (s *Server) Kill() error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	p := s.current()
	if p == nil || !p.running() {
		return fmt.Errorf("kill %v: it is not running", s)
	}
	if err := killGroup(p); err != nil {
		return err
	}
	<-p.exited
	return waitGroupGone(p.cmd.Process.Pid)
}
