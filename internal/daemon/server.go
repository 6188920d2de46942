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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/approval"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/internal/rules"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
	"golang.org/x/sys/unix"
)

// Server answers agent requests on a listener. Create it with New.
type Server struct {
	cfg      *config.Config
	rules    *rules.Engine
	env      *runner.EnvPolicy
	approver approval.Approver
	audit    *audit.Log
	auth     *authorizer
	log      *slog.Logger
	now      func() time.Time
	replay   *replayCache
	// limits shares the connection slots; rates limits connections per
	// uid; logs keeps refusals from flooding the log (see doc.go).
	limits *connLimits
	rates  *rateLimits
	logs   *logLimiter
	// sshAuthSock is the approving human's agent socket, handed only to
	// unprivileged forward_agent requests.
	sshAuthSock string
	// cgroups makes each pipeline's cgroup; nil only with cgroup =
	// "best-effort" on a system without a usable cgroup v2 hierarchy.
	cgroups *runner.Cgroups

	conns sync.WaitGroup
}

// Options are the parts of a Server that are not configuration: what tests
// and the foreground mode replace.
type Options struct {
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
	// Approver decides requests no rule decides; nil means approval.Nobody.
	Approver approval.Approver
	// Audit is the audit log every request is recorded in; required.
	Audit *audit.Log
	// Now is the clock for freshness and replay checks; nil means time.Now.
	Now func() time.Time
	// SSHAuthSock is the socket forward_agent requests get; empty refuses them.
	SSHAuthSock string
	// Foreground, when set, runs a console on the daemon's own terminal
	// (agent-sudod --tty). Run calls it with the approver socket once both
	// sockets listen, and stops the daemon when it returns.
	Foreground func(ctx context.Context, approverSocket string) error
}

// CheckConfig builds, from a validated configuration, everything the daemon
// builds from it at start without touching sockets or the audit log (the rule
// engine with its user and group names resolved, the environment policy, the
// access lists), and returns the first error the daemon would stop on, or
// the rule linter's warnings. agent-sudod --check-config reports them.
func CheckConfig(cfg *config.Config) ([]rules.Warning, error) {
	if _, _, _, err := build(cfg); err != nil {
		return nil, err
	}
	return cfg.Lint(), nil
}

