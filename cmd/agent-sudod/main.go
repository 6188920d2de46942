// Command agent-sudod is the agent-sudo root daemon. See package daemon.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agent-sudo/agent-sudo/daemon"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/desktopnotify"
	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
	"golang.org/x/sys/unix"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agent-sudod", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var src source
	fs.StringVar(&src.path, "config", config.DefaultPath, "configuration `FILE` (TOML)")
	fs.StringVar(&src.socket, "socket", "", "agent socket `PATH` (overrides the config key socket)")
	fs.StringVar(&src.approverSocket, "approver-socket", "", "approver socket `PATH` (overrides the config key approver_socket)")
	fs.StringVar(&src.auditLog, "audit-log", "", "audit log `PATH` (overrides the config key audit_log)")
	fs.StringVar(&src.exec, "exec", "", "how commands run, `MODE` \"sudo\" or \"direct\" (overrides the config key exec)")
	tty := fs.Bool("tty", false, "approve requests on this terminal (foreground mode), with the console agent-sudo approve, which must be beside agent-sudod; logs go to --log-file")
	desktopNotify := fs.String("desktop-notify", string(desktopnotify.Auto), "with --tty: `mode` of the desktop notification sent with the bell: auto, osc9, osc777 or off")
	logFile := fs.String("log-file", "", "write logs to `FILE` instead of the journal or stderr (default with --tty: agent-sudod.log beside the socket)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	checkConfig := fs.Bool("check-config", false, "load the configuration as at start, print the rule linter's warnings, and exit: 0 if it is valid, 1 (with the errors) if not")
	// Errors from Parse are reported once, in our words, below.
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if _, err := io.WriteString(stdout, usage(fs)); err != nil {
				fmt.Fprintf(stderr, "agent-sudod: write help: %v\n", err)
				return 1
			}
			return 0
		}
		fmt.Fprintf(stderr, "agent-sudod: %v; run 'agent-sudod --help' for usage\n", err)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agent-sudod: unexpected argument %q; run 'agent-sudod --help' for usage\n", fs.Arg(0))
		return 2
	}
	desktop, err := desktopnotify.Parse(*desktopNotify)
	if err != nil {
		fmt.Fprintf(stderr, "agent-sudod: --desktop-notify: %v; run 'agent-sudod --help' for usage\n", err)
		return 2
	}
	setDesktop := false
	fs.Visit(func(f *flag.Flag) { setDesktop = setDesktop || f.Name == "desktop-notify" })
	if setDesktop && !*tty {
		fmt.Fprintln(stderr, "agent-sudod: --desktop-notify needs --tty: only the console of --tty sends desktop notifications; run 'agent-sudod --help' for usage")
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, "agent-sudod", daemon.Version())
		return 0
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "config" })
	cfg, err := src.load(explicit)
	if err != nil {
		sayErr(stderr, err)
		if *checkConfig {
			return 1
		}
		return exitConfig
	}
	if *checkConfig {
		warnings, err := daemon.CheckConfig(cfg)
		if err != nil {
			sayErr(stderr, err)
			return 1
		}
		from := cfg.Source
		if from == "" {
			from = "no file at " + src.path + ": the built-in defaults"
		}
		for _, w := range warnings {
			fmt.Fprintf(stdout, "warning: %s\n", w)
		}
		fmt.Fprintf(stdout, "configuration OK (%s): %d rules, %d warnings\n", from, len(cfg.Rules), len(warnings))
		return 0
	}
	// A configuration the daemon cannot build its policy from stops it
	// here, with the status that tells systemd not to restart it; but a
	// user or group the user database does not know may be there once a
	// directory service (sssd, LDAP) is up at boot, so that one exits 1 and
	// systemd retries, up to the unit's start limit.
	if _, err := daemon.CheckConfig(cfg); err != nil {
		sayErr(stderr, err)
		var noUser user.UnknownUserError
		var noGroup user.UnknownGroupError
		if errors.As(err, &noUser) || errors.As(err, &noGroup) {
			return 1
		}
		return exitConfig
	}
	if *tty && *logFile == "" {
		// The console owns the terminal, so logs must go elsewhere.
		*logFile = filepath.Join(filepath.Dir(cfg.Socket), "agent-sudod.log")
	}
	log := daemon.NewLogger(stderr)
	if *logFile != "" {
		f, err := daemon.OpenLogFile(*logFile)
		if err != nil {
			sayErr(stderr, err)
			return 1
		}
		defer f.Close()
		log = slog.New(slog.NewTextHandler(f, nil))
	}
	opts := daemon.Options{Logger: log, SSHAuthSock: os.Getenv("SSH_AUTH_SOCK"), Reload: src.reloader(cfg, explicit)}
	if *tty {
		if !isTerminal(os.Stdin) || !isTerminal(os.Stdout) {
			fmt.Fprintln(stderr, "agent-sudod: --tty needs a terminal on stdin and stdout")
			return 2
		}
		exe, err := os.Executable()
		if err == nil {
			exe, err = filepath.EvalSymlinks(exe)
		}
		if err != nil {
			fmt.Fprintf(stderr, "agent-sudod: --tty: cannot find agent-sudod's own executable, beside which its console %s must be: %v\n", consoleName, err)
			return 1
		}
		prog, err := consoleProgram(exe)
		if err != nil {
			sayErr(stderr, err)
			return 1
		}
		fmt.Fprintf(stderr, "agent-sudod: approving on this terminal; logs in %s\n", *logFile)
		opts.Foreground = func(ctx context.Context, sock string) error {
			return runConsole(ctx, prog, sock, desktop, os.Getenv)
		}
	}
	if err := daemon.Run(ctx, cfg, opts); err != nil {
		sayErr(stderr, err)
		return 1
	}
	return 0
}

