package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/internal/procinfo"
	"github.com/agent-sudo/agent-sudo/internal/rules"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
	"golang.org/x/sys/unix"
)

// handle serves one connection: one request, one response. Every request
// is audited: one that is refused before anyone is asked gets a single
// refused record; one that is accepted gets its request record before it is
// decided, its decision, and, when allowed, its exec record, durable before
// the first stage starts, and its result. If a record cannot be written the
// request goes no further. Audit writes use execCtx, which outlives a
// shutdown, so the outcome of a request ended by shutdown is still recorded.
//
// serveRequest decides how the request ends; finish alone answers it,
// writes its last record and logs how it ended.
func (s *Server) handle(ctx, execCtx context.Context, conn *net.UnixConn, peer peercred.Creds, pin *procinfo.Pin, perr error) {
	defer conn.Close()
	// The request keeps the policy in force when it was accepted, whatever
	// a reload does meanwhile.
	pol := s.policy()
	e := s.serveRequest(ctx, execCtx, pol, conn, peer, pin, perr)
	s.finish(execCtx, pol, conn, peer.UID, e)
}

// maxWalks bounds the ancestry walks under way at once: a walk held up by a
// hostile process's memory is abandoned after procinfo.WalkTimeout, and at
// most this many such reads can be left behind.
const maxWalks = 64

// describePeer reads the peer's ancestry and container identity from /proc
// into peer, in the connection's goroutine (never the accept loop, which a
// slow read would stall), bounded by walks (nil: unbounded), then compares
// the peer with pin, taken at accept: an ancestry whose first hop is no
// longer the process that connected says so (Ancestry.Changed). What cannot
// be read is marked, never an error: the request goes on.
func describePeer(ctx context.Context, proc procinfo.Proc, peer *peercred.Creds, pin *procinfo.Pin, walks chan struct{}) {
	a := proc.WalkAncestry(ctx, peer.PID, walks)
	a.Changed = pin.Check()
	peer.Ancestry = &a
	ctx, cancel := context.WithTimeout(ctx, procinfo.WalkTimeout)
	defer cancel()
	peer.Container = proc.Container(ctx, peer.PID, peer.UID)
	if peer.Controller != peer.UID {
		// Shown and recorded with the container: a peer counted as
		// another uid is always in a user namespace of its own.
		if peer.Container == nil {
			peer.Container = &procinfo.Container{NS: map[string]uint64{}}
		}
		owner := peer.Controller
		peer.Container.Controller = &owner
	}
}

// ending is how a request ends: the one answer its client gets, the audit
// record that closes it, and the line that says so in the daemon's log.
// serveRequest returns one on every path; finish acts on it.
type ending struct {
	// resp is the answer; nil when nobody is left to answer (a withdrawn
	// request).
	resp *proto.Response
	// refusal, when set, is the request's only audit record: it was refused
	// before anyone was asked. resp's message is then bounded to
	// maxRefusalMessage.
	refusal *audit.Refusal
	// trail, when set, gets the result record of resp and res: the request
	// was decided and ran, failed to start, or could not be recorded
	// further. res is nil when nothing ran.
	trail auditTrail
	res   *runner.Result
	// The log line: msg with args on log at level; when limit is set, a
	// warning rate-limited per limit and uid (see warnLimited). No line when
	// msg is empty (a ping, or a decision, logged as it was made).
	log   *slog.Logger
	level slog.Level
	limit string
	msg   string
	args  []any
}

// refuse ends a request refused before anyone was asked: the refusal is
// its only record, and the warning is rate-limited as kind.
func refuse(log *slog.Logger, kind string, r audit.Refusal, resp *proto.Response, msg string, args ...any) ending {
	return ending{resp: resp, refusal: &r, log: log, limit: kind, msg: msg, args: args}
}