// build makes the parts of a Server that come from the configuration alone.
func build(cfg *config.Config) (*rules.Engine, *runner.EnvPolicy, *authorizer, error) {
	engine, err := cfg.Engine()
	if err != nil {
		return nil, nil, nil, err
	}
	env, err := cfg.EnvPolicy()
	if err != nil {
		return nil, nil, nil, err
	}
	auth, err := newAuthorizer(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	return engine, env, auth, nil
}

// New builds a Server from a validated configuration. It logs the rule
// linter's warnings.
func New(cfg *config.Config, opts Options) (*Server, error) {
	engine, env, auth, err := build(cfg)
	if err != nil {
		return nil, err
	}
	if opts.Audit == nil {
		return nil, errors.New("no audit log: the daemon does not run commands it cannot record")
	}
	s := &Server{
		cfg: cfg, rules: engine, env: env, approver: opts.Approver, audit: opts.Audit, auth: auth, log: opts.Logger,
		now: opts.Now, sshAuthSock: opts.SSHAuthSock,
		replay: newReplayCache(replayWindow(cfg)),
		limits: newConnLimits(cfg.MaxConnections, cfg.RootConnections, cfg.MaxConnectionsPerUser),
		rates:  newRateLimits(cfg.MaxRequestsPerMinute),
		logs:   newLogLimiter(logEvery),
	}
	if s.approver == nil {
		s.approver = approval.Nobody{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for _, w := range cfg.Lint() {
		s.log.Warn("rule linter: this allow rule may give root away", "rule", w.Rule, "warning", w.Message)
	}
	if s.now == nil {
		s.now = time.Now
	}
	cg, err := runner.OpenCgroups()
	switch {
	case err == nil:
		s.cgroups = cg
		s.log.Info("each request runs in a cgroup of its own", "parent", cg.Parent())
	case cfg.Cgroup == config.CgroupBestEffort:
		s.log.Warn("no per-request cgroups (cgroup = \"best-effort\"): processes that leave a pipeline's process group will outlive their request", "err", err)
	default:
		return nil, fmt.Errorf("cgroup = %q: each request's processes must run in a cgroup of their own, and this system offers none: %w "+
			"(set cgroup = %q to run without them, accepting that processes which leave the process group outlive command_timeout)",
			cfg.Cgroup, err, config.CgroupBestEffort)
	}
	return s, nil
}

// Serve accepts connections on ln until ctx is cancelled, then shuts down:
// it stops accepting, ends every request still waiting for approval with an
// error (nothing runs), gives running commands up to shutdown_timeout to
// finish before they are killed, answers every connection, and returns.
// ctx is the base of every request. Serve closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// Commands outlive ctx by up to shutdown_timeout, so they get their own
	// context that is cancelled only after that grace.
	execCtx, stopExec := context.WithCancel(context.WithoutCancel(ctx))
	defer stopExec()
	go func() {
		<-ctx.Done()
		_ = ln.Close()
		t := time.NewTimer(s.cfg.ShutdownTimeout)
		defer t.Stop()
		select {
		case <-t.C:
			stopExec()
		case <-execCtx.Done():
		}
	}()

	var acceptErr error
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				acceptErr = fmt.Errorf("accept: %w", err)
			}
			break
		}
		conn, ok := c.(*net.UnixConn)
		if !ok {
			_ = c.Close()
			continue
		}
		// The peer's credentials are read once, here: the limits below
		// are per uid. A peer whose credentials cannot be read is handled
		// (and refused) as an unknown non-root uid.
		peer, perr := peercred.Get(conn)
		uid := peer.UID
		if perr != nil {
			uid = unknownUID
		}
		if ok, after := s.rates.allow(uid, time.Now()); !ok {
			s.refuseConn(conn, uid, "rate", fmt.Sprintf(
				"rate limited: uid %d opened more than %d connections in the last minute (max_requests_per_minute); try again in %s",
				uid, s.cfg.MaxRequestsPerMinute, (after+time.Second-1).Truncate(time.Second)))
			continue
		}
		// A connection that finds no free slot waits up to busyWait for
		// one before it is told "busy": a slot is freed only after its
		// client has read the answer, so a client that sends its next
		// request at once would otherwise be refused on a race.
		verdict, msg := s.limits.admit(uid)
		if verdict == refused {
			s.refuseConn(conn, uid, "busy", msg)
			continue
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			if verdict == mustWait && !s.limits.wait(ctx, uid, busyWait) {
				s.refuseConn(conn, uid, "busy", s.limits.busyMessage(uid))
				return
			}
			defer s.limits.release(uid)
			s.handle(ctx, execCtx, conn, peer, perr)
		}()
	}
	s.conns.Wait()
	return acceptErr
}

// unknownUID stands for a peer whose credentials could not be read, for the
// connection limits only; such a peer is always refused.
const unknownUID = 1<<32 - 1

// busyWait is how long a connection that finds no free slot waits for one.
const busyWait = time.Second

// logEvery is how often each kind of refusal is logged per uid at most.
const logEvery = 10 * time.Second

// refuseConn answers a connection refused before it is read (busy, rate
// limited) and closes it. Such connections are not audited, since no
// request was read; the log gets at most one line per kind and uid per
// logEvery, saying how many were held back.
func (s *Server) refuseConn(conn *net.UnixConn, uid uint32, kind, msg string) {
	defer conn.Close()
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	_ = proto.WriteResponse(conn, &proto.Response{Status: proto.StatusError, Message: msg})
	s.warnLimited(s.log.With("peer_uid", uid), kind, uid, "refused connection", "reason", msg)
}

