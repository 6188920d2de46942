package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"unicode"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/console"
	"github.com/agent-sudo/agent-sudo/internal/web"
)

// Where approve connects unless told otherwise.
const (
	envApproverSocket     = "AGENT_SUDO_APPROVER_SOCKET"
	defaultApproverSocket = "/run/agent-sudo/approver.sock"
)

// approveDeps are the parts of the process approve uses besides the
// invocation; tests replace them.
type approveDeps struct {
	geteuid func() int
	// terminal reports whether stdin and stdout are both a terminal.
	terminal func(stdin io.Reader, stdout io.Writer) bool
	// dialSocket and dialCommand connect to an approver socket and
	// through a command (ssh).
	dialSocket  func(ctx context.Context, path string) (net.Conn, error)
	dialCommand func(ctx context.Context, argv []string) (net.Conn, error)
	run         func(ctx context.Context, daemons []console.Daemon, in io.Reader, out io.Writer, opts console.Options) error
	// runDaemonConsole runs the console of agent-sudod --tty
	// (--stops-daemon) for one approver socket.
	runDaemonConsole func(ctx context.Context, path string, in io.Reader, out io.Writer, opts console.Options) error
}

func realApproveDeps() approveDeps {
	return approveDeps{
		geteuid:     os.Geteuid,
		terminal:    isTerminal,
		dialSocket:  console.Dial,
		dialCommand: console.DialCommand,
		run:         console.RunDaemons,

		runDaemonConsole: console.DialAndRun,
	}
}

// isTerminal reports whether stdin and stdout are terminals.
func isTerminal(stdin io.Reader, stdout io.Writer) bool {
	for _, f := range []any{stdin, stdout} {
		file, ok := f.(*os.File)
		if !ok {
			return false
		}
		if _, err := unix.IoctlGetTermios(int(file.Fd()), unix.TCGETS); err != nil {
			return false
		}
	}
	return true
}

// approveOpts are approve's flags.
type approveOpts struct {
	sockets    []string
	ssh        []string
	sshOptions []string
	sshProgram string
	// desktop is --desktop-notify, parsed by console.ParseDesktopNotify.
	desktop string
	// defaultSocket is the approver socket when neither --approver-socket
	// nor --ssh is given.
	defaultSocket string
	// web holds the web approver's flags; web.addr set runs it instead
	// of the console.
	web webOpts
	// stopsDaemon is the hidden --stops-daemon (stopsDaemonUsage).
	stopsDaemon bool
}

// exitHungUp is the exit status of approve --stops-daemon when its
// terminal hung up: 128 + SIGHUP, as a shell reports a program the hang-up
// killed. agent-sudod (cmd/agent-sudod, consoleHungUp) reads it as the
// hang-up of its terminal.
const exitHungUp = 129

// stopsDaemonUsage documents the hidden --stops-daemon, which only
// agent-sudod passes: the help leaves it out (approveUsage's hidden).
const stopsDaemonUsage = "internal, for agent-sudod --tty, which starts approve on its own terminal: " +
	"quitting this console stops that daemon (the keys say so, and quitting with requests waiting asks first); " +
	"needs exactly one --approver-socket, no --ssh nor --web. " +
	"Exit status: 0 when the console was quit, 129 when the terminal hung up (its input ended or failed with EIO), " +
	"130 without a message when interrupted (agent-sudod stopping sends SIGTERM), otherwise as approve"

func approveFlags(inv *invocation) (*flag.FlagSet, *approveOpts) {
	fset := approveUsage().newFlagSet()
	o := &approveOpts{defaultSocket: inv.approverSocket()}
	fset.Func("approver-socket", "`path` of an agent-sudod's approver socket; repeat it for several daemons (default $"+envApproverSocket+", else "+defaultApproverSocket+", when no --ssh is given)", func(v string) error {
		if v == "" {
			return errors.New("the path is empty")
		}
		o.sockets = append(o.sockets, v)
		return nil
	})
	fset.Func("ssh", "`destination` of a remote agent-sudod, [user@]host or ssh://[user@]host[:port], reached with \"ssh -T DESTINATION agent-sudo approver-stdio\"; repeat it for several hosts", func(v string) error {
		if err := checkSSHDestination(v); err != nil {
			return err
		}
		o.ssh = append(o.ssh, v)
		return nil
	})
	fset.Func("ssh-option", "`option` passed to every ssh as -o OPTION (e.g. Port=2222, IdentityFile=/root/.ssh/approve); repeatable", func(v string) error {
		if v == "" || strings.ContainsAny(v, "\n\r\x00") {
			return errors.New("an ssh option must be one non-empty line")
		}
		o.sshOptions = append(o.sshOptions, v)
		return nil
	})
	fset.StringVar(&o.sshProgram, "ssh-program", "ssh", "the ssh `program` to run (a name looked up in PATH, or a path)")
	fset.StringVar(&o.desktop, "desktop-notify", string(console.DesktopAuto), "`mode` of the desktop notification sent with the bell: auto, osc9, osc777 or off")
	fset.BoolVar(&o.stopsDaemon, "stops-daemon", false, stopsDaemonUsage)
	o.web.addFlags(fset, "")
	fset.StringVar(&o.web.user, "user", web.DefaultUser, "with --web: the `user` the web approver runs as once it has connected (never root; a user no other program runs as)")
	return fset, o
}

