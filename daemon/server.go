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
	"sync/atomic"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/notify"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/internal/procinfo"
	"github.com/agent-sudo/agent-sudo/internal/rules"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
	"golang.org/x/sys/unix"
)

// Server answers agent requests on a listener. Create it with New.
type Server struct {
	// pol is the policy requests are served under; Reload replaces it, and
	// each request takes it once (see doc.go, "Reloading").
	pol      atomic.Pointer[policy]
	reloadMu sync.Mutex // one reload at a time
	approver approval.Approver
	audit    auditLog
	exec     func(context.Context, runner.Spec) (*runner.Result, error)
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
	// running lists the commands running, for consoles to watch and stop;
	// nil lists nothing.
	running *approval.Broker
	// host is the daemon's host name for the console (hostname), read
	// once: the same for every request, as in the audit records.
	host string
	// walks bounds the /proc ancestry walks under way (see describePeer).
	walks chan struct{}
	// proc reads peers' ancestry and containers, with the daemon's own
	// namespaces read once.
	proc procinfo.Proc

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
	// sockets listen, stops the daemon when it returns, and, when the
	// daemon stops first, cancels ctx and returns only after Foreground
	// has returned (it restores the terminal).
	Foreground func(ctx context.Context, approverSocket string) error
	// Exec runs a pipeline once its exec record is durable; nil means
	// runner.Run. Tests replace it to see what would run without running it.
	Exec func(ctx context.Context, spec runner.Spec) (*runner.Result, error)
	// Reload, when set, loads the configuration again exactly as at start
	// (the same file, the same command-line overrides) and validates it;
	// Run calls it on SIGHUP and applies the result with Server.Reload.
	// Nil: SIGHUP only reopens the audit log.
	Reload func() (*config.Config, error)
	// Running, when set, lists every command while it runs, so that the
	// consoles of its approver channel can watch it, read the end of its
	// output and stop it; nil lists nothing. Run sets it to its broker.
	Running *approval.Broker
}

// auditLog is where a Server records requests: an *audit.Log, through
// auditOf. In-package tests make its writes fail.
type auditLog interface {
	Refused(ctx context.Context, r audit.Refusal) error
	Received(ctx context.Context, req *proto.Request, peer peercred.Creds) (auditTrail, error)
}

// auditTrail is an *audit.Trail: the records of one accepted request after
// its request record.
type auditTrail interface {
	Decided(ctx context.Context, d approval.Decision) error
	Started(ctx context.Context, spec runner.Spec) error
	Finished(ctx context.Context, resp *proto.Response, res *runner.Result) error
	Stopped(by string)
}

// auditOf is an *audit.Log as an auditLog.
type auditOf struct{ *audit.Log }

