package console_test

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2EForegroundTTYHangup: when the terminal of agent-sudod --tty hangs
// up (its tmux server is killed: SIGHUP, and the terminal reads as ended),
// the daemon stops instead of serving on without a console: the request
// left waiting is answered that the terminal hung up, its decision record
// says so, the audit log's last record is the daemon's stop saying so, the
// daemon's log says why it stopped, and a request sent afterwards finds no
// daemon and is not run.
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
	recs := waitStopRecord(t, d)
	if len(recs) < 2 {
		t.Fatalf("%d audit records; want the waiting request's decision, then the daemon's stop", len(recs))
	}
	decision := recs[len(recs)-2]
	if decision.ID != r.ID || decision.Type != audit.TypeDecision || decision.Decision == nil || !strings.Contains(decision.Decision.Message, why) {
		t.Errorf("the audit log's record before the stop is %+v (decision %+v); want the waiting request's decision saying %q", decision, decision.Decision, why)
	}
	if c, err := net.Dial("unix", d.Socket); err == nil {
		c.Close()
		t.Errorf("agent-sudod still accepts connections after its terminal hung up")
	}
	if n := len(d.AuditRecords("")); n != len(recs) {
		t.Errorf("the audit log grew from %d to %d records after the daemon stopped", len(recs), n)
	}
}

// TestE2EForegroundTTYHangupIdle: when the terminal of agent-sudod --tty
// hangs up with no request waiting, the audit log still says why the daemon
// stopped: its last record is the daemon's stop, saying the terminal hung
// up, after the start of the same run, and `agent-sudo audit verify` passes
// over them (docs/audit.md, "Daemon records").
func TestE2EForegroundTTYHangupIdle(t *testing.T) {
	t.Parallel()
	needE2E(t)
	d := daemontest.Configure(t, daemonConfig)
	tm := d.Foreground(t)
	tm.Run("kill-server")
	testenv.WaitForFile(t, d.ForegroundLog(), "msg=stopped")
	recs := waitStopRecord(t, d)
	if len(recs) != 2 || recs[0].Type != audit.TypeDaemon || recs[0].Daemon.Event != audit.DaemonStarted {
		t.Fatalf("the audit log has %d records, first %+v; want the daemon's start and its stop, nothing else", len(recs), recs[0])
	}
	start, stop := recs[0].Daemon, recs[1].Daemon
	const why = "the terminal of agent-sudod --tty hung up, which stops the daemon"
	if stop.Reason != why || stop.Instance != start.Instance || stop.PID != start.PID || stop.Config != d.ConfigPath {
		t.Errorf("the daemon's stop record is %+v after the start %+v; want the same run, saying %q", *stop, *start, why)
	}
	_, cli := daemontest.Binaries(t)
	out, err := exec.Command(cli, "audit", "verify", "--log", d.AuditLog).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "ok: 2 records in 1 file\n") {
		t.Errorf("agent-sudo audit verify: %v\n%s", err, out)
	}
}

// waitStopRecord waits until the last complete line of d's audit log is the
// daemon's stop, and returns every record. The daemon in tmux is not this
// test's child, so its end is seen in its log: looked at every 10 ms, for
// at most a minute.
func waitStopRecord(t *testing.T, d *daemontest.Daemon) []audit.Record {
	t.Helper()
	var recs []audit.Record
	for range 6000 {
		recs = recs[:0]
		b, _ := os.ReadFile(d.AuditLog)
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			for _, line := range bytes.Split(b[:i], []byte("\n")) {
				var r audit.Record
				if err := json.Unmarshal(line, &r); err != nil {
					t.Fatalf("audit line %q: %v", line, err)
				}
				recs = append(recs, r)
			}
		}
		if n := len(recs); n > 0 && recs[n-1].Type == audit.TypeDaemon && recs[n-1].Daemon.Event == audit.DaemonStopped {
			return recs
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the audit log's last record is not the daemon's stop after a minute: %+v", recs)
	return nil
}
