// Command agent-sudod is the agent-sudo root daemon. See package daemon.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agent-sudo/agent-sudo/daemon"
	"github.com/agent-sudo/agent-sudo/daemon/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("agent-sudod", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", config.DefaultPath, "configuration file (TOML)")
	socket := fs.String("socket", "", "agent socket path (overrides the config key socket)")
	approverSocket := fs.String("approver-socket", "", "approver socket path (overrides the config key approver_socket)")
	auditLog := fs.String("audit-log", "", "audit log path (overrides the config key audit_log)")
	execMode := fs.String("exec", "", `how commands run: "sudo" or "direct" (overrides the config key exec)`)
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agent-sudod: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stderr, "agent-sudod", daemon.Version())
		return 0
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	cfg, err := config.Load(*cfgPath, explicit)
	if err != nil {
		fmt.Fprintf(stderr, "agent-sudod: %v\n", err)
		return 1
	}
	if *socket != "" {
		cfg.Socket = *socket
	}
	if *approverSocket != "" {
		cfg.ApproverSocket = *approverSocket
	}
	if *auditLog != "" {
		cfg.AuditLog = *auditLog
	}
	if *execMode != "" {
		cfg.Exec = config.ExecMode(*execMode)
	}
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(stderr, "agent-sudod: %v\n", err)
		return 1
	}
	log := daemon.NewLogger(stderr)
	opts := daemon.Options{Logger: log, SSHAuthSock: os.Getenv("SSH_AUTH_SOCK")}
	if err := daemon.Run(ctx, cfg, opts); err != nil {
		fmt.Fprintf(stderr, "agent-sudod: %v\n", err)
		return 1
	}
	return 0
}