// approverSocket is the approver socket when no flag names one:
// $AGENT_SUDO_APPROVER_SOCKET, else defaultApproverSocket.
func (inv *invocation) approverSocket() string {
	if s := inv.getenv(envApproverSocket); s != "" {
		return s
	}
	return defaultApproverSocket
}

// checkSSHDestination refuses a --ssh value that ssh could take for an
// option, or that is not one plain word.
func checkSSHDestination(v string) error {
	switch {
	case v == "":
		return errors.New("the destination is empty")
	case strings.HasPrefix(v, "-"):
		return fmt.Errorf("the destination %q starts with '-', which ssh would take for an option", v)
	case strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Errorf("the destination %q contains a space or a control character", v)
	}
	return nil
}

// sshArgv is the command that reaches dest's approver channel: ssh without
// a terminal (-T), never prompting (BatchMode), with the human's options,
// then the destination after "--" and the remote command. It is run as an
// argv array, never through a local shell.
func sshArgv(program string, options []string, dest string) []string {
	argv := []string{program, "-T", "-o", "BatchMode=yes"}
	for _, o := range options {
		argv = append(argv, "-o", o)
	}
	return append(argv, "--", dest, "agent-sudo", "approver-stdio")
}

// daemons returns the daemons o names, local sockets first, in the order
// given.
func (o *approveOpts) daemons(deps approveDeps) []console.Daemon {
	sockets := o.sockets
	if len(sockets) == 0 && len(o.ssh) == 0 {
		sockets = []string{o.defaultSocket}
	}
	var ds []console.Daemon
	for _, path := range sockets {
		ds = append(ds, console.Daemon{Name: path, Dial: func(ctx context.Context) (net.Conn, error) {
			return deps.dialSocket(ctx, path)
		}})
	}
	for _, dest := range o.ssh {
		argv := sshArgv(o.sshProgram, o.sshOptions, dest)
		ds = append(ds, console.Daemon{Name: "ssh " + dest, Remote: true, Dial: func(ctx context.Context) (net.Conn, error) {
			return deps.dialCommand(ctx, argv)
		}})
	}
	return ds
}

