package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"os"
	"strconv"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/console"
)

// approverStdioDeps are the parts of the process approver-stdio uses
// besides the invocation; tests replace them.
type approverStdioDeps struct {
	geteuid func() int
	dial    func(ctx context.Context, path string) (net.Conn, error)
}

func approverStdioFlags(inv *invocation) (*flag.FlagSet, *string) {
	fset := approverStdioUsage().newFlagSet()
	path := fset.String("approver-socket", inv.approverSocket(), "`path` of agent-sudod's approver socket (env "+envApproverSocket+")")
	return fset, path
}

func approverStdioUsage() *usage {
	return &usage{
		name:     "approver-stdio",
		synopsis: []string{"agent-sudo approver-stdio [--approver-socket PATH]"},
		text: `Connect standard input and output to agent-sudod's approver socket, so that
"agent-sudo approve --ssh root@HOST" on another machine can approve this
host's requests: it runs "ssh -T root@HOST agent-sudo approver-stdio", and
SSH does the authentication and the transport. It must run as root, like
every approver console. Not meant to be run by hand; see docs/remote.md.
`,
		exits: []exitDoc{
			{"0", "standard input ended (the console went away)"},
			{"2", "usage error"},
			{"69", "agent-sudod cannot be reached, or it closed the channel"},
			{"74", "writing to standard output failed"},
			{"77", "not run as root"},
			{"130", "interrupted"},
		},
	}
}

func approverStdioHelp(inv *invocation, w io.Writer) error {
	fset, _ := approverStdioFlags(inv)
	return approverStdioUsage().write(w, fset)
}

// approverStdioMain is "agent-sudo approver-stdio".
func approverStdioMain(ctx context.Context, inv *invocation, args []string) int {
	return approverStdio(ctx, inv, args, approverStdioDeps{geteuid: os.Geteuid, dial: console.Dial})
}

// approverStdio bridges stdin and stdout to the approver socket until stdin
// ends (0), the daemon closes the channel (69) or ctx ends (130). A caller
// that is not root is refused before anything is dialled: with a message on
// stderr, and with the same result line the daemon sends a non-root
// console on stdout, so that a console at the other end of ssh shows why.
// The daemon checks the connecting uid again on its side.
func approverStdio(ctx context.Context, inv *invocation, args []string, deps approverStdioDeps) int {
	fset, socket := approverStdioFlags(inv)
	if rest, code, ok := inv.parse(approverStdioUsage(), fset, args); !ok {
		return code
	} else if len(rest) > 0 {
		return inv.fail(exitUsage, "approver-stdio takes no arguments, got %q", rest[0])
	}
	if uid := deps.geteuid(); uid != 0 {
		msg := "not allowed: approver-stdio connects to the approver channel, which is for root only, and it runs as uid " + strconv.Itoa(uid) + "; log in as root (ssh root@HOST)"
		_ = json.NewEncoder(inv.stdout).Encode(approval.Message{Type: approval.MsgResult, Error: msg})
		return inv.fail(exitDenied, "%s", msg)
	}
	conn, err := deps.dial(ctx, *socket)
	if err != nil {
		if ctx.Err() != nil {
			return inv.fail(exitInterrupted, "approver-stdio: interrupted")
		}
		return inv.fail(exitUnavailable, "approver-stdio: cannot reach agent-sudod: %v; is the daemon running? (systemctl status agent-sudo)", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()

	// Upstream: stdin to the daemon. Its end is passed on as a half close,
	// so that the daemon ends the channel after answering what it got.
	inputEnded := make(chan struct{})
	go func() {
		_, _ = io.Copy(conn, inv.stdin)
		close(inputEnded)
		if hc, ok := conn.(interface{ CloseWrite() error }); ok {
			_ = hc.CloseWrite()
		} else {
			_ = conn.Close()
		}
	}()
	_, err = io.Copy(stdoutWriter{inv.stdout}, readerOnly{conn})
	select {
	case <-inputEnded:
		return 0
	default:
	}
	switch {
	case ctx.Err() != nil:
		return inv.fail(exitInterrupted, "approver-stdio: interrupted")
	case err != nil && !errors.Is(err, net.ErrClosed):
		var werr *writeError
		if errors.As(err, &werr) {
			return inv.fail(exitIO, "approver-stdio: write to standard output: %v", werr.err)
		}
		return inv.fail(exitUnavailable, "approver-stdio: lost agent-sudod: %v", err)
	}
	return inv.fail(exitUnavailable, "approver-stdio: agent-sudod closed the approver channel (it stopped or restarted)")
}

// readerOnly hides everything but Read, so that io.Copy uses it and
// stdoutWriter rather than a shortcut of the connection's.
type readerOnly struct{ r io.Reader }

func (r readerOnly) Read(p []byte) (int, error) { return r.r.Read(p) }

// stdoutWriter marks its writer's errors as writeErrors, so that a failed
// write to stdout is told from a failed read from the daemon.
type stdoutWriter struct{ w io.Writer }

func (s stdoutWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil {
		err = &writeError{err}
	}
	return n, err
}

// writeError is an error writing to standard output.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }
