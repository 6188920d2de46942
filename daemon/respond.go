package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
)

// respond writes resp to conn. A client that stops reading for
// readTimeout loses its response and frees its connection slot; one that
// keeps reading gets all of it, however large and however slowly it reads.
func (s *Server) respond(conn *net.UnixConn, resp *proto.Response, readTimeout time.Duration) {
	// Every answer carries the daemon's version, as sudo-proxy 1.1's
	// protocol says, so that a client can tell what the daemon supports.
	resp.Version = Version()
	w := &progressWriter{conn: conn, idle: readTimeout}
	if err := proto.WriteResponse(w, resp); err != nil {
		s.log.Warn("could not deliver response", "id", resp.ID, "status", resp.Status, "err", err)
	}
}

// progress writes a progress line on conn, for a request that asked for
// them (docs/protocol.md, "Progress"). A client that does not read it in
// read_timeout, or has gone, loses it: what it would have said is then
// moot, and the response is written (or not) as without it.
func (s *Server) progress(conn *net.UnixConn, pol *policy, p proto.Progress) {
	w := &progressWriter{conn: conn, idle: pol.cfg.ReadTimeout.Duration}
	if err := proto.WriteProgress(w, p); err != nil {
		s.log.Debug("could not deliver a progress line", "id", p.ID, "progress", p.Progress, "err", err)
	}
}

// progressWriter writes to conn with a deadline of idle from each write, so
// that the deadline bounds a stall, not the whole response.
// proto.WriteResponse writes through a 32 KiB buffer.
type progressWriter struct {
	conn *net.UnixConn
	idle time.Duration
}

func (w *progressWriter) Write(p []byte) (int, error) {
	if err := w.conn.SetWriteDeadline(time.Now().Add(w.idle)); err != nil {
		return 0, err
	}
	return w.conn.Write(p)
}

// decisionResponse answers a request whose decision was not to run it;
// nil for a withdrawn one, which nobody is left to answer.
func decisionResponse(id string, d approval.Decision) *proto.Response {
	switch d.Verdict {
	case approval.Withdrawn:
		return nil
	case approval.Deny:
		return &proto.Response{ID: id, Status: proto.StatusDenied, Message: d.Message}
	case approval.Timeout:
		return &proto.Response{ID: id, Status: proto.StatusTimeout, Message: d.Message}
	default: // approval.Failed, and anything else that is not an Allow
		return &proto.Response{ID: id, Status: proto.StatusError, Message: d.Message}
	}
}

// response answers a request whose pipeline ran, without its output, which
// finish lends to the answer as it writes it (withOutput).
func response(id string, res *runner.Result) *proto.Response {
	resp := &proto.Response{ID: id, Status: proto.StatusOK, Stages: make([]proto.Stage, len(res.Stages)),
		StdoutTruncated: res.StdoutTruncated}
	for i, st := range res.Stages {
		resp.Stages[i] = proto.Stage{ExitCode: st.ExitCode, StderrTruncated: st.StderrTruncated}
	}
	return resp
}

// maxSurvivorsShown bounds the processes a response message names.
const maxSurvivorsShown = 16

// survivorsMessage tells the agent which processes its pipeline left behind
// and that they were killed. Executable paths are quoted with Go escapes, so
// no byte of a file name reaches a terminal raw.
func survivorsMessage(sv []runner.Survivor) string {
	return fmt.Sprintf("the pipeline exited but left %d process(es) running in its cgroup; they were killed: %s", len(sv), listSurvivors(sv))
}

// listSurvivors lists processes, each as pid and quoted executable, at
// most maxSurvivorsShown of them.
func listSurvivors(sv []runner.Survivor) string {
	var b strings.Builder
	for i, p := range sv {
		if i == maxSurvivorsShown {
			fmt.Fprintf(&b, " and %d more", len(sv)-i)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "pid %d %s", p.PID, strconv.QuoteToASCII(p.Exe))
		if i < len(sv)-1 && i < maxSurvivorsShown-1 {
			b.WriteByte(',')
		}
	}
	return b.String()
}

// timeoutMessage says why a pipeline run with ctx was stopped, under cfg:
// a console stopped it, naming the console; the daemon shut down, naming
// the shutdown_timeout it waited (the one in force when it began, whatever
// a reload did since); or command_timeout passed.
func timeoutMessage(cfg *config.Config, ctx context.Context) string {
	if by := stopperOf(ctx); by != "" {
		return fmt.Sprintf("stopped by an approver (%s): the pipeline was sent SIGTERM and, %s later, SIGKILL", by, cfg.KillGrace)
	}
	var shut shutdownExpired
	if errors.As(context.Cause(ctx), &shut) {
		return fmt.Sprintf("the daemon is shutting down: the command was still running after shutdown_timeout (%s), so it was sent SIGTERM and, %s later, SIGKILL", shut.grace, cfg.KillGrace)
	}
	return fmt.Sprintf("command_timeout (%s) reached: the pipeline was sent SIGTERM and, %s later, SIGKILL", cfg.CommandTimeout, cfg.KillGrace)
}

// shutdownMessage tells the agent whose request was still waiting for a
// human that the daemon stopped, and why when it is known: it is not a
// fault of the request, and it may be sent again once the daemon is back.
func shutdownMessage(ctx context.Context) string {
	why := "agent-sudod is shutting down (it was stopped or restarted)"
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrStoppedAtTerminal), errors.Is(cause, ErrTerminalHungUp):
		why = "agent-sudod stopped: " + cause.Error()
	}
	return why + "; the request was not run. Nothing is wrong with it: send it again once agent-sudod runs again"
}
