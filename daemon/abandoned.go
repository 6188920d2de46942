package daemon

import (
	"context"
	"fmt"
	"os"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/runner"
)

// cgroupTagLen is how many hex digits of a request's audit ref end the
// name of its cgroup (runner.Spec.CgroupTag): 64 bits, so that a cgroup
// left behind is matched to its request.
const cgroupTagLen = 16

// cgroupTag is the runner.Spec.CgroupTag of the request whose request
// record has hash ref; "" when ref is not a record hash.
func cgroupTag(ref string) string {
	if len(ref) < cgroupTagLen {
		return ""
	}
	for _, c := range ref[:cgroupTagLen] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return ""
		}
	}
	return ref[:cgroupTagLen]
}

// reapAbandoned ends what a daemon that stopped without finishing its
// requests (killed, crashed) left behind: it kills what the request
// cgroups of daemons no longer running still hold and removes them
// (runner.Cgroups.ReapStale), and writes a result record for each request
// the audit log shows allowed and never finished, naming the processes
// that were killed for it; each is logged. It runs once at start, before
// anything is served. An error means a record could not be written or the
// log read: the daemon does not start, as it would not serve without its
// log.
func (s *Server) reapAbandoned(ctx context.Context, l *audit.Log) error {
	var left []runner.Leftover
	if s.cgroups != nil {
		left = s.cgroups.ReapStale()
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
	unfinished, err := audit.UnfinishedRequests(ctx, l.Path())
	if err != nil {
		return err
	}
	for _, u := range unfinished {
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
	stopped := "agent-sudod"
	if u.DaemonPID > 0 {
		stopped = fmt.Sprintf("agent-sudod (pid %d)", u.DaemonPID)
	}
	now := fmt.Sprintf("the next daemon (pid %d)", os.Getpid())
	if !u.Started {
		return fmt.Sprintf("abandoned: %s stopped after the request was allowed and before it started; nothing ran (recorded by %s)", stopped, now)
	}
	msg := fmt.Sprintf("abandoned: %s stopped while the command ran, without recording how it ended; ", stopped)
	switch {
	case lo != nil && len(lo.Killed) > 0:
		msg += fmt.Sprintf("%s killed the %d process(es) still running in its cgroup: %s", now, len(lo.Killed), listSurvivors(lo.Killed))
	case lo != nil || cgroups:
		msg += fmt.Sprintf("no process of it was still running when %s started", now)
	default:
		msg += fmt.Sprintf("without per-request cgroups %s cannot find processes it left", now)
	}
	if lo != nil && lo.Err != nil {
		msg += "; emptying its cgroup failed: " + lo.Err.Error()
	}
	return msg
}