// warnLimited logs a warning on log (which names the peer) at most once per
// logEvery for kind and uid, with the number of lines held back since the
// last one.
func (s *Server) warnLimited(log *slog.Logger, kind string, uid uint32, msg string, args ...any) {
	ok, held := s.logs.allow(fmt.Sprintf("%s/%d", kind, uid), time.Now())
	if !ok {
		return
	}
	if held > 0 {
		args = append(args, "held_back", held)
	}
	log.Warn(msg, append(args, "kind", kind)...)
}

// handle serves one connection: one request, one response. Every request
// is audited: one that is refused before anyone is asked gets a single
// refused record; one that is accepted gets its request record before it is
// decided, its decision, and, when allowed, its exec record, durable before
// the first stage starts, and its result. If a record cannot be written the
// request goes no further. Audit writes use execCtx, which outlives a
// shutdown, so the outcome of a request ended by shutdown is still recorded.
func (s *Server) handle(ctx, execCtx context.Context, conn *net.UnixConn, peer peercred.Creds, err error) {
	defer conn.Close()
	accepted := time.Now()
	if err != nil {
		s.log.Error("cannot identify peer", "err", err)
		msg := "cannot read the peer's credentials; refusing the connection"
		s.refuse(execCtx, conn, audit.Refusal{Reason: msg}, &proto.Response{Status: proto.StatusError, Message: msg})
		return
	}
	log := s.log.With("peer_uid", peer.UID, "peer_pid", peer.PID, "peer_exe", peer.Exe)
	why, allowed := s.auth.check(peer)
	if !allowed {
		reason := why
		s.warnLimited(log, "unauthorised", peer.UID, "refused unauthorised peer", "reason", reason)
		s.refuse(execCtx, conn, audit.Refusal{Peer: &peer, Reason: reason}, &proto.Response{Status: proto.StatusError, Message: reason})
		return
	}

	raw, idle, err := s.readLine(conn, accepted)
	if idle {
		// Nothing at all was sent: not a request, so not audited.
		msg := fmt.Sprintf("no request: nothing was sent within first_byte_timeout (%s) of connecting; closing the connection", s.cfg.FirstByteTimeout)
		s.warnLimited(log, "idle", peer.UID, "closed idle connection", "reason", msg)
		s.respond(conn, &proto.Response{Status: proto.StatusError, Message: msg})
		return
	}
	var req *proto.Request
	if err == nil {
		req, err = proto.DecodeRequest(raw, proto.DecodeOptions{Now: s.now, MaxClockSkew: s.cfg.MaxClockSkew})
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = fmt.Errorf("timed out after %s waiting for a complete request line", s.cfg.ReadTimeout)
		}
		s.warnLimited(log, "refused", peer.UID, "refused request", "id", proto.IDOf(err), "err", audit.Bound(err.Error(), audit.MaxRefusedReasonBytes))
		s.refuse(execCtx, conn, audit.Refusal{ID: proto.IDOf(err), Peer: &peer, Reason: err.Error(), Raw: raw}, proto.ErrorResponse(err))
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	log = log.With("id", req.ID, "session", req.Session, "host", req.Host)

	if req.Action == proto.ActionPing { // nothing runs, so nothing is audited
		s.respond(conn, &proto.Response{ID: req.ID, Status: proto.StatusOK, Version: Version(),
			Message: fmt.Sprintf("agent-sudod %s is up and user %s (uid %d) may use it: %s", Version(), peer.User(), peer.UID, why)})
		return
	}
	refuseRequest := func(msg string) {
		s.warnLimited(log, "refused", peer.UID, "refused request", "err", audit.Bound(msg, audit.MaxRefusedReasonBytes))
		s.refuse(execCtx, conn, audit.Refusal{ID: req.ID, Request: req, Peer: &peer, Reason: msg, Raw: raw},
			&proto.Response{ID: req.ID, Status: proto.StatusError, Message: msg, Version: Version()})
	}
	if req.Action == proto.ActionStop {
		refuseRequest(`action "stop" is refused: agent-sudod is a system service shared by every user of this machine and is not stopped by its clients; an administrator stops it (systemctl stop agent-sudo)`)
		return
	}
	if !s.replay.firstUse(req.ID, s.now()) {
		refuseRequest(fmt.Sprintf("request id %q was already used within the last %s; refusing it as a replay (send a fresh id, or omit it)",
			req.ID, replayWindow(s.cfg)))
		return
	}
	p, err := s.plan(req, peer)
	if err != nil {
		refuseRequest(err.Error())
		return
	}
	defer p.close()
	log.Info("request", "pipeline", audit.Bound(p.display(), maxLogPipeline), "run_as", p.target.Name, "reason", req.Reason)
	trail, err := s.audit.Received(execCtx, req, peer)
	if err != nil {
		s.auditFailed(conn, log, req.ID, nil, err)
		return
	}

	d := s.decide(ctx, conn, p)
	log.Info("decision", "verdict", d.Verdict, "by", d.By)
	if err := trail.Decided(execCtx, d); err != nil {
		if d.Verdict != approval.Withdrawn {
			s.auditFailed(conn, log, req.ID, trail, err)
		}
		return
	}
	switch d.Verdict {
	case approval.Allow:
	case approval.Deny:
		s.respond(conn, &proto.Response{ID: req.ID, Status: proto.StatusDenied, Message: d.Message})
		return
	case approval.Timeout:
		s.respond(conn, &proto.Response{ID: req.ID, Status: proto.StatusTimeout, Message: d.Message})
		return
	case approval.Withdrawn:
		return // nobody is left to answer
	default:
		s.respond(conn, &proto.Response{ID: req.ID, Status: proto.StatusError, Message: d.Message})
		return
	}

	spec := p.spec(s.cfg)
	spec.Cgroups = s.cgroups
	if err := trail.Started(execCtx, spec); err != nil {
		s.auditFailed(conn, log, req.ID, trail, err)
		return
	}
	// The command runs to completion even if the client hangs up now: a
	// package manager killed half-way leaves the system broken, and the
	// human approved the whole command. The result is still recorded.
	res, err := runner.Run(execCtx, spec)
	if err != nil {
		log.Error("execution failed", "err", err)
		resp := &proto.Response{ID: req.ID, Status: proto.StatusError, Message: err.Error()}
		if aerr := trail.Finished(execCtx, resp, nil); aerr != nil {
			log.Error("audit: result not recorded", "err", aerr)
		}
		s.respond(conn, resp)
		return
	}
	defer res.Release() // after the response below is written
	resp := response(req.ID, res)
	if res.TimedOut {
		resp.Status = proto.StatusTimeout
		resp.Message = s.timeoutMessage(execCtx)
	}
	if len(res.Survivors) > 0 {
		resp.Message = survivorsMessage(res.Survivors)
		log.Warn("processes outlived the pipeline and were killed", "survivors", resp.Message)
	}
	if res.CgroupError != "" {
		log.Error("the pipeline's cgroup could not be emptied or removed", "err", res.CgroupError)
	}
	log.Info("result", "status", resp.Status, "exit_codes", exitCodes(res), "duration", res.Ended.Sub(res.Started))
	// The command has run: a result that cannot be recorded is logged, and
	// the client still gets its answer.
	if err := trail.Finished(execCtx, resp, res); err != nil {
		log.Error("audit: result not recorded", "err", err)
	}
	s.respond(conn, resp)
}