// auditFailed ends a request that cannot go on because a record of it is
// not durable. Nothing has run. trail, when set, gets a best-effort result
// record so the log says how the request ended if it can.
func auditFailed(log *slog.Logger, id string, trail auditTrail, err error) ending {
	return ending{
		resp: &proto.Response{ID: id, Status: proto.StatusError,
			Message: "audit log unavailable: " + err.Error() + "; nothing was run"},
		trail: trail, log: log, level: slog.LevelError, msg: "audit log unavailable; request not run", args: []any{"err", err},
	}
}

// serveRequest reads, plans, decides and runs the request on conn from
// peer (whose credentials could not be read when perr is set; pinned at
// accept by pin, nil then) under pol,
// and returns how it ends. It writes nothing to conn.
func (s *Server) serveRequest(ctx, execCtx context.Context, pol *policy, conn *net.UnixConn, peer peercred.Creds, pin *procinfo.Pin, perr error) ending {
	accepted := time.Now()
	if perr != nil {
		msg := "cannot read the peer's credentials; refusing the connection"
		if errors.Is(perr, unix.EMFILE) || errors.Is(perr, unix.ENFILE) {
			// The daemon's own limit, not the agent's doing.
			msg = "the daemon is out of file descriptors, so it cannot read the peer's credentials; refusing the connection, try again later"
		}
		return ending{resp: &proto.Response{Status: proto.StatusError, Message: msg}, refusal: &audit.Refusal{Reason: msg},
			log: s.log, level: slog.LevelError, msg: "cannot identify peer", args: []any{"err", perr}}
	}
	log := s.log.With("peer_uid", peer.UID, "peer_pid", peer.PID, "peer_exe", peer.Exe)
	// Every record that names the peer carries its ancestry and container
	// (describePeer); a ping and a connection that sends nothing are not
	// recorded, so they do not pay for the walk.
	describe := func() { describePeer(ctx, s.proc, &peer, pin, s.walks) }
	why, allowed := pol.auth.check(peer)
	if !allowed {
		describe()
		return refuse(log, "unauthorised", audit.Refusal{Peer: &peer, Reason: why},
			&proto.Response{Status: proto.StatusError, Message: why}, "refused unauthorised peer", "reason", why)
	}

	raw, idle, err := readLine(pol.cfg, conn, accepted)
	if idle {
		// Nothing at all was sent: not a request, so not audited.
		msg := fmt.Sprintf("no request: nothing was sent within first_byte_timeout (%s) of connecting; closing the connection", pol.cfg.FirstByteTimeout)
		return ending{resp: &proto.Response{Status: proto.StatusError, Message: msg},
			log: log, limit: "idle", msg: "closed idle connection", args: []any{"reason", msg}}
	}
	var req *proto.Request
	// One instant for the freshness check and the replay cache
	// (replayCache.firstUse).
	checked := s.now()
	if err == nil {
		req, err = proto.DecodeRequest(raw, proto.DecodeOptions{Now: func() time.Time { return checked }, MaxClockSkew: pol.cfg.MaxClockSkew.Duration})
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("timed out after %s waiting for a complete request line", pol.cfg.ReadTimeout)
		}
		describe()
		return refuse(log, "refused", audit.Refusal{ID: proto.IDOf(err), Peer: &peer, Reason: err.Error(), Raw: raw},
			proto.ErrorResponse(err), "refused request", "id", proto.IDOf(err), "err", audit.Bound(err.Error(), audit.MaxRefusedReasonBytes))
	}
	_ = conn.SetReadDeadline(time.Time{})
	log = log.With("id", req.ID, "session", req.Session, "host", req.Host)

	if req.Action == proto.ActionPing { // nothing runs, so nothing is audited
		return ending{resp: &proto.Response{ID: req.ID, Status: proto.StatusOK, Message: proto.PingMessage,
			Access: fmt.Sprintf("user %s (uid %d) may use it: %s", peer.User(), peer.UID, why)}}
	}
	describe()
	refuseRequest := func(msg string) ending {
		return refuse(log, "refused", audit.Refusal{ID: req.ID, Request: req, Peer: &peer, Reason: msg, Raw: raw},
			&proto.Response{ID: req.ID, Status: proto.StatusError, Message: msg},
			"refused request", "err", audit.Bound(msg, audit.MaxRefusedReasonBytes))
	}
	if req.Action == proto.ActionStop {
		return refuseRequest(`action "stop" is refused: agent-sudod is a system service shared by every user of this machine and is not stopped by its clients; an administrator stops it (systemctl stop agent-sudo)`)
	}
	if why := s.replay.firstUse(req.ID, req.Time, checked, pol.cfg.MaxClockSkew.Duration, pol.cfg.ApprovalTimeout.Duration); why != "" {
		return refuseRequest(why)
	}
	p, err := s.plan(pol, req, peer)
	if err != nil {
		return refuseRequest(err.Error())
	}
	defer p.close()
	log.Info("request", "pipeline", audit.Bound(p.display(), maxLogPipeline), "run_as", p.target.Name, "reason", req.Reason)
	trail, err := s.audit.Received(execCtx, req, peer)
	if err != nil {
		return auditFailed(log, req.ID, nil, err)
	}

	d := s.decide(ctx, conn, p, recordOf(trail))
	log.Info("decision", "verdict", d.Verdict, "by", d.By)
	if err := trail.Decided(execCtx, d); err != nil {
		e := auditFailed(log, req.ID, trail, err)
		if d.Verdict == approval.Withdrawn {
			e.resp, e.trail = nil, nil // nobody is left to answer
		}
		return e
	}
	if d.Verdict != approval.Allow {
		return ending{resp: decisionResponse(req.ID, d)}
	}

	spec := p.spec()
	spec.Cgroups = s.cgroups
	spec.CgroupTag = cgroupTag(recordOf(trail))
	spec.PidsMax = pol.cfg.RequestPidsMax
	if err := trail.Started(execCtx, spec); err != nil {
		// Nothing ran: the web approver's receipt says so, not "running".
		s.finished(d, req.ID, string(proto.StatusError), nil)
		return auditFailed(log, req.ID, trail, err)
	}
	if req.Progress {
		s.progress(conn, pol, proto.Progress{Progress: proto.ProgressRunning, ID: req.ID})
	}
	// The command runs to completion even if the client hangs up now: a
	// package manager killed half-way leaves the system broken, and the
	// human approved the whole command. The result is still recorded. Only
	// a console can stop it before its time is up (stopRun), and then the
	// same way as the timeout does.
	runCtx, stopRun := context.WithCancelCause(execCtx)
	defer stopRun(nil)
	ended := s.listRunning(p, d, &spec, stopRun)
	res, err := s.exec(runCtx, spec)
	ended()
	stoppedBy := stopperOf(runCtx)
	if err != nil {
		msg := err.Error()
		if stoppedBy != "" {
			trail.Stopped(stoppedBy)
			msg = fmt.Sprintf("stopped by an approver (%s) before it started; nothing ran: %s", stoppedBy, msg)
		}
		s.finished(d, req.ID, string(proto.StatusError), nil)
		return ending{resp: &proto.Response{ID: req.ID, Status: proto.StatusError, Message: msg}, trail: trail,
			log: log, level: slog.LevelError, msg: "execution failed", args: []any{"err", err}}
	}
	resp := response(req.ID, res)
	if res.TimedOut {
		resp.Status = proto.StatusTimeout
		resp.Message = timeoutMessage(pol.cfg, runCtx)
		if stoppedBy != "" {
			trail.Stopped(stoppedBy)
			log.Info("stopped by a console", "console", stoppedBy)
		}
	}
	if len(res.Survivors) > 0 {
		resp.Message = survivorsMessage(res.Survivors)
		log.Warn("processes outlived the pipeline and were killed", "survivors", resp.Message)
	}
	if res.CgroupError != "" {
		log.Error("the pipeline's cgroup could not be emptied or removed", "err", res.CgroupError)
	}
	s.finished(d, req.ID, string(resp.Status), exitCodes(res))
	// The command has run: a result that cannot be recorded is logged, and
	// the client still gets its answer.
	return ending{resp: resp, trail: trail, res: res, log: log, level: slog.LevelInfo, msg: "result",
		args: []any{"status", resp.Status, "exit_codes", exitCodes(res), "duration", res.Ended.Sub(res.Started)}}
}

