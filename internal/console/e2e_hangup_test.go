package console_test

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2EForegroundTTYHangup: when the terminal of agent-sudod --tty hangs
// up (its tmux server is killed: SIGHUP, and the terminal reads as ended),
// the daemon stops instead of serving on without a console: the request
// left waiting is answered that the terminal hung up, the audit log's last
// record says so, the daemon's log says why it stopped, and a request sent
// afterwards finds no daemon and is not run.
func TestE2EForegroundTTYHangup(t *testing.T) {
	t.Parallel()
	needE2E(t)
	d := daemontest.Configure(t, daemonConfig)
	tm := d.Foreground(t)
	r := ask(t, d, &proto.Request{Pipeline: [][]string{{"echo", "left waiting"}}, Session: "hangup"})
	tm.WaitFor("command    echo 'left waiting'")

	tm.Run("kill-server")
	const why = "agent-sudod stopped: the terminal of agent-sudod --tty hung up, which stops the daemon"
	if resp := r.Wait(); resp.Status != proto.StatusError || !strings.Contains(resp.Message, why) {
		t.Errorf("the waiting request was answered %q %q; want an error saying %q", resp.Status, resp.Message, why)
	}
	testenv.WaitForFile(t, d.ForegroundLog(), "msg=stopped")
	if logs, _ := os.ReadFile(d.ForegroundLog()); !strings.Contains(string(logs), `msg=stopped why="the terminal of agent-sudod --tty hung up`) {
		t.Errorf("the daemon's log does not say the terminal hung up:\n%s", logs)
	}
	recs := d.AuditRecords("")
	if len(recs) == 0 {
		t.Fatal("no audit record")
	}
	last := recs[len(recs)-1]
	if last.ID != r.ID || last.Type != audit.TypeDecision || last.Decision == nil || !strings.Contains(last.Decision.Message, why) {
		t.Errorf("the audit log's last record is %+v (decision %+v); want the waiting request's decision saying %q", last, last.Decision, why)
	}
	if c, err := net.Dial("unix", d.Socket); err == nil {
		c.Close()
		t.Errorf("agent-sudod still accepts connections after its terminal hung up")
	}
	if n := len(d.AuditRecords("")); n != len(recs) {
		t.Errorf("the audit log grew from %d to %d records after the daemon stopped", len(recs), n)
	}
}
