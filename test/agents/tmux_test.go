package agents

import (
	"fmt"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/consoletest"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/internal/tmuxtest"
)

// console is the real "agent-sudo approve" in tmux (package tmuxtest), as
// a human at a terminal would use it. The tests wait for what a human
// looks for (the request's command, the key hint going away), not for the
// layout, which docs/approving.md does not promise.
type console struct {
	t  *testing.T
	tm *tmuxtest.Session
}

// startConsole starts "agent-sudo approve" for the daemon d in tmux and
// waits until it is connected. Its waits last up to 120s: the agents take
// their time to ask.
func startConsole(t *testing.T, d *daemontest.Daemon) *console {
	t.Helper()
	testenv.NeedsTmux(t)
	_, cli := daemontest.Binaries(t)
	c := &console{t: t, tm: tmuxtest.Start(t, tmuxtest.Config{
		Command: fmt.Sprintf("%s approve --approver-socket %s", cli, d.ApproverSocket),
		Timeout: 120 * time.Second,
	})}
	c.tm.WaitFor("waiting for requests")
	return c
}

// approve waits until the screen shows the request whose command contains
// command, then allows it once with "a" pressed as a human would
// (consoletest.Press: after the key guard, alone, and again if a loaded
// machine made the console discard it), until the console says so. It is
// for the one request a test allows on its console.
func (c *console) approve(command string) {
	c.t.Helper()
	c.tm.WaitFor(command)
	consoletest.Press(c.t, c.tm, "a", "was allowed by console")
}