// decide applies the rules and, when they do not settle it, asks the
// approver until approval_timeout, the client hanging up, or shutdown.
func (s *Server) decide(ctx context.Context, conn *net.UnixConn, p *plan, record string) approval.Decision {
	pol := p.pol
	q := rules.Query{
		Privileged:   p.req.Privileged,
		Session:      p.req.Session,
		Peer:         &rules.Peer{UID: p.peer.UID, GIDs: append([]uint32{p.peer.GID}, p.peer.Groups...)},
		ForwardAgent: p.req.ForwardAgent,
		Stdin:        len(p.req.Stdin) > 0,
		Env:          slices.Sorted(maps.Keys(p.req.Env)),
	}
	for _, c := range p.stages {
		// Rules see the program by the path it was found at in the secure
		// path (before symlinks), which is what a rule writer names.
		q.Stages = append(q.Stages, rules.Stage{Program: c.Link, Args: c.Args[1:]})
	}
	rd := pol.rules.Decide(q)
	switch rd.Action {
	case rules.Allow:
		return approval.Decision{Verdict: approval.Allow, By: rd.Rule}
	case rules.Deny:
		return approval.Decision{Verdict: approval.Deny, By: rd.Rule, Message: rd.Reason}
	default:
		// Why no rule settled it, including allow rules passed over, for
		// whoever wonders why a rule did not apply.
		s.log.Info("rules ask a human", "id", p.req.ID, "reason", rd.Reason)
	}

	deadline := s.now().Add(pol.cfg.ApprovalTimeout.Duration)
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	actx, cancelTimeout := context.WithDeadline(actx, deadline)
	defer cancelTimeout()
	stopWatch := watchHangup(conn, cancel)
	defer stopWatch()

	pending := &approval.Pending{
		Request: p.req, Peer: peerInfo(p.peer), Programs: p.programs, RunAs: p.target.Name,
		// The human is told why, as the log line above is; "needs
		// approval" goes without saying on the console.
		Why: strings.TrimPrefix(rd.Reason, rules.AskPrefix),
		Cwd: p.dir, CwdChain: p.dirChain, CwdWritable: p.dirWritable,
		Received: p.received, Deadline: deadline, DaemonHost: s.host, Record: record, Approvals: rd.Approvals,
		NonInteractive: p.req.NonInteractive,
	}
	if p.req.Progress {
		pending.Waiting = func(a approval.Approvers) {
			s.progress(conn, pol, proto.Progress{Progress: proto.ProgressWaiting, ID: p.req.ID, Consoles: a.Consoles, WebApprovers: a.Web, Deadline: deadline.UTC()})
		}
	}
	d, err := s.approver.Ask(actx, pending)
	switch {
	case err == nil:
		return d
	case errors.Is(err, approval.ErrNoApprover):
		// sudo -n: the client asked not to wait when nobody could answer.
		return approval.Decision{Verdict: approval.Deny, By: approval.ByNoApprover,
			Message: proto.NoApproverPrefix + " no approver console or web approver is connected, and the request asked not to wait (non_interactive, sudo -n); it was not run"}
	case actx.Err() == nil:
		return approval.Decision{Verdict: approval.Failed, By: approval.ByApprover,
			Message: "approval failed, so the request was not run: " + err.Error()}
	}
	// The wait ended: the decision is the one the broker told the consoles.
	d = approval.Unanswered(actx)
	switch d.Verdict {
	case approval.Timeout:
		d.Message = fmt.Sprintf("nobody approved the request within approval_timeout (%s); it was not run", pol.cfg.ApprovalTimeout)
	case approval.Failed:
		d.Message = shutdownMessage(actx)
	}
	return d
}

// finish ends a request as e says, in this order: the log line, the audit
// record (a refusal, or the result of a trail), the answer, and then the
// output's memory. A record that cannot be written is logged: nothing more
// can run, and the client should still learn how its request ended. ctx
// bounds the audit write; it is the server's execCtx, which outlives a
// shutdown by shutdown_timeout.
func (s *Server) finish(ctx context.Context, pol *policy, conn *net.UnixConn, uid uint32, e ending) {
	if e.res != nil {
		defer e.res.Release() // after the answer is written
	}
	switch {
	case e.msg == "":
	case e.limit != "":
		s.warnLimited(e.log, e.limit, uid, e.msg, e.args...)
	default:
		e.log.Log(ctx, e.level, e.msg, e.args...)
	}
	if e.refusal != nil {
		// A refusal may quote what the agent sent (a program name of a
		// megabyte): the answer is bounded like the record and the log line.
		e.resp.Message = audit.Bound(e.resp.Message, maxRefusalMessage)
		if err := s.audit.Refused(ctx, *e.refusal); err != nil {
			s.log.Error("audit: refusal not recorded", "id", e.refusal.ID, "err", err)
		}
	}
	if e.resp == nil {
		return
	}
	// The output is lent to the answer while the result is recorded and
	// the answer written (runner.Output), and taken back before Release.
	withOutput(e.res, e.resp, func() {
		if e.trail != nil {
			if err := e.trail.Finished(ctx, e.resp, e.res); err != nil {
				e.log.Error("audit: result not recorded", "err", err)
			}
		}
		s.respond(conn, e.resp, pol.cfg.ReadTimeout.Duration)
	})
}