// maxLogPipeline bounds the pipeline written in the daemon's log; the audit
// log has it in full.
const maxLogPipeline = 4096

// readLine reads the request line of a connection accepted at accepted. A
// connection that sends no byte within first_byte_timeout is idle (true);
// read_timeout bounds the whole line. The line is returned as read, also
// with an error when it was read but something else failed.
func (s *Server) readLine(conn *net.UnixConn, accepted time.Time) (line []byte, idle bool, err error) {
	deadline := accepted.Add(s.cfg.ReadTimeout)
	first := accepted.Add(s.cfg.FirstByteTimeout)
	if deadline.Before(first) {
		first = deadline
	}
	_ = conn.SetReadDeadline(first)
	var b [1]byte
	n, err := conn.Read(b[:])
	if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, true, nil
	}
	_ = conn.SetReadDeadline(deadline)
	line, err = proto.ReadLine(io.MultiReader(bytes.NewReader(b[:n]), conn))
	_ = conn.SetReadDeadline(time.Time{})
	return line, false, err
}

// refuse records a request refused before anyone was asked and answers it.
// The answer goes out even if the record cannot be written: nothing runs
// either way, and the client should learn why.
func (s *Server) refuse(ctx context.Context, conn *net.UnixConn, r audit.Refusal, resp *proto.Response) {
	// A refusal may quote what the agent sent (a program name of a
	// megabyte): the answer is bounded like the record and the log line.
	resp.Message = audit.Bound(resp.Message, maxRefusalMessage)
	if err := s.audit.Refused(ctx, r); err != nil {
		s.log.Error("audit: refusal not recorded", "id", r.ID, "err", err)
	}
	s.respond(conn, resp)
}

