package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"

	"github.com/agent-sudo/agent-sudo/internal/approval"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/config"
)

// Run is the whole daemon: it listens (or takes systemd's socket), tells
// systemd it is ready, keeps the watchdog fed, serves until ctx is
// cancelled, and shuts down as Server.Serve describes.
func Run(ctx context.Context, cfg *config.Config, opts Options) error {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Audit == nil {
		alog, err := audit.Open(cfg.AuditLog, audit.Options{EnvValues: cfg.AuditEnvValues, Stdin: cfg.AuditStdin, Journal: audit.SystemJournal(), Logger: log})
		if err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		defer alog.Close()
		opts.Audit = alog
		// logrotate's postrotate sends SIGHUP; the log also notices a
		// rename by itself before its next write.
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		hupCtx := ctx
		go func() {
			for {
				select {
				case <-hupCtx.Done():
					return
				case <-hup:
					if err := alog.Reopen(hupCtx); err != nil {
						log.Error("audit log: reopen after SIGHUP failed", "err", err)
					} else {
						log.Info("audit log reopened")
					}
				}
			}
		}()
	}
	broker := approval.NewBroker(cfg.SessionGrantTTL.Duration, opts.Now)
	if opts.Approver == nil {
		opts.Approver = broker
	}
	srv, err := New(cfg, opts)
	if err != nil {
		return err
	}
	gid, err := LookupGID(cfg.SocketGroup)
	if err != nil {
		return fmt.Errorf("socket_group: %w", err)
	}
	// The approver socket comes first: a request must never wait on a
	// channel no human can reach.
	aln, err := listenOwn(ctx, cfg.ApproverSocket, 0, 0o600)
	if err != nil {
		return fmt.Errorf("approver socket: %w", err)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	approvers := &approverServer{channel: &approval.Channel{Broker: broker, Version: Version(), Log: log}, log: log}
	approversDone := make(chan struct{})
	go func() {
		defer close(approversDone)
		approvers.serve(ctx, aln)
	}()
	defer func() { stop(); <-approversDone }()

	ln, activated, err := Listen(ctx, cfg.Socket, int(gid), 0o660)
	if err != nil {
		return err
	}
	log.Info("listening", "socket", ln.Addr().String(), "socket_activated", activated, "exec", cfg.Exec, "version", Version())

	if _, err := sd.SdNotify(false, sd.SdNotifyReady); err != nil {
		log.Warn("sd_notify READY failed", "err", err)
	}
	wctx, stopWatchdog := context.WithCancel(ctx)
	defer stopWatchdog()
	go feedWatchdog(wctx, log)

	var foregroundDone chan struct{}
	if opts.Foreground != nil {
		// The foreground approver (agent-sudod --tty) talks to the broker
		// over the approver socket like any console; when the human quits
		// it, the daemon stops.
		foregroundDone = make(chan struct{})
		go func() {
			defer close(foregroundDone)
			if err := opts.Foreground(ctx, cfg.ApproverSocket); err != nil {
				log.Error("foreground approver stopped", "err", err)
			}
			stop()
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
	log.Info("stopped")
	return err
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