// withOutput calls f with res's output in resp (stdout, and each stage's
// stderr), valid until f returns and removed from resp then. Without res,
// it calls f.
func withOutput(res *runner.Result, resp *proto.Response, f func()) {
	if res == nil {
		f()
		return
	}
	res.Use(func(stdout []byte, stderrs [][]byte) {
		resp.Stdout = stdout
		for i := range resp.Stages {
			if i < len(stderrs) {
				resp.Stages[i].Stderr = stderrs[i]
			}
		}
		defer func() {
			resp.Stdout = nil
			for i := range resp.Stages {
				resp.Stages[i].Stderr = nil
			}
		}()
		f()
	})
}

// maxLogPipeline bounds the pipeline written in the daemon's log; the audit
// log has it in full.
const maxLogPipeline = 4096

// readLine reads the request line of a connection accepted at accepted. A
// connection that sends no byte within cfg's first_byte_timeout is idle
// (true); read_timeout bounds the whole line. The line is returned as read,
// also with an error when it was read but something else failed.
//
// A deadline that has passed does not make bytes already in the socket
// late: when the daemon was stopped (SIGSTOP, a paused VM) while the agent
// sent its line, the line is read and served on resuming, not answered as
// idle or timed out (see waitingReader).
func readLine(cfg *config.Config, conn *net.UnixConn, accepted time.Time) (line []byte, idle bool, err error) {
	deadline := accepted.Add(cfg.ReadTimeout.Duration)
	first := accepted.Add(cfg.FirstByteTimeout.Duration)
	if deadline.Before(first) {
		first = deadline
	}
	r := waitingReader{conn}
	_ = conn.SetReadDeadline(first)
	var b [1]byte
	n, err := r.Read(b[:])
	if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, true, nil
	}
	_ = conn.SetReadDeadline(deadline)
	line, err = proto.ReadLine(io.MultiReader(bytes.NewReader(b[:n]), r))
	_ = conn.SetReadDeadline(time.Time{})
	return line, false, err
}