// Received is audit.Log.Received; its trail is nil on error.
func (a auditOf) Received(ctx context.Context, req *proto.Request, peer peercred.Creds) (auditTrail, error) {
	t, err := a.Log.Received(ctx, req, peer)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// CheckConfig builds, from a validated configuration, everything the daemon
// builds from it at start without touching sockets or the audit log (the rule
// engine with its user and group names resolved, the environment policy, the
// access lists), and returns the first error the daemon would stop on, or
// the rule linter's warnings. agent-sudod --check-config reports them.
func CheckConfig(cfg *config.Config) ([]rules.Warning, error) {
	if _, err := build(cfg); err != nil {
		return nil, err
	}
	return cfg.Lint(), nil
}

// policy is what a request is decided and run under: the configuration and
// what is built from it. It is never changed once built; a reload builds a
// new one.
type policy struct {
	cfg   *config.Config
	rules *rules.Engine
	env   *runner.EnvPolicy
	auth  *authorizer
	// notify is the notifiers run when a request starts waiting for a
	// human.
	notify *notify.Set
}

// build makes the policy of a validated configuration.
func build(cfg *config.Config) (*policy, error) {
	engine, err := cfg.Engine()
	if err != nil {
		return nil, err
	}
	env, err := cfg.EnvPolicy()
	if err != nil {
		return nil, err
	}
	auth, err := newAuthorizer(cfg)
	if err != nil {
		return nil, err
	}
	ns, err := notify.Prepare(cfg.Notify, cfg.NotifyUser, cfg.NotifyTimeout.Duration, cfg.SecurePath)
	if err != nil {
		return nil, err
	}
	return &policy{cfg: cfg, rules: engine, env: env, auth: auth, notify: ns}, nil
}

// policy returns the policy in force now.
func (s *Server) policy() *policy { return s.pol.Load() }

// notifyWaiting starts, on r, the notifiers of the policy in force now for
// sh, a request that has just started waiting for a human; it returns at
// once. ctx ends the notifiers still running.
func (s *Server) notifyWaiting(ctx context.Context, r *notify.Runner, sh *approval.Shown) {
	r.Start(ctx, s.policy().notify, notify.Values{
		ID: sh.ID, Session: sh.Session, Host: sh.Host, Reason: sh.Reason,
		User: sh.Peer.User, UID: sh.Peer.UID, RunAs: sh.RunAs, Pipeline: sh.Pipeline,
	})
}

// New builds a Server from a validated configuration. It logs the rule
// linter's warnings.
func New(cfg *config.Config, opts Options) (*Server, error) {
	pol, err := build(cfg)
	if err != nil {
		return nil, err
	}
	if opts.Audit == nil {
		return nil, errors.New("no audit log: the daemon does not run commands it cannot record")
	}
	s := &Server{
		approver: opts.Approver, audit: auditOf{opts.Audit}, exec: opts.Exec,
		log: opts.Logger, now: opts.Now, sshAuthSock: opts.SSHAuthSock, running: opts.Running,
		replay: newReplayCache(),
		limits: newConnLimits(cfg.MaxConnections, cfg.RootConnections, cfg.MaxConnectionsPerUser),
		rates:  newRateLimits(cfg.MaxRequestsPerMinute),
		logs:   newLogLimiter(logEvery),
		walks:  make(chan struct{}, maxWalks),
		proc:   procinfo.Proc{Own: procinfo.Proc{}.OwnNamespaces()},
		host:   hostname(),
	}
	s.pol.Store(pol)
	if s.approver == nil {
		s.approver = approval.Nobody{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.logLint(cfg)
	if s.now == nil {
		s.now = time.Now
	}
	if s.exec == nil {
		s.exec = runner.Run
	}
	if err := s.replay.remember(opts.Audit.Path(), s.now(), cfg.MaxClockSkew.Duration, cfg.ApprovalTimeout.Duration); err != nil {
		return nil, err
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

// logLint logs the rule linter's warnings about cfg, at start and on each
// reload.
func (s *Server) logLint(cfg *config.Config) {
	for _, w := range cfg.Lint() {
		msg := "rule linter: this allow rule may give root away"
		if w.Rule == config.NotifyUserWarning {
			msg = "notify_user may use the agent socket: an agent can make its notifications show anything"
		}
		s.log.Warn(msg, "rule", w.Rule, "warning", w.Message)
	}
}

// Serve accepts connections on ln until ctx is cancelled, then shuts down:
// it stops accepting, ends every request still waiting for approval with an
// error (nothing runs), gives running commands up to shutdown_timeout to
// finish before they are killed, answers every connection, and returns.
// ctx is the base of every request. Serve closes ln. It also returns, with
// the error, when ln fails to accept; every goroutine it started has ended
// when it returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// Commands outlive ctx by up to shutdown_timeout, so they get their own
	// context that is cancelled only after that grace; the cause of that
	// cancellation names the grace given (see timeoutMessage).
	execCtx, stopExec := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopExec(nil)
	// The shutdown watcher closes ln when ctx ends, and ends the commands
	// shutdown_timeout later; it stops when Serve returns, whatever the
	// reason, and Serve waits for it.
	done, watcherDone := make(chan struct{}), make(chan struct{})
	defer func() {
		close(done)
		<-watcherDone
	}()
	go func() {
		defer close(watcherDone)
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		_ = ln.Close()
		grace := s.policy().cfg.ShutdownTimeout
		t := time.NewTimer(grace.Duration)
		defer t.Stop()
		select {
		case <-t.C:
			stopExec(shutdownExpired{grace})
		case <-done:
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
		// are per user, counting every uid of the user namespaces a user
		// owns as that user (peercred.Creds.Controller). A peer whose
		// credentials cannot be read is handled (and refused) as an
		// unknown non-root uid.
		peer, perr := peercred.Get(conn)
		uid := peer.Controller
		if perr != nil {
			uid = unknownUID
		}
		if ok, after := s.rates.allow(uid, time.Now()); !ok {
			s.refuseConn(conn, uid, "rate", fmt.Sprintf(
				"rate limited: uid %d opened more than %d connections in the last minute (max_requests_per_minute); try again in %s",
				uid, s.rates.perMinute, (after+time.Second-1).Truncate(time.Second)))
			continue
		}
		// A connection that finds no free slot is queued for one, in
		// the order of accept, and told "busy" when the queue is full or
		// has not moved for busyWait (see doc.go, "Connection limits").
		verdict, w, msg := s.limits.admit(uid)
		if verdict == refused {
			s.refuseConn(conn, uid, "busy", msg)
			continue
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			// The requester is pinned first thing, before it can
			// likely exec or pass the socket on; describePeer compares
			// (see procinfo's package doc). Not in the accept loop:
			// pinning stats the peer's program file, which a FUSE
			// mount of the agent's could hold up forever.
			var pin *procinfo.Pin
			if perr == nil {
				pin = procinfo.PinPeer(conn, peer.PID)
			}
			defer pin.Close()
			if verdict == mustWait && !s.limits.wait(ctx, w, busyWait) {
				s.refuseConn(conn, uid, "busy", s.limits.busyMessage(uid))
				return
			}
			defer s.limits.release(uid)
			s.handle(ctx, execCtx, conn, peer, pin, perr)
		}()
	}
	_ = ln.Close()
	s.conns.Wait()
	return acceptErr
}

// unknownUID stands for a peer whose credentials could not be read, for the
// connection limits only; such a peer is always refused.
const unknownUID = 1<<32 - 1

// busyWait is how long a queued connection waits while no slot is handed
// to any waiter before it is told "busy".
const busyWait = time.Second

// logEvery is how often each kind of refusal is logged per uid at most.
const logEvery = 10 * time.Second

// refuseConn answers a connection refused before it is read (busy, rate
// limited) and closes it. Such connections are not audited, since no
// request was read; the log gets at most one line per kind and uid per
// logEvery, saying how many were held back.
func (s *Server) refuseConn(conn *net.UnixConn, uid uint32, kind, msg string) {
	defer conn.Close()
	var line bytes.Buffer
	_ = proto.WriteResponse(&line, &proto.Response{Status: proto.StatusError, Message: msg, Version: Version()})
	_ = writeOnce(conn, line.Bytes()) // a peer that is gone needs no answer
	s.warnLimited(s.log.With("peer_uid", uid), kind, uid, "refused connection", "reason", msg)
}

// writeOnce makes one non-blocking write of b to conn, and fails unless all
// of b was written. A refusal is a short line on a connection nothing has
// been written to, which the socket takes whole at once; one attempt
// without a deadline can neither stall the accept loop nor fail because the
// daemon itself was not scheduled before a deadline passed. (With a 1 s
// write deadline, a daemon overloaded by 200 clients sometimes found the
// deadline gone before it wrote; it then closed the connection with the
// request unread, and the client got a reset instead of "busy: ...".)
func writeOnce(conn *net.UnixConn, b []byte) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var (
		n    int
		werr error
	)
	if err := raw.Write(func(fd uintptr) bool {
		n, werr = unix.Write(int(fd), b)
		return true // one attempt: never wait for the socket
	}); err != nil {
		return err
	}
	if werr != nil {
		return werr
	}
	if n < len(b) {
		return io.ErrShortWrite
	}
	return nil
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

// hostname is the daemon's host name for the console, beside the host the
// agent claims; "" when the kernel's cannot be read.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
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

	d := s.decide(ctx, conn, p)
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
	if err := trail.Started(execCtx, spec); err != nil {
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
	// The command has run: a result that cannot be recorded is logged, and
	// the client still gets its answer.
	return ending{resp: resp, trail: trail, res: res, log: log, level: slog.LevelInfo, msg: "result",
		args: []any{"status", resp.Status, "exit_codes", exitCodes(res), "duration", res.Ended.Sub(res.Started)}}
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
	if e.trail != nil && e.resp != nil {
		if err := e.trail.Finished(ctx, e.resp, e.res); err != nil {
			e.log.Error("audit: result not recorded", "err", err)
		}
	}
	if e.resp != nil {
		s.respond(conn, e.resp, pol.cfg.ReadTimeout.Duration)
	}
}

// maxLogPipeline bounds the pipeline written in the daemon's log; the audit
// log has it in full.
const maxLogPipeline = 4096

// readLine reads the request line of a connection accepted at accepted. A
// connection that sends no byte within cfg's first_byte_timeout is idle
// (true); read_timeout bounds the whole line. The line is returned as read,
// also with an error when it was read but something else failed.
func readLine(cfg *config.Config, conn *net.UnixConn, accepted time.Time) (line []byte, idle bool, err error) {
	deadline := accepted.Add(cfg.ReadTimeout.Duration)
	first := accepted.Add(cfg.FirstByteTimeout.Duration)
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

// maxRefusalMessage bounds the message of a refusal sent to the agent.
const maxRefusalMessage = 4 << 10

// shutdownExpired is the cause with which Serve ends the commands still
// running grace after a shutdown began.
type shutdownExpired struct{ grace config.Duration }

func (e shutdownExpired) Error() string {
	return fmt.Sprintf("shutdown_timeout (%s) expired", e.grace)
}

// stoppedByConsole is the cause with which a console's stop ends a
// command (approval.Broker.Stop): by names the console.
type stoppedByConsole struct{ by string }

func (e stoppedByConsole) Error() string { return "stopped by " + e.by }

// stopperOf returns the console that stopped the command run with ctx, or
// "" when none did.
func stopperOf(ctx context.Context) string {
	var stop stoppedByConsole
	if errors.As(context.Cause(ctx), &stop) {
		return stop.by
	}
	return ""
}

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
		Received: p.received, Deadline: deadline, DaemonHost: s.host,
	}
	if p.req.Progress {
		pending.Waiting = func(consoles int) {
			s.progress(conn, pol, proto.Progress{Progress: proto.ProgressWaiting, ID: p.req.ID, Consoles: consoles, Deadline: deadline.UTC()})
		}
	}
	d, err := s.approver.Ask(actx, pending)
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
		d.Message = fmt.Sprintf("nobody approved the request within approval_timeout (%s); it was not run", pol.cfg.ApprovalTimeout)
	case approval.Failed:
		d.Message = shutdownMessage(actx)
	}
	return d
}

// ErrStoppedAtTerminal is the cause with which Run stops the daemon when
// its foreground console (agent-sudod --tty) ends: the human at the
// daemon's terminal quit it.
var ErrStoppedAtTerminal = errors.New("the console on agent-sudod's terminal (agent-sudod --tty) was quit, which stops the daemon")

// ErrTerminalHungUp is the cause with which Run stops the daemon when the
// terminal of its foreground console (agent-sudod --tty) hangs up: SIGHUP,
// or the end of the terminal's input. Nobody is left to approve, and rules
// and session grants must not go on running commands unwatched.
var ErrTerminalHungUp = errors.New("the terminal of agent-sudod --tty hung up, which stops the daemon")

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

// Version is the daemon's version: set at link time by the Makefile, else
// from the module's build information.
func Version() string {
	if version != "" {
		return version
	}
	return moduleVersion()
}

// moduleVersion is buildVersion, read once: every answer carries the
// version, and the build information is parsed anew at each read.
var moduleVersion = sync.OnceValue(buildVersion)

// version is set with -ldflags "-X .../daemon.version=..." by `make build`.
var version string