// exitConfig is the daemon's exit status when its configuration is invalid:
// EX_CONFIG of sysexits.h. agent-sudo.service names it in
// RestartPreventExitStatus, so that systemd does not start the daemon again
// and again on a file only a human can fix (docs/install.md, "When the
// daemon does not start"). --check-config keeps exiting 1.
const exitConfig = 78

// source is where the daemon's configuration comes from: the file, and the
// command-line flags that override some of its keys.
type source struct {
	path                                   string
	socket, approverSocket, auditLog, exec string
}

// load reads the configuration as the daemon uses it: the file (which must
// exist when explicit), then the command-line overrides, validated.
func (src *source) load(explicit bool) (*config.Config, error) {
	cfg, err := config.Load(src.path, explicit)
	if err != nil {
		return nil, err
	}
	if src.socket != "" {
		cfg.Socket = src.socket
	}
	if src.approverSocket != "" {
		cfg.ApproverSocket = src.approverSocket
	}
	if src.auditLog != "" {
		cfg.AuditLog = src.auditLog
	}
	if src.exec != "" {
		cfg.Exec = runner.Mode(src.exec)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// reloader is what a reload (SIGHUP) calls for a daemon that started with
// cfg, loaded with explicit: the same file with the same overrides. A
// daemon that started from a file reloads from that file only: if it has
// gone, the reload fails instead of falling back to the defaults.
func (src *source) reloader(cfg *config.Config, explicit bool) func() (*config.Config, error) {
	fromFile := explicit || cfg.Source != ""
	return func() (*config.Config, error) { return src.load(fromFile) }
}

// usage is agent-sudod's help, in the style of agent-sudo's: what it is,
// its flags, and its exit statuses.
func usage(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString(`usage: agent-sudod [flags]

agent-sudod is the agent-sudo root daemon. It listens on a Unix socket for
requests from agents (agent-sudo run, the sudo shim, the MCP server), asks a
human on the approver socket unless a rule decides, runs what was approved as
argv arrays with sudo (never through a shell), and records every request,
decision and result in a hash-chained audit log. systemd normally starts it
through agent-sudo.socket or agent-sudo-approver.socket, on the first
connection of an agent or a console; with --tty it runs in the foreground
and the human approves on this terminal, in the console agent-sudo approve,
which the daemon starts from its own directory (the agent-sudo installed or
built with it, never one found in PATH).

flags:
`)
	fs.VisitAll(func(f *flag.Flag) {
		arg, text := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "  --%s", f.Name)
		if arg != "" {
			fmt.Fprintf(&b, " %s", arg)
		}
		fmt.Fprintf(&b, "\n    \t%s", text)
		if f.DefValue != "" && f.DefValue != "false" {
			fmt.Fprintf(&b, " (default %q)", f.DefValue)
		}
		b.WriteString("\n")
	})
	b.WriteString(`
signals:
  SIGTERM, SIGINT  stop: running commands are stopped, their clients answered,
                   and the audit log closed
  SIGHUP           reload the configuration file (systemctl reload): rules,
                   access lists, env_allow and timeouts apply to requests
                   that arrive after it; an invalid file is refused and logged
                   and the configuration in force stays; keys that need a
                   restart are logged. Also reopens the audit log
                   (logrotate's postrotate sends it). With --tty it means
                   the terminal hung up, and stops the daemon, as SIGTERM
                   does; so does the end of the terminal's input.

exit status:
  0  stopped by a signal; or --help, --version, or --check-config with a
     valid configuration
  1  the daemon could not start or failed (with --tty: no agent-sudo beside
     agent-sudod, or one someone other than root can change); or
     --check-config found the configuration invalid
  78 the configuration is invalid (EX_CONFIG); agent-sudo.service does not
     restart the daemon on it
  2  usage error: a bad flag or argument, --tty without a terminal, or
     --desktop-notify without --tty;
     nothing was started
`)
	return b.String()
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// sayErr writes err to stderr after the program's name, then the advice it
// carries (package hint), each on a line of its own. Both embed text the
// daemon did not choose (a path, a key or value of the configuration, a
// socket's name from systemd), so every line of them is made safe for a
// terminal (termtext.Visible); the lines of a joined error stay lines.
func sayErr(stderr io.Writer, err error) {
	fmt.Fprintf(stderr, "agent-sudod: %s\n", visibleLines(err.Error()))
	for _, h := range hint.Of(err) {
		fmt.Fprintf(stderr, "agent-sudod: hint: %s\n", termtext.Visible(h))
	}
}

// visibleLines is termtext.Visible of each line of s, the lines kept.
func visibleLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = termtext.Visible(l)
	}
	return strings.Join(lines, "\n")
}