// waitingReader reads a connection whose read deadline may have passed.
// Go's poller fails a read whose deadline has passed without asking the
// kernel, so bytes that arrived in time but were not read in time (the
// daemon was stopped) would count as never sent. When a read fails on its
// deadline, waitingReader reads, without waiting, what the socket already
// holds, and reports the deadline only when that is nothing. A peer cannot
// stretch the deadline with it: what it adds is only what was already
// waiting at each read, and the line is bounded (proto.MaxRequestBytes).
type waitingReader struct{ conn *net.UnixConn }

func (r waitingReader) Read(p []byte) (int, error) {
	n, err := r.conn.Read(p)
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		return n, err
	}
	m, werr := readWaiting(r.conn, p)
	if werr != nil {
		return m, werr
	}
	if m > 0 {
		return m, nil
	}
	return 0, err
}

// readWaiting reads into p what conn already holds, without waiting and
// whatever conn's deadlines: 0 and no error when nothing is waiting, io.EOF
// when the peer has closed its end.
func readWaiting(conn *net.UnixConn, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	rc, err := conn.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("reading what the socket holds: %w", err)
	}
	var n int
	var rerr error
	// Control, unlike Read, does not look at the deadline; the descriptor
	// is non-blocking, so the read returns at once.
	if err := rc.Control(func(fd uintptr) {
		for {
			n, rerr = unix.Read(int(fd), p)
			if rerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return 0, fmt.Errorf("reading what the socket holds: %w", err)
	}
	switch {
	case rerr == unix.EAGAIN:
		return 0, nil
	case rerr != nil:
		return 0, fmt.Errorf("reading what the socket holds: %w", rerr)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// maxRefusalMessage bounds the message of a refusal sent to the agent.
const maxRefusalMessage = 4 << 10

// listRunning lists the command of p, allowed by d, with the server's
// running list while it runs, so that consoles can see it, read the end of
// its output (through a runner.Live it puts in spec) and stop it (which
// cancels the command's context through stop, with the console as the
// cause). It returns the func that takes the command off the list.
func (s *Server) listRunning(p *plan, d approval.Decision, spec *runner.Spec, stop context.CancelCauseFunc) (ended func()) {
	if s.running == nil {
		return func() {}
	}
	live := &runner.Live{}
	spec.Live = live
	_, ended = s.running.Started(approval.Running{
		Request: p.req.ID, Session: p.req.Session, Host: p.req.Host, Peer: peerInfo(p.peer),
		Pipeline: p.req.Pipeline, RunAs: p.target.Name, Privileged: p.req.Privileged,
		By: d.By, Started: s.now(),
	}, func(by string) { stop(stoppedByConsole{by: by}) }, func() (*approval.Output, bool) {
		// Before the stages start, and in the instant between their end
		// and ended, there is no output to show: an empty one.
		t, _ := live.Tail()
		o := &approval.Output{Stdout: approval.LastLines(t.Stdout), StdoutBytes: t.StdoutBytes,
			Stderr: make([][]byte, len(t.Stderr)), StderrBytes: t.StderrBytes, At: s.now()}
		for i, e := range t.Stderr {
			o.Stderr[i] = approval.LastLines(e)
		}
		return o, true
	})
	return ended
}

// finished tells the web approvers how request id, allowed by d, ended
// (broker.Finished), when a passkey allowed it (alone, or as one of the
// people it needed): the receipt of that decision on a web approver's page
// says it. Of a request a rule, a session grant or consoles alone allowed,
// which no web approver decided, they are told nothing.
func (s *Server) finished(d approval.Decision, id, status string, codes []int) {
	signed := d.Signed != nil || slices.ContainsFunc(d.Approvals, func(a approval.Approval) bool { return a.Signed != nil })
	if s.running != nil && signed {
		s.running.Finished(id, status, codes)
	}
}

func exitCodes(res *runner.Result) []int {
	codes := make([]int, len(res.Stages))
	for i, st := range res.Stages {
		codes[i] = st.ExitCode
	}
	return codes
}