// approveKeys is the keys section of approve's help: every key of every
// screen of the console, from console.Keys (which a console test binds to
// the screens), in 80 columns.
func approveKeys() string {
	const width = 80
	groups := console.Keys()
	col := 0
	for _, g := range groups {
		for _, k := range g.Keys {
			col = max(col, len(k.Keys))
		}
	}
	var b strings.Builder
	for i, g := range groups {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "keys %s:\n", g.Screen)
		for _, k := range g.Keys {
			line := fmt.Sprintf("  %-*s  ", col, k.Keys)
			indent := len(line)
			for j, word := range strings.Fields(k.Does) {
				if j > 0 && len(line)+1+len(word) > width-1 {
					b.WriteString(line + "\n")
					line = strings.Repeat(" ", indent) + word
					continue
				}
				if j > 0 {
					line += " "
				}
				line += word
			}
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func approveUsage() *usage {
	return &usage{
		name: "approve",
		synopsis: []string{
			"sudo agent-sudo approve [--approver-socket PATH]... [--desktop-notify MODE]",
			"sudo agent-sudo approve [--approver-socket PATH]... --ssh root@HOST... [--ssh-option OPT]... [--ssh-program PATH] [--desktop-notify MODE]",
			"sudo agent-sudo approve --web HOST:PORT [--origin URL] [--no-tls | --tls-cert FILE --tls-key FILE] [--user USER] [--approver-socket PATH]... [--ssh root@HOST]...",
			"sudo agent-sudo approve web enroll|list|revoke ...",
		},
		text: `Show the requests that wait for a human and approve or deny them. It runs as
root, in a terminal, and talks to agent-sudod over its root-only approver
socket. Every console sees every waiting request; the first decision wins.

One console can serve several daemons: local ones (--approver-socket, once
per daemon) and remote ones (--ssh root@HOST, once per host), reached with
"ssh -T root@HOST agent-sudo approver-stdio", so SSH does the
authentication and the transport (docs/remote.md). Each request shows the
daemon it is from, named by the host name the daemon itself sends; a
decision goes only to that daemon. A daemon that restarts or a host that
is lost is shown RECONNECTING and retried with a growing delay; the
others are not affected. Its requests leave the screen until it is back.

Requests are shown one at a time, oldest first, with the command as a shell
line and each stage's real program. Everything the agent wrote is escaped.
Keys are ignored for 0.5s after a request appears; Deny is preselected.

` + approveKeys() + `
A new request rings the bell and, with --desktop-notify, asks the terminal
for a desktop notification: osc9 (iTerm2), osc777 (foot, WezTerm,
Ghostty), off, or auto (the default), which picks by TERM_PROGRAM and TERM
and sends none on another terminal or inside tmux or screen.

Do not run it inside tmux or screen: an agent that can type into the
multiplexer could approve its own requests. See docs/approving.md.

With --web HOST:PORT it is the web approver instead: a page for a phone,
where each allow or deny is signed with a passkey enrolled with
"agent-sudo approve web enroll NAME" and checked by the daemon. It serves
every daemon named, as the console does. It starts as root, connects to
them all, then runs as --user, and so cannot connect again: a daemon that
restarts shows as disconnected until the web approver is restarted, which
agent-sudo-web.service does by itself (approve web serve). See
docs/approving.md and docs/remote.md.
`,
		exits: []exitDoc{
			{"0", "the console was quit"},
			{"2", "usage error, or stdin or stdout is not a terminal"},
			{"69", "no agent-sudod could be reached at start (one that goes away later is reconnected)"},
			{"70", "the console failed"},
			{"77", "not run as root"},
			{"130", "interrupted"},
		},
		hidden: []string{"stops-daemon"},
	}
}

func approveHelp(inv *invocation, w io.Writer) error {
	fset, _ := approveFlags(inv)
	return approveUsage().write(w, fset)
}

// approveMain is "agent-sudo approve".
func approveMain(ctx context.Context, inv *invocation, args []string) int {
	return approve(ctx, inv, args, realApproveDeps())
}

func approve(ctx context.Context, inv *invocation, args []string, deps approveDeps) int {
	if len(args) > 0 && args[0] == "web" {
		return approveWebCommand(ctx, inv, args[1:], deps)
	}
	fset, opts := approveFlags(inv)
	if _, code, ok := inv.parse(approveUsage(), fset, args); !ok {
		return code
	}
	if opts.stopsDaemon && (len(opts.sockets) != 1 || len(opts.ssh) > 0 || opts.web.addr != "") {
		return inv.fail(exitUsage, "approve: --stops-daemon needs exactly one --approver-socket, and no --ssh nor --web; see 'agent-sudo help approve'")
	}
	if opts.web.addr != "" {
		return approveWebMain(ctx, inv, opts, deps)
	}
	desktop, err := console.ParseDesktopNotify(opts.desktop)
	if err != nil {
		return inv.fail(exitUsage, "approve: --desktop-notify: %v; see 'agent-sudo help approve'", err)
	}
	if deps.geteuid() != 0 {
		return inv.fail(exitDenied, "approve must run as root, e.g. sudo agent-sudo approve")
	}
	if !deps.terminal(inv.stdin, inv.stdout) {
		return inv.fail(exitUsage, "approve needs a terminal on stdin and stdout: run it in an interactive shell, not in a pipe or a script")
	}
	if opts.stopsDaemon {
		return daemonConsole(ctx, inv, opts.sockets[0], desktop, deps)
	}
	daemons := opts.daemons(deps)
	err = deps.run(ctx, daemons, inv.stdin, inv.stdout, console.Options{Desktop: desktop})
	switch {
	case err == nil:
		return 0
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return inv.fail(exitInterrupted, "approve: interrupted; nothing was decided by quitting")
	case errors.Is(err, console.ErrUnreachable) && len(daemons) == 1 && client.DaemonDown(err):
		return inv.failHint(exitUnavailable, notRunning+"; once it is fixed, start it: "+startAgain, "approve: agent-sudod is not running: %v", err)
	case errors.Is(err, console.ErrUnreachable):
		return inv.fail(exitUnavailable, "approve: %v; is the daemon running? (systemctl status agent-sudo)", err)
	case errors.Is(err, console.ErrDisconnected):
		return inv.fail(exitUnavailable, "approve: lost agent-sudod: %v; is the daemon running? (systemctl status agent-sudo)", err)
	}
	return inv.fail(exitSoftware, "approve: %v", err)
}

// daemonConsole is approve --stops-daemon: the console of agent-sudod
// --tty, connected to its approver socket sock, on the daemon's terminal.
// Its exit statuses are stopsDaemonUsage's.
func daemonConsole(ctx context.Context, inv *invocation, sock string, desktop console.DesktopNotify, deps approveDeps) int {
	err := deps.runDaemonConsole(ctx, sock, inv.stdin, inv.stdout, console.Options{StopsDaemon: true, Desktop: desktop})
	switch {
	case err == nil:
		return 0
	case errors.Is(err, console.ErrHungUp) || errors.Is(err, unix.EIO):
		// Said for the log of a test; the terminal it goes to is gone.
		return inv.fail(exitHungUp, "approve: the terminal hung up: %v", err)
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// The daemon stops, and says why in its log.
		return exitInterrupted
	}
	return inv.fail(exitSoftware, "approve: the console of agent-sudod --tty: %v; agent-sudod stops with it", err)
}
