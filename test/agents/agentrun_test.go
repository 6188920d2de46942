package agents

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// needAgent returns the agent binary the environment variable env names,
// and skips the test when it is unset.
func needAgent(t *testing.T, env string) string {
	t.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		t.Skip(env + " is not set; make agents-test runs these tests")
	}
	return bin
}

// agentRun is one run of an agent's CLI (claude -p, codex exec) against a
// stand-in model.
type agentRun struct {
	name           string // the agent, for messages
	model          *standIn
	cmd            *exec.Cmd
	cancel         context.CancelFunc
	stdout, stderr bytes.Buffer
	err            error
}

// startAgent starts the agent name (the binary bin with args) in the
// directory home with the environment env, answered by model. wait waits
// for it to end; it is stopped after 150s (far more than it needs, for a
// loaded machine). When the test fails, the agent's output and what the
// stand-in received are logged.
func startAgent(t *testing.T, name string, model *standIn, home string, env []string, bin string, args ...string) *agentRun {
	t.Helper()
	r := &agentRun{name: name, model: model}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	r.cancel = cancel
	r.cmd = exec.CommandContext(ctx, bin, args...)
	r.cmd.Dir = home
	r.cmd.Env = env
	r.cmd.WaitDelay = 10 * time.Second
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			cancel()
			_ = r.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("%s: %v\nstdout:\n%s\nstderr:\n%s\nthe stand-in received:\n%s", name, r.err, r.stdout.String(), r.stderr.String(), r.model.dump())
		}
	})
	return r
}

// wait waits for the agent to end.
func (r *agentRun) wait() {
	r.err = r.cmd.Wait()
	r.cancel()
}

// output is the agent's stdout, trimmed: its final text.
func (r *agentRun) output() string { return strings.TrimSpace(r.stdout.String()) }

// answer returns the only item that items finds in conversation request i
// (the answer to the tool call of step i-1); what names such items, for
// the failure message.
func (r *agentRun) answer(t *testing.T, i int, items func(req map[string]any) []map[string]any, what string) map[string]any {
	t.Helper()
	conv := r.model.conversation()
	if len(conv) <= i {
		t.Fatalf("the stand-in got %d conversation requests, want at least %d", len(conv), i+1)
	}
	found := items(conv[i])
	if len(found) != 1 {
		t.Fatalf("request %d carries %d %s, want 1", i, len(found), what)
	}
	return found[0]
}

// installShim installs the shim of the agent-sudo binary cli in
// home/bin (agent-sudo shim install) and returns that directory, to put
// first in an agent's PATH.
func installShim(t *testing.T, cli, home string) string {
	t.Helper()
	dir := filepath.Join(home, "bin")
	if out, err := exec.Command(cli, "shim", "install", dir).CombinedOutput(); err != nil {
		t.Fatalf("agent-sudo shim install: %v\n%s", err, out)
	}
	return dir
}

// readAudit returns the audit log of the daemon d.
func readAudit(t *testing.T, d *daemontest.Daemon) []byte {
	t.Helper()
	b, err := os.ReadFile(d.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// unanswered starts a daemon with AskRules whose requests wait 5 minutes,
// and a console that reads them and never answers; it returns them and a
// path for a touch that waits there to create.
func unanswered(t *testing.T) (d *daemontest.Daemon, console *daemontest.Console, marker string) {
	t.Helper()
	d = daemontest.Start(t, daemontest.Config{Rules: daemontest.AskRules, ApprovalTimeout: "5m"})
	return d, daemontest.Dial(t, d.ApproverSocket), filepath.Join(d.Dir, "touched")
}

// attended starts a daemon with AskRules whose requests wait 2 minutes,
// and the real console in tmux (startConsole) for a human to approve them;
// it returns them and a path for an approved touch to create.
func attended(t *testing.T) (d *daemontest.Daemon, c *console, marker string) {
	t.Helper()
	d = daemontest.Start(t, daemontest.Config{Rules: daemontest.AskRules, ApprovalTimeout: "2m"})
	return d, startConsole(t, d), filepath.Join(d.Dir, "approved-at-the-console")
}

// expectWithdrawn reads the next request console is shown and checks the
// next resolution it is sent withdraws that request.
func expectWithdrawn(t *testing.T, console *daemontest.Console) {
	t.Helper()
	pending := console.NextOf(approval.MsgPending)
	if res := console.NextOf(approval.MsgResolved); res.ID != pending.ID || res.Verdict != approval.Withdrawn {
		t.Errorf("the console saw %+v, want request %s withdrawn", res, pending.ID)
	}
}
