package console_test

import (
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/consoletest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2EStopFromTheConsoleInTmux: through the real daemon and the real
// console in tmux, a command the human allowed is listed on the running
// commands screen (w) with its output escaped (o); x then y stops it, and
// the agent is told which console stopped it.
func TestE2EStopFromTheConsoleInTmux(t *testing.T) {
	t.Parallel()
	d, tm := startConsoleE2E(t)
	r := ask(t, d, &proto.Request{Pipeline: [][]string{{"sh", "-c", `printf 'hello\033[2Jworld\n'; exec sleep 987.653`}}, Session: "e2e-run"})
	tm.WaitFor("REQUEST WAITING")
	consoletest.Press(t, tm, "a", "request "+r.ID+" was allowed by")
	tm.WaitFor("waiting for requests…")
	screen := consoletest.Press(t, tm, "w", "session e2e-run")
	for _, want := range []string{"RUNNING COMMANDS", "asked by   uid 0 (root)", "session    e2e-run (claimed by the agent)", "allowed by console uid=0"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the running commands screen lacks %q:\n%s", want, screen)
		}
	}
	t.Logf("the running commands screen:\n%s", strings.TrimRight(screen, "\n"))
	consoletest.Press(t, tm, "o", `hello\x1b[2Jworld`)
	consoletest.Press(t, tm, "x", "Press y to stop it")
	consoletest.Press(t, tm, "y", "is being stopped")
	resp := r.Wait()
	if resp.Status != proto.StatusTimeout || !strings.Contains(resp.Message, "stopped by an approver (console uid=0 tty=/dev/pts/") {
		t.Fatalf("agent got %+v", resp)
	}
	tm.WaitFor("no command is running")
}
