package agents

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// console is the real "agent-sudo approve" in a detached session of a tmux
// server of its own, read with capture-pane and typed into with send-keys,
// as a human at a terminal would. The tests wait for what a human looks
// for (the request's command, the key hint going away), not for the
// layout, which docs/approving.md does not promise.
type console struct {
	t      *testing.T
	server string
}

// startConsole starts "agent-sudo approve" for the daemon d in tmux and
// waits until it is connected.
func startConsole(t *testing.T, d *daemontest.Daemon) *console {
	t.Helper()
	testenv.NeedsTmux(t)
	_, cli := daemontest.Binaries(t)
	c := &console{t: t, server: fmt.Sprintf("agent-sudo-agents-%d-%s", os.Getpid(), t.Name())}
	// The pane keeps its last screen and says how approve ended.
	shell := fmt.Sprintf(`%s approve --approver-socket %s; echo "approve exited with status $?"; sleep 600`, cli, d.ApproverSocket)
	c.run("-f", "/dev/null", "new-session", "-d", "-s", "approve", "-x", "200", "-y", "50", shell)
	t.Cleanup(func() { c.run("kill-server") })
	c.waitFor("waiting for requests")
	return c
}

// run runs a tmux command on the console's server.
func (c *console) run(args ...string) string {
	c.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-L", c.server}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMUX=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil && args[0] != "kill-server" {
		c.t.Fatalf("tmux %q: %v: %s", args, err, stderr.String())
	}
	return out.String()
}

// screen is what the pane shows now.
func (c *console) screen() string { return c.run("capture-pane", "-p", "-t", "approve") }

// waitFor polls the screen until it shows want, and returns it.
func (c *console) waitFor(want string) string {
	c.t.Helper()
	return c.poll(func(s string) bool { return strings.Contains(s, want) }, fmt.Sprintf("show %q", want))
}

// approve waits until the screen shows the request whose command contains
// command, then until its keys are enabled (the console drops keys for a
// moment after a request appears), and allows it once with "a".
func (c *console) approve(command string) {
	c.t.Helper()
	c.waitFor(command)
	c.poll(func(s string) bool { return !strings.Contains(s, "keys enabled in") }, "enable the keys")
	c.run("send-keys", "-t", "approve", "a")
}

func (c *console) poll(ok func(string) bool, what string) string {
	c.t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for {
		s := c.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the console did not %s within 120s; it shows:\n%s", what, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