// maxRefusalMessage bounds the message of a refusal sent to the agent.
const maxRefusalMessage = 4 << 10

// auditFailed answers a request that cannot go on because its audit record
// is not durable. Nothing has run. trail, when set, gets a best-effort
// result record so the log says how the request ended if it can.
func (s *Server) auditFailed(conn *net.UnixConn, log *slog.Logger, id string, trail *audit.Trail, err error) {
	log.Error("audit log unavailable; request not run", "err", err)
	resp := &proto.Response{ID: id, Status: proto.StatusError,
		Message: "audit log unavailable: " + err.Error() + "; nothing was run"}
	if trail != nil {
		_ = trail.Finished(context.Background(), resp, nil)
	}
	s.respond(conn, resp)
}

func (s *Server) timeoutMessage(execCtx context.Context) string {
	if execCtx.Err() != nil {
		return fmt.Sprintf("the daemon is shutting down: the command was still running after shutdown_timeout (%s), so it was sent SIGTERM and, %s later, SIGKILL", s.cfg.ShutdownTimeout, s.cfg.KillGrace)
	}
	return fmt.Sprintf("command_timeout (%s) reached: the pipeline was sent SIGTERM and, %s later, SIGKILL", s.cfg.CommandTimeout, s.cfg.KillGrace)
}

func response(id string, res *runner.Result) *proto.Response {
	resp := &proto.Response{ID: id, Status: proto.StatusOK, Stages: make([]proto.Stage, len(res.Stages)),
		Stdout: res.Stdout, StdoutTruncated: res.StdoutTruncated}
	for i, st := range res.Stages {
		resp.Stages[i] = proto.Stage{ExitCode: st.ExitCode, Stderr: st.Stderr, StderrTruncated: st.StderrTruncated}
	}
	return resp
}

// maxSurvivorsShown bounds the processes a response message names.
const maxSurvivorsShown = 16

// survivorsMessage tells the agent which processes its pipeline left behind
// and that they were killed. Executable paths are quoted with Go escapes, so
// no byte of a file name reaches a terminal raw.
func survivorsMessage(sv []runner.Survivor) string {
	var b strings.Builder
	fmt.Fprintf(&b, "the pipeline exited but left %d process(es) running in its cgroup; they were killed:", len(sv))
	for i, p := range sv {
		if i == maxSurvivorsShown {
			fmt.Fprintf(&b, " and %d more", len(sv)-i)
			break
		}
		fmt.Fprintf(&b, " pid %d %s", p.PID, strconv.QuoteToASCII(p.Exe))
		if i < len(sv)-1 && i < maxSurvivorsShown-1 {
			b.WriteByte(',')
		}
	}
	return b.String()
}

func exitCodes(res *runner.Result) []int {
	codes := make([]int, len(res.Stages))
	for i, st := range res.Stages {
		codes[i] = st.ExitCode
	}
	return codes
}

