package daemon

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	sd "github.com/coreos/go-systemd/v22/daemon"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/internal/notify"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"golang.org/x/sys/unix"
)

// Run is the whole daemon: it listens (or takes systemd's socket), tells
// systemd it is ready, keeps the watchdog fed, serves until ctx is
// cancelled, and shuts down as Server.Serve describes. SIGHUP reloads,
// except with opts.Foreground (agent-sudod --tty): there it means the
// console's terminal hung up, and stops the daemon (ErrTerminalHungUp), as
// does a Foreground that returns an error wrapping ErrTerminalHungUp.
//
// The audit log shows each run: a daemon record when the daemon starts
// serving, and one when Run returns after the log was opened, with the
// reason it stopped (see stopReason); a record that cannot be written is
// logged, and does not change what Run returns.
func Run(ctx context.Context, cfg *config.Config, opts Options) (err error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// SIGHUP is caught from the start: its default action would kill the
	// daemon. It is acted on once the daemon is ready.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	// The daemon's own host name, the same for consoles (the approver
	// hello) and for the audit records (daemon_host).
	host, err := os.Hostname()
	if err != nil {
		log.Warn("cannot read the host name; consoles will not be told it and audit records will not carry it", "err", err)
		host = ""
	}
	var ownAudit *audit.Log
	if opts.Audit == nil {
		alog, err := audit.Open(cfg.AuditLog, audit.Options{EnvValues: cfg.AuditEnvValues, Stdin: cfg.AuditStdin, Journal: audit.SystemJournal(), Logger: log, DaemonHost: host})
		if err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		defer alog.Close()
		opts.Audit, ownAudit = alog, alog
	}
	// instance names this run of the daemon to consoles, which never send
	// a decision to another instance than the one that showed the request,
	// and in its daemon records.
	instance := rand.Text()
	run := audit.DaemonSection{Version: Version(), PID: os.Getpid(), Config: cfg.Source, Instance: instance}
	// Registered after the log's Close, so it runs before it, and after
	// everything below has ended: the stop is the run's last record. ctx
	// is by then the daemon's own context, below, with its cause.
	defer func() { recordStop(ctx, log, opts.Audit, run, err) }()
	broker := newBroker(cfg.SessionGrantTTL.Duration, opts.Now)
	if opts.Approver == nil {
		opts.Approver = broker
	}
	if opts.running == nil {
		opts.running = broker
	}
	srv, err := New(cfg, opts)
	if err != nil {
		return err
	}
	// What a killed daemon left running is ended, and recorded, before
	// anything is served (docs/execution.md, "One cgroup per pipeline").
	if err := srv.reapAbandoned(ctx, opts.Audit); err != nil {
		return err
	}
	// Notifiers end with the daemon: stop, below, kills those still
	// running, and Run returns only once they have ended.
	notifiers := notify.NewRunner(log)
	defer notifiers.Wait()
	gid, err := lookupGID(cfg.SocketGroup)
	if err != nil {
		return fmt.Errorf("socket_group: %w", err)
	}
	// Both sockets from systemd (agent-sudo.socket and
	// agent-sudo-approver.socket), or of our own.
	socks, err := listenBoth(ctx, cfg.Socket, int(gid), 0o660, cfg.ApproverSocket)
	if err != nil {
		return err
	}
	aln := socks.Approver
	ctx, stopCause := context.WithCancelCause(ctx)
	stop := func() { stopCause(nil) }
	defer stop()
	approvers := &approverServer{channel: &approverChannel{Broker: broker, Version: Version(), Host: host, Instance: instance, Log: log,
		Signatures: &approval.Signatures{Verifier: passkey.Store{Dir: cfg.Passkeys}, Now: opts.Now}}, log: log}
	broker.SetWaitingHook(func(sh *approval.Shown) { srv.notifyWaiting(ctx, notifiers, sh) })
	// Every goroutine Run starts ends with ctx, and Run returns only once
	// they all have.
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	wg.Go(func() { approvers.serve(ctx, aln) })

	ln, activated := socks.Agent, socks.AgentActivated
	log.Info("listening", "socket", ln.Addr().String(), "socket_activated", activated,
		"approver_socket", aln.Addr().String(), "approver_socket_activated", socks.ApproverActivated, "exec", cfg.Exec, "version", Version(),
		"host", host, "instance", instance)
	started := run
	started.Event = audit.DaemonStarted
	if _, err := opts.Audit.Daemon(ctx, started); err != nil {
		// Every request's own records still have to be written, and fail
		// closed when they cannot.
		log.Error("audit log: the daemon's start is not recorded", "err", err)
	}

	st := &status{socket: ln.Addr().String()}
	if _, err := sd.SdNotify(false, sd.SdNotifyReady+"\nSTATUS="+st.text(srv.Rules())); err != nil {
		log.Warn("sd_notify READY failed", "err", err)
	}
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				if opts.Foreground != nil {
					// agent-sudod --tty: the console's terminal hung up
					// (docs/security.md, "Approving at a console").
					log.Warn("SIGHUP: " + ErrTerminalHungUp.Error())
					stopCause(ErrTerminalHungUp)
					return
				}
				onHangup(ctx, log, ownAudit, srv, broker, opts.Reload, st)
			}
		}
	})
	wg.Go(func() { feedWatchdog(ctx, log) })

	var foregroundDone chan struct{}
	if opts.Foreground != nil {
		// The foreground approver (agent-sudod --tty) talks to the broker
		// over the approver socket like any console; when the human quits
		// it, the daemon stops.
		foregroundDone = make(chan struct{})
		go func() {
			defer close(foregroundDone)
			err := opts.Foreground(ctx, cfg.ApproverSocket)
			if err != nil {
				log.Error("foreground approver stopped", "err", err)
			}
			// The requests still waiting are told who stopped the daemon.
			if errors.Is(err, ErrTerminalHungUp) {
				stopCause(ErrTerminalHungUp)
			}
			stopCause(ErrStoppedAtTerminal)
		}()
	}

	err = srv.Serve(ctx, ln)
	_, _ = sd.SdNotify(false, sd.SdNotifyStopping)
	if foregroundDone != nil {
		// The console owns the terminal until it returns: the daemon
		// exits only once it has restored it.
		stop()
		select {
		case <-foregroundDone:
		default:
			log.Info("waiting for the console on this terminal to end")
			<-foregroundDone
		}
	}
	// Why: the signal, the console on the terminal was quit, the terminal
	// hung up, or the error.
	log.Info("stopped", "why", stopReason(ctx, err))
	return err
}

