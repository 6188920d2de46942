package console_test

import (
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2EStopFromTheConsoleInTmux: through the real daemon and the real
// console in tmux, a command the human allowed is listed on the running
// commands screen (w) with its output escaped (o); x then y stops it, and
// the agent is told which console stopped it.
func TestE2EStopFromTheConsoleInTmux(t *testing.T) {
	d, tm := startConsoleE2E(t)
	r := ask(t, d, &proto.Request{Pipeline: [][]string{{"sh", "-c", `printf 'hello\033[2Jworld\n'; exec sleep 987.653`}}, Session: "e2e-run"})
	tm.WaitFor("REQUEST WAITING")
	waitPastGuard(tm)
	pressAlone(tm, "a")
	tm.WaitFor("waiting for requests…")
	pressAlone(tm, "w")
	screen := tm.WaitFor("session e2e-run")
	for _, want := range []string{"RUNNING COMMANDS", "asked by   uid 0 (root)", "session    e2e-run (claimed by the agent)", "allowed by console uid=0"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the running commands screen lacks %q:\n%s", want, screen)
		}
	}
	t.Logf("the running commands screen:\n%s", strings.TrimRight(screen, "\n"))
	pressAlone(tm, "o")
	tm.WaitFor(`hello\x1b[2Jworld`)
	pressAlone(tm, "x")
	tm.WaitFor("Press y to stop it")
	pressAlone(tm, "y")
	resp := r.Wait()
	if resp.Status != proto.StatusTimeout || !strings.Contains(resp.Message, "stopped by an approver (console uid=0 tty=/dev/pts/") {
		t.Fatalf("agent got %+v", resp)
	}
	tm.WaitFor("no command is running")
}