// decide applies the rules and, when they do not settle it, asks the
// approver until approval_timeout, the client hanging up, or shutdown.
func (s *Server) decide(ctx context.Context, conn *net.UnixConn, p *plan) approval.Decision {
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
	switch rd := s.rules.Decide(q); rd.Action {
	case rules.Allow:
		return approval.Decision{Verdict: approval.Allow, By: rd.Rule}
	case rules.Deny:
		return approval.Decision{Verdict: approval.Deny, By: rd.Rule, Message: rd.Reason}
	default:
		// Why no rule settled it, including allow rules passed over, for
		// whoever wonders why a rule did not apply.
		s.log.Info("rules ask a human", "id", p.req.ID, "reason", rd.Reason)
	}

	deadline := s.now().Add(s.cfg.ApprovalTimeout)
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	actx, cancelTimeout := context.WithDeadline(actx, deadline)
	defer cancelTimeout()
	stopWatch := watchHangup(conn, cancel)
	defer stopWatch()

	d, err := s.approver.Ask(actx, &approval.Pending{
		Request: p.req, Peer: p.peer, Programs: p.programs, RunAs: p.target.Name,
		Cwd: p.dir, CwdChain: p.dirChain, CwdWritable: p.dirWritable,
		Received: p.received, Deadline: deadline,
	})
	switch {
	case err == nil:
		return d
	case actx.Err() == nil:
		return approval.Decision{Verdict: approval.Failed, By: approval.ByApprover,
			Message: "approval failed, so the request was not run: " + err.Error()}
	}
	// The wait ended: the decision is the one the broker told the consoles.
	d = approval.Unanswered(actx)
	switch d.Verdict {
	case approval.Timeout:
		d.Message = fmt.Sprintf("nobody approved the request within approval_timeout (%s); it was not run", s.cfg.ApprovalTimeout)
	case approval.Failed:
		d.Message = "the daemon is shutting down; the request was not run"
	}
	return d
}

// watchHangup cancels with approval.ErrWithdrawn when the client goes away. A client
// has nothing more to send after its request line, so the watch reads until
// EOF. EOF alone is not enough: a client may half-close its sending side and
// still wait for the answer, so after EOF the watch polls for POLLHUP, which
// a Unix stream socket reports only once the peer has closed both ways. The
// returned func stops the watch.
func watchHangup(conn *net.UnixConn, cancel context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(done)
		var b [512]byte
		for {
			_, err := conn.Read(b[:])
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return // stopped
			}
			if errors.Is(err, io.EOF) {
				if waitPeerClosed(conn, stopped) {
					cancel(approval.ErrWithdrawn)
				}
				return
			}
			if err != nil {
				cancel(approval.ErrWithdrawn)
				return
			}
		}
	}()
	return func() {
		close(stopped)
		_ = conn.SetReadDeadline(time.Unix(1, 0))
		<-done
		_ = conn.SetReadDeadline(time.Time{})
	}
}

// waitPeerClosed polls conn until its peer has fully closed (true) or stop
// is closed (false).
func waitPeerClosed(conn *net.UnixConn, stop <-chan struct{}) bool {
	raw, err := conn.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	_ = raw.Control(func(fd uintptr) {
		// No events requested: POLLHUP and POLLERR are always reported, and
		// asking for POLLIN would wake at once forever after EOF.
		fds := []unix.PollFd{{Fd: int32(fd)}}
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := unix.Poll(fds, 100)
			if err != nil && !errors.Is(err, unix.EINTR) {
				closed = true
				return
			}
			if n > 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0 {
				closed = true
				return
			}
		}
	})
	return closed
}

func (s *Server) respond(conn *net.UnixConn, resp *proto.Response) {
	// A client that stops reading must not pin a connection slot forever.
	_ = conn.SetWriteDeadline(time.Now().Add(s.cfg.ReadTimeout + time.Duration(len(resp.Stdout))*time.Microsecond))
	if err := proto.WriteResponse(conn, resp); err != nil {
		s.log.Warn("could not deliver response", "id", resp.ID, "status", resp.Status, "err", err)
	}
}

// Version is the daemon's version: set at link time by the Makefile, else
// from the module's build information.
func Version() string {
	if version != "" {
		return version
	}
	return buildVersion()
}

// version is set with -ldflags "-X .../internal/daemon.version=..." by `make build`.
var version string
