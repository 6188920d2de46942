package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/internal/notify"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/internal/procinfo"
	"github.com/agent-sudo/agent-sudo/internal/rules"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
)

// Server answers agent requests on a listener. Create it with New.
type Server struct {
	// pol is the policy requests are served under; Reload replaces it, and
	// each request takes it once (docs/daemon.md, "Reloading").
	pol      atomic.Pointer[policy]
	reloadMu sync.Mutex // one reload at a time
	approver approval.Approver
	audit    auditLog
	exec     func(context.Context, runner.Spec) (*runner.Result, error)
	log      *slog.Logger
	now      func() time.Time
	replay   *replayCache
	// unfinished are the requests the audit log showed allowed and never
	// finished when the Server was made (audit.StartScan), for Run to end
	// (reapAbandoned) before it serves.
	unfinished []audit.Unfinished
	// limits shares the connection slots; rates limits connections per
	// uid; logs keeps refusals from flooding the log (docs/daemon.md).
	limits *connLimits
	rates  *rateLimits
	logs   *logLimiter
	// sshAuthSock is the approving human's agent socket, handed only to
	// unprivileged forward_agent requests.
	sshAuthSock string
	// cgroups makes each pipeline's cgroup; nil only with cgroup =
	// "best-effort" on a system without a usable cgroup v2 hierarchy.
	cgroups *runner.Cgroups
	// sudo is, with exec = "sudo", sudo_path and the implementation found
	// there (sudo or sudo-rs), which decides how the approved environment
	// is passed; nil with exec = "direct".
	sudo *runner.Sudo
	// running lists the commands running, for consoles to watch and stop;
	// nil lists nothing.
	running *broker
	// host is the daemon's host name for the console (hostname), read
	// once: the same for every request, as in the audit records.
	host string
	// walks bounds the /proc ancestry walks under way (see describePeer).
	walks chan struct{}
	// proc reads peers' ancestry and containers, with the daemon's own
	// namespaces read once.
	proc procinfo.Proc
	// hashes caches the SHA-256 of root-only programs, and targets the
	// target users' account data, each by what proves it unchanged
	// (docs/performance.md, "The program's hash and the target user,
	// cached").
	hashes  *runner.HashCache
	targets *runner.TargetCache

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
	// (agent-sudod --tty, whose Foreground starts agent-sudo approve as a
	// child: the daemon does not link the console). Run calls it with the approver socket once both
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
	// running, when set, lists every command while it runs, so that the
	// consoles of its approver channel can watch it, read the end of its
	// output and stop it; nil lists nothing. Run sets it to its broker.
	running *broker
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
// once. ctx ends the notifiers still running. With no notifier configured
// it does nothing: no values, no warnings are worked out per request.
func (s *Server) notifyWaiting(ctx context.Context, r *notify.Runner, sh *approval.Shown) {
	pol := s.policy()
	if pol.notify.Len() == 0 {
		return
	}
	r.Start(ctx, pol.notify, notifyValues(sh, pol.cfg.WebApproverURL))
}

// notifyValues are the notifiers' values for sh, a request that has just
// started waiting for a human, with webApprover the web approver's
// address: the request's fields, and the warnings its sheet names for a
// surface that shows a line or two (approval.Warnings, the sheet's
// Warnings without linking the whole sheet into the daemon).
func notifyValues(sh *approval.Shown, webApprover string) notify.Values {
	return notify.Values{Request: sh, WebApprover: webApprover, Warnings: approval.Warnings(sh, approval.Context{})}
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
		log: opts.Logger, now: opts.Now, sshAuthSock: opts.SSHAuthSock, running: opts.running,
		replay:  newReplayCache(),
		limits:  newConnLimits(cfg.MaxConnections, cfg.RootConnections, cfg.MaxConnectionsPerUser),
		rates:   newRateLimits(cfg.MaxRequestsPerMinute),
		logs:    newLogLimiter(logEvery),
		walks:   make(chan struct{}, maxWalks),
		proc:    procinfo.Proc{Own: procinfo.Proc{}.OwnNamespaces()},
		hashes:  runner.NewHashCache(0),
		targets: runner.NewTargetCache(),
		host:    hostname(),
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
	// One pass over the audit log at start: the ids that could still be
	// replayed, and the requests a stopped daemon left unfinished (Run
	// ends them, reapAbandoned). A log that cannot be read fails the
	// start: the daemon cannot tell a replay from a request then.
	now := s.now()
	since := rememberSince(now, cfg.MaxClockSkew.Duration, cfg.ApprovalTimeout.Duration)
	recent, unfinished, err := audit.StartScan(context.Background(), opts.Audit.Path(), since)
	if err != nil {
		return nil, fmt.Errorf("read the audit log's request ids of the last %s, to refuse replays of them, and its unfinished requests: %w", now.Sub(since), err)
	}
	s.replay.remember(recent, cfg.MaxClockSkew.Duration, cfg.ApprovalTimeout.Duration)
	s.unfinished = unfinished
	if cfg.Exec == runner.ModeSudo {
		// Before any request: a sudo that would not pass the approved
		// environment to the command must not run one.
		sudo, err := runner.OpenSudo(context.Background(), cfg.SudoPath)
		if err != nil {
			return nil, fmt.Errorf("exec = %q: %w (set sudo_path to sudo 1.8.21 or newer or to sudo-rs 0.2.5 or newer, or exec = %q)",
				cfg.Exec, err, runner.ModeDirect)
		}
		impl, err := sudo.Impl(context.Background())
		if err != nil {
			return nil, fmt.Errorf("exec = %q: %w", cfg.Exec, err)
		}
		s.sudo = sudo
		s.log.Info("commands run through sudo", "sudo_path", cfg.SudoPath, "implementation", impl.String())
	}
	cg, err := runner.OpenCgroups()
	switch {
	case err == nil:
		s.cgroups = cg
		s.log.Info("each request runs in a cgroup of its own", "parent", cg.Parent())
	case cfg.Cgroup == config.CgroupBestEffort:
		s.log.Warn("no per-request cgroups (cgroup = \"best-effort\"): processes that leave a pipeline's process group will outlive their request", "err", err)
	default:
		return nil, hint.Wrap(fmt.Errorf("cgroup = %q: this system offers no cgroup for each request's processes: %w", cfg.Cgroup, err),
			fmt.Sprintf("set cgroup = %q to run without them, accepting that processes which leave the process group outlive command_timeout",
				config.CgroupBestEffort))
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

// hostname is the daemon's host name for the console, beside the host the
// agent claims; "" when the kernel's cannot be read.
func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return h
}
