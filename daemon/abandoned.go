package daemon

import (
	"context"
	"fmt"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/runner"
)

// cgroupTagLen is how many hex digits of a request's audit ref end the
// name of its cgroup (runner.Spec.CgroupTag): 64 bits, so that a cgroup
// left behind is matched to its request.
const cgroupTagLen = 16

// cgroupTag is the runner.Spec.CgroupTag of the request whose request
// record has hash ref (lower-case hex, which the runner checks); "" when
// there is no ref.
func cgroupTag(ref string) string {
	if len(ref) < cgroupTagLen {
		return ""
	}
	return ref[:cgroupTagLen]
}

// reapAbandoned ends what a daemon that stopped without finishing its
// requests (killed, crashed) left behind: it kills what the request
// cgroups of daemons no longer running still hold and removes them
// (runner.Cgroups.ReapStale), enables the pids controller for the request
// cgroups (request_pids_max; a warning says when it cannot), and writes a
// result record for each request the audit log shows allowed and never
// finished, naming the processes that were killed for it; each is logged.
// It runs once at start, before anything is served, on what New read of
// the log (audit.StartScan). An error means a record could not be
// written: the daemon does not start, as it would not serve without its
// log.
func (s *Server) reapAbandoned(ctx context.Context, l *audit.Log) error {
	var left []runner.Leftover
	if s.cgroups != nil {
		left = s.cgroups.ReapStale()
		// Once no stale cgroup holds a process: the controller cannot be
		// enabled beside populated children.
		pidsMax := s.policy().cfg.RequestPidsMax
		if err := s.cgroups.EnablePids(); err != nil {
			s.log.Warn("no pids controller for the request cgroups: request_pids_max is not applied, and a fork bomb can take every pid the daemon needs",
				"request_pids_max", pidsMax, "err", err)
		} else {
			s.log.Info("each request's cgroup may hold at most request_pids_max processes", "request_pids_max", pidsMax)
		}
	}
	byTag := map[string]*runner.Leftover{}
	for i := range left {
		lo := &left[i]
		if len(lo.Killed) > 0 || lo.Err != nil {
			args := []any{"cgroup", lo.Dir, "daemon_pid", lo.DaemonPID, "killed", len(lo.Killed), "processes", listSurvivors(lo.Killed)}
			if lo.Err != nil {
				args = append(args, "err", lo.Err)
			}
			s.log.Warn("killed what a stopped daemon's request left running in its cgroup", args...)
		}
		if lo.Tag != "" {
			byTag[lo.Tag] = lo
		}
	}
	for _, u := range s.unfinished {
		lo := byTag[cgroupTag(u.Ref)]
		msg := abandonedMessage(u, lo, s.cgroups != nil)
		var killed []runner.Survivor
		cgErr := ""
		if lo != nil {
			killed = lo.Killed
			if lo.Err != nil {
				cgErr = lo.Err.Error()
			}
		}
		if err := l.Abandoned(ctx, u, msg, killed, cgErr); err != nil {
			return err
		}
		s.log.Warn("recorded a request a stopped daemon left unfinished", "id", u.ID, "ref", u.Ref,
			"daemon_pid", u.DaemonPID, "killed", len(killed), "message", msg)
	}
	return nil
}

// abandonedMessage is the result message of u, a request a stopped daemon
// left unfinished; lo is what was found of its cgroup (nil when none was),
// and cgroups whether this daemon uses per-request cgroups.
func abandonedMessage(u audit.Unfinished, lo *runner.Leftover, cgroups bool) string {
	pid := u.DaemonPID
	if lo != nil {
		pid = lo.DaemonPID // from its cgroup's name: the surer of the two
	}
	msg := "abandoned: agent-sudod stopped "
	if pid > 0 {
		msg = fmt.Sprintf("abandoned: agent-sudod (pid %d) stopped ", pid)
	}
	if !u.Started {
		return msg + "after the request was allowed and before it started; nothing ran"
	}
	msg += "while the command ran, without recording how it ended; "
	switch {
	case lo != nil && len(lo.Killed) > 0:
		msg += fmt.Sprintf("the next daemon killed the %d process(es) still running in its cgroup: %s", len(lo.Killed), listSurvivors(lo.Killed))
	case lo != nil || cgroups:
		msg += "no process of it was left in its cgroup"
	default:
		msg += "without per-request cgroups, processes it left cannot be found"
	}
	if lo != nil && lo.Err != nil {
		msg += "; emptying its cgroup failed: " + lo.Err.Error()
	}
	return msg
}
