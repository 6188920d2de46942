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

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/internal/console"
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
	dial     func(ctx context.Context, path string) (net.Conn, error)
	run      func(ctx context.Context, conn net.Conn, in io.Reader, out io.Writer) error
}

func realApproveDeps() approveDeps {
	return approveDeps{
		geteuid:  os.Geteuid,
		terminal: isTerminal,
		dial:     console.Dial,
		run: func(ctx context.Context, conn net.Conn, in io.Reader, out io.Writer) error {
			return console.Run(ctx, conn, in, out, console.Options{})
		},
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

func approveFlags(inv *invocation) (*flag.FlagSet, *string) {
	fset := flag.NewFlagSet("approve", flag.ContinueOnError)
	fset.SetOutput(io.Discard) // errors are reported in one line by approveMain
	socket := inv.getenv(envApproverSocket)
	if socket == "" {
		socket = defaultApproverSocket
	}
	path := fset.String("approver-socket", socket, "`path` of agent-sudod's approver socket (env "+envApproverSocket+")")
	return fset, path
}

func approveHelp(inv *invocation, w io.Writer) error {
	fset, _ := approveFlags(inv)
	var b strings.Builder
	b.WriteString(`usage: sudo agent-sudo approve [--approver-socket PATH]

Show the requests that wait for a human and approve or deny them. It runs as
root, in a terminal, and talks to agent-sudod over its root-only approver
socket. Every console sees every waiting request; the first decision wins.

Requests are shown one at a time, oldest first, with the command as a shell
line and each stage's real program. Everything the agent wrote is escaped.
Keys are ignored for 0.5s after a request appears; Deny is preselected.

keys:
  a          allow once
  s          allow for this session (same request, session and user)
  d          deny, with an optional note for the agent
  up/down    move between the choices; enter chooses
  PgUp/PgDn  scroll a request that does not fit
  g          list the session grants; r revokes one, esc goes back
  q, ctrl+c  quit; a request nobody decides times out

Do not run it inside tmux or screen: an agent that can type into the
multiplexer could approve its own requests. See docs/approving.md.

flags:
`)
	fset.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "  --%s %s\n    \t%s (default %q)\n", f.Name, arg, usage, f.DefValue)
	})
	b.WriteString(`
exit status:
  0    the console was quit
  2    usage error, or stdin or stdout is not a terminal
  69   agent-sudod cannot be reached, or it went away
  70   agent-sudod refused the console or broke the protocol
  77   not run as root
  130  interrupted
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// approveMain is "agent-sudo approve".
func approveMain(ctx context.Context, inv *invocation, args []string) int {
	return approve(ctx, inv, args, realApproveDeps())
}

func approve(ctx context.Context, inv *invocation, args []string, deps approveDeps) int {
	fset, socket := approveFlags(inv)
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return inv.showHelp(approveHelp)
		}
		return inv.fail(exitUsage, "approve: %v; see 'agent-sudo help approve'", err)
	}
	if fset.NArg() > 0 {
		return inv.fail(exitUsage, "approve: unexpected argument %q; see 'agent-sudo help approve'", fset.Arg(0))
	}
	if deps.geteuid() != 0 {
		return inv.fail(exitDenied, "approve must run as root, e.g. sudo agent-sudo approve")
	}
	if !deps.terminal(inv.stdin, inv.stdout) {
		return inv.fail(exitUsage, "approve needs a terminal on stdin and stdout: run it in an interactive shell, not in a pipe or a script")
	}
	conn, err := deps.dial(ctx, *socket)
	if err != nil {
		if ctx.Err() != nil {
			return inv.fail(exitInterrupted, "approve: interrupted")
		}
		return inv.fail(exitUnavailable, "approve: cannot reach agent-sudod: %v; is the daemon running? (systemctl status agent-sudo)", err)
	}
	err = deps.run(ctx, conn, inv.stdin, inv.stdout)
	switch {
	case err == nil:
		return 0
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return inv.fail(exitInterrupted, "approve: interrupted; nothing was decided by quitting")
	case errors.Is(err, console.ErrDisconnected):
		return inv.fail(exitUnavailable, "approve: lost agent-sudod: %v; is the daemon running? (systemctl status agent-sudo)", err)
	}
	return inv.fail(exitSoftware, "approve: %v", err)
}
