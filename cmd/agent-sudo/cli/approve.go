package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"os"

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
	run      func(ctx context.Context, conn net.Conn, in io.Reader, out io.Writer, opts console.Options) error
}

func realApproveDeps() approveDeps {
	return approveDeps{
		geteuid:  os.Geteuid,
		terminal: isTerminal,
		dial:     console.Dial,
		run:      console.Run,
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

func approveFlags(inv *invocation) (fset *flag.FlagSet, path, desktop *string) {
	fset = approveUsage().newFlagSet()
	socket := inv.getenv(envApproverSocket)
	if socket == "" {
		socket = defaultApproverSocket
	}
	path = fset.String("approver-socket", socket, "`path` of agent-sudod's approver socket (env "+envApproverSocket+")")
	desktop = fset.String("desktop-notify", string(console.DesktopAuto), "`mode` of the desktop notification sent with the bell: auto, osc9, osc777 or off")
	return fset, path, desktop
}

func approveUsage() *usage {
	return &usage{
		name:     "approve",
		synopsis: []string{"sudo agent-sudo approve [--approver-socket PATH] [--desktop-notify MODE]"},
		text: `Show the requests that wait for a human and approve or deny them. It runs as
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

A new request rings the bell and, with --desktop-notify, asks the terminal
for a desktop notification: osc9 (iTerm2), osc777 (foot, WezTerm,
Ghostty), off, or auto (the default), which picks by TERM_PROGRAM and TERM
and sends none on another terminal or inside tmux or screen.

Do not run it inside tmux or screen: an agent that can type into the
multiplexer could approve its own requests. See docs/approving.md.
`,
		exits: []exitDoc{
			{"0", "the console was quit"},
			{"2", "usage error, or stdin or stdout is not a terminal"},
			{"69", "agent-sudod cannot be reached, or it went away"},
			{"70", "agent-sudod refused the console or broke the protocol"},
			{"77", "not run as root"},
			{"130", "interrupted"},
		},
	}
}

func approveHelp(inv *invocation, w io.Writer) error {
	fset, _, _ := approveFlags(inv)
	return approveUsage().write(w, fset)
}

// approveMain is "agent-sudo approve".
func approveMain(ctx context.Context, inv *invocation, args []string) int {
	return approve(ctx, inv, args, realApproveDeps())
}

func approve(ctx context.Context, inv *invocation, args []string, deps approveDeps) int {
	fset, socket, desktopFlag := approveFlags(inv)
	if _, code, ok := inv.parse(approveUsage(), fset, args); !ok {
		return code
	}
	desktop, err := console.ParseDesktopNotify(*desktopFlag)
	if err != nil {
		return inv.fail(exitUsage, "approve: --desktop-notify: %v; see 'agent-sudo help approve'", err)
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
	err = deps.run(ctx, conn, inv.stdin, inv.stdout, console.Options{Desktop: desktop})
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
