package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/proto"
)

// statusFlags returns status's flag set and where --socket goes.
func statusFlags(inv *invocation) (*flag.FlagSet, *string) {
	fset := statusUsage().newFlagSet()
	socket := inv.getenv(envSocket)
	if socket == "" {
		socket = client.DefaultSocket
	}
	fset.StringVar(&socket, "socket", socket, "`path` of agent-sudod's socket (env "+envSocket+")")
	return fset, &socket
}

func statusUsage() *usage {
	return &usage{
		name:     "status",
		synopsis: []string{"agent-sudo status [--socket PATH]"},
		text: `Asks agent-sudod whether it is up and whether you may use it. Nothing is run
and no approval is needed.
`,
		exits: []exitDoc{
			{"0", "the daemon is up and you may use it"},
			{"2", "usage error: a bad flag or an argument"},
			{"69", "the daemon cannot be reached, or you may not open its socket"},
			{"70", "the daemon answered something unexpected"},
			{"74", "the answer could not be written"},
			{"75", "the daemon is up but busy, or you sent too many requests; try again"},
			{"77", "the daemon is up but does not serve your user"},
		},
	}
}

func statusHelp(inv *invocation, w io.Writer) error {
	fset, _ := statusFlags(inv)
	return statusUsage().write(w, fset)
}

// statusTimeout bounds agent-sudo status's wait for the daemon's answer.
const statusTimeout = 10 * time.Second

// notRunning is the hint the CLI gives when agent-sudod
// is not there to answer: nothing listens on the socket, or the connection
// was reset before an answer, which is how systemd's socket ends the
// connections that waited for a daemon that failed to start
// (docs/install.md, "When the daemon does not start").
const notRunning = "it may have failed to start: journalctl -u agent-sudo says why, systemctl status agent-sudo whether it failed"

// startAgain is how an administrator starts the daemon and its sockets
// again: after a failed start systemd refuses a start for a while (the
// unit's start limit) unless reset-failed comes first.
const startAgain = "sudo systemctl reset-failed agent-sudo; sudo systemctl restart agent-sudo"

// statusMain is "agent-sudo status": is the daemon up, and may I use it?
func statusMain(ctx context.Context, inv *invocation, args []string) int {
	fset, sock := statusFlags(inv)
	if _, code, ok := inv.parse(statusUsage(), fset, args); !ok {
		return code
	}
	socket := *sock
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	// A busy daemon is an answer here: it is up, and says nothing yet
	// about access. Retrying would only make the human wait.
	c := client.New(socket)
	c.Busy = client.BusyRetry{Retries: -1}
	resp, err := c.Ping(ctx)
	switch {
	case errors.Is(err, client.ErrUnreachable) && errors.Is(err, fs.ErrPermission):
		return inv.failHint(exitUnavailable, "ask an administrator to add you to its group (ls -l "+socket+")", "agent-sudod's socket %s exists but your user may not open it", socket)
	case errors.Is(err, client.ErrNoAnswer):
		return inv.failHint(exitUnavailable, notRunning, "agent-sudod is not running: the connection to %s was reset before it answered", socket)
	case client.DaemonDown(err):
		return inv.failHint(exitUnavailable, notRunning, "agent-sudod is not running: nothing answers at %s (%v)", socket, errors.Unwrap(err))
	case errors.Is(err, client.ErrUnreachable):
		return inv.fail(exitUnavailable, "agent-sudod is not reachable at %s: %v; is it running? (systemctl status agent-sudo)", socket, errors.Unwrap(err))
	case errors.Is(err, context.DeadlineExceeded):
		return inv.fail(exitUnavailable, "agent-sudod took the connection at %s but did not answer within %v: it may be starting, stuck, or failing to start; journalctl -u agent-sudo says why", socket, statusTimeout)
	case err != nil:
		return inv.fail(exitSoftware, "status: %v", err)
	}
	switch resp.Status {
	case proto.StatusOK:
		// A daemon that does not say who may use it (sudo-proxy, which
		// answers only its own user) still answered: the caller may.
		access := resp.Access
		if access == "" {
			access = "you may use it"
		}
		msg := "agent-sudod " + resp.Version + " is up and " + access
		if _, err := fmt.Fprintf(inv.stdout, "%s (socket %s)\n", visible(msg), visible(socket)); err != nil {
			return inv.fail(exitIO, "write status: %v", err)
		}
		return 0
	case proto.StatusError:
		if strings.HasPrefix(resp.Message, proto.NotAllowedPrefix) {
			return inv.fail(exitDenied, "agent-sudod is up at %s, but %s", socket, resp.Message)
		}
		// Refused before the daemon looked at who is asking: whether this
		// user may use it is not known yet, so say so rather than guess.
		if strings.HasPrefix(resp.Message, "busy:") || strings.HasPrefix(resp.Message, "rate limited:") {
			return inv.fail(exitTempFail, "agent-sudod is up at %s but did not say whether you may use it: %s", socket, resp.Message)
		}
	}
	return inv.fail(exitSoftware, "agent-sudod at %s answered %s: %s", socket, resp.Status, resp.Message)
}