// stopRecordTimeout bounds the write of the daemon's stop record: the
// shutdown must not wait on a log that cannot be written.
const stopRecordTimeout = 5 * time.Second

// recordStop writes the daemon record of a stop of run to alog, saying why
// (stopReason of runErr and ctx), within stopRecordTimeout. A record that
// cannot be written is logged: the daemon stops all the same.
func recordStop(ctx context.Context, log *slog.Logger, alog *audit.Log, run audit.DaemonSection, runErr error) {
	run.Event, run.Reason = audit.DaemonStopped, stopReason(ctx, runErr)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopRecordTimeout)
	defer cancel()
	if _, err := alog.Daemon(wctx, run); err != nil {
		log.Error("audit log: the daemon's stop is not recorded", "why", run.Reason, "err", err)
	}
}

// stopReason says why the daemon stopped: the error Run returns, else the
// cause with which its context ended: the signal (signal.NotifyContext:
// "terminated signal received" for SIGTERM), ErrStoppedAtTerminal or
// ErrTerminalHungUp; "stopped by its caller" when it was cancelled without
// a cause.
func stopReason(ctx context.Context, runErr error) string {
	if runErr != nil {
		return "error: " + runErr.Error()
	}
	// Not errors.Is: signal.NotifyContext's cause is context.Canceled to
	// errors.Is, and says which signal.
	cause := context.Cause(ctx)
	if cause == nil || cause == context.Canceled {
		return "stopped by its caller"
	}
	return cause.Error()
}

// feedWatchdog pings systemd's watchdog at half its interval while the
// daemon runs; it does nothing when the watchdog is not enabled.
func feedWatchdog(ctx context.Context, log *slog.Logger) {
	interval, err := sd.SdWatchdogEnabled(false)
	if err != nil || interval <= 0 {
		return
	}
	t := time.NewTicker(interval / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := sd.SdNotify(false, sd.SdNotifyWatchdog); err != nil {
				log.Warn("watchdog notification failed", "err", err)
			}
		}
	}
}

// onHangup does what SIGHUP asks: it has the audit log the daemon opened
// itself continue in a new file if its path no longer names the open one
// (logrotate's postrotate sends SIGHUP; the log also notices a rename by
// itself before its next write; a path that still names the open file
// changes nothing), and, when reload is set, reloads
// the configuration (see Server.Reload), telling systemd RELOADING=1, then
// READY=1 with the outcome in STATUS=.
func onHangup(ctx context.Context, log *slog.Logger, alog *audit.Log, srv *Server, broker *broker,
	reload func() (*config.Config, error), st *status) {
	if alog != nil {
		if err := alog.Reopen(ctx); err != nil {
			log.Error("audit log: reopen after SIGHUP failed", "err", err)
		} else {
			log.Info("audit log checked: it continues in the file its path names")
		}
	}
	if reload == nil {
		return
	}
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	// MONOTONIC_USEC is what Type=notify-reload (systemd 253) expects with
	// RELOADING=1; older systemd ignores it.
	if _, err := sd.SdNotify(false, fmt.Sprintf("%s\nMONOTONIC_USEC=%d", sd.SdNotifyReloading, ts.Nano()/1000)); err != nil {
		log.Warn("sd_notify RELOADING failed", "err", err)
	}
	next, err := reload()
	var restart []string
	if err == nil {
		restart, err = srv.Reload(next)
	}
	st.record(time.Now(), err)
	if err != nil {
		args := []any{"err", err}
		if hints := hint.Of(err); len(hints) > 0 {
			args = append(args, "hint", strings.Join(hints, "; "))
		}
		log.Error("reload refused: the configuration is invalid, so the one in force stays, unchanged", args...)
	} else {
		broker.SetGrantTTL(next.SessionGrantTTL.Duration)
		if len(restart) > 0 {
			log.Warn("reload: "+restartMessage(restart), "keys", restart)
		}
		log.Info("reloaded", "config", next.Source, "rules", len(next.Rules), "restart_needed", restart)
	}
	if _, err := sd.SdNotify(false, sd.SdNotifyReady+"\nSTATUS="+st.text(srv.Rules())); err != nil {
		log.Warn("sd_notify READY failed", "err", err)
	}
}

// status is what the daemon tells systemd it is doing (STATUS=, shown by
// systemctl status).
type status struct {
	socket string
	// reloads counts the reloads asked for (SIGHUP with reload set), failed
	// ones included; 0 before the first.
	reloads int
	// reloaded is when the last one was, and err its error.
	reloaded time.Time
	err      error
	// good is the number of the last reload that succeeded, 0 when the
	// configuration in force is the one read at start-up, and goodAt when.
	good   int
	goodAt time.Time
}

// record counts one reload, made at now, that ended with err.
func (st *status) record(now time.Time, err error) {
	st.reloads++
	st.reloaded, st.err = now, err
	if err == nil {
		st.good, st.goodAt = st.reloads, now
	}
}

// maxStatusError bounds the reload error quoted in the status line.
const maxStatusError = 200

// text is the status line with rules rules in force: the socket, the
// rules, and, once reloaded, the last reload by its number, when, and
// how it went; a failed one says why and which configuration is still in
// force, so that it never reads as the reload before it.
func (st *status) text(rules int) string {
	s := fmt.Sprintf("listening on %s; %d rules", st.socket, rules)
	if st.reloads == 0 {
		return s
	}
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	if st.err == nil {
		return s + fmt.Sprintf("; reload %d at %s ok", st.reloads, at(st.reloaded))
	}
	// One line of printable text: the notify protocol is line-based.
	msg := strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, st.err.Error())), " ")
	if len(msg) > maxStatusError {
		msg = strings.ToValidUTF8(msg[:maxStatusError], "") + "..."
	}
	inForce := "the configuration read at start-up"
	if st.good > 0 {
		inForce = fmt.Sprintf("the configuration of reload %d (at %s)", st.good, at(st.goodAt))
	}
	return s + fmt.Sprintf("; reload %d failed at %s: %s; running with %s", st.reloads, at(st.reloaded), msg, inForce)
}
