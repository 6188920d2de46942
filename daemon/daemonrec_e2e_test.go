package daemon_test

import (
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2EDaemonRecordsSIGTERM: the audit log shows each run of the real
// daemon: a daemon record when it starts serving (its version, pid,
// configuration file and instance) and, when SIGTERM stops it (systemctl
// stop), a last record saying so, after the records of the requests it
// served. Two runs are two pairs with their own instances; the chain over
// them verifies, and the listing shows the requests only
// (docs/audit.md, "Daemon records").
func TestE2EDaemonRecordsSIGTERM(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: `
[[rule]]
name = "echo ok"
action = "allow"
match = ["echo", "**"]
`})
	pids := []int{d.Cmd.Process.Pid}
	if resp := d.Run(&proto.Request{ID: "run-1", Pipeline: [][]string{{"echo", "one"}}}); resp.Status != proto.StatusOK {
		t.Fatalf("echo one: %s %s", resp.Status, resp.Message)
	}
	d.Restart()
	pids = append(pids, d.Cmd.Process.Pid)
	if resp := d.Run(&proto.Request{ID: "run-2", Pipeline: [][]string{{"echo", "two"}}}); resp.Status != proto.StatusOK {
		t.Fatalf("echo two: %s %s", resp.Status, resp.Message)
	}
	d.Stop()

	recs := d.AuditRecords("")
	var daemons []audit.Record
	var order []string
	for _, r := range recs {
		if r.Type == audit.TypeDaemon {
			daemons = append(daemons, r)
			order = append(order, r.Daemon.Event)
		} else if r.Type == audit.TypeRequest {
			order = append(order, r.ID)
		}
	}
	want := []string{"started", "run-1", "stopped", "started", "run-2", "stopped"}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Fatalf("daemon records and requests in the log: %q, want %q", order, want)
	}
	if last := recs[len(recs)-1]; last.Type != audit.TypeDaemon {
		t.Errorf("the last record is a %s record, want the daemon's stop", last.Type)
	}
	for i, r := range daemons {
		x := r.Daemon
		run := i / 2
		if x.PID != pids[run] || x.Config != d.ConfigPath || x.Version == "" || x.Instance == "" {
			t.Errorf("daemon record %d: %+v; want pid %d, config %s, a version and an instance", i+1, *x, pids[run], d.ConfigPath)
		}
		if r.ID != "" || r.Session != "" || r.Host != "" || r.Peer != nil {
			t.Errorf("daemon record %d has request fields: %+v", i+1, r)
		}
		if x.Event == audit.DaemonStopped {
			if x.Reason != "terminated signal received" {
				t.Errorf("the stop of run %d says %q, want %q (SIGTERM)", run+1, x.Reason, "terminated signal received")
			}
			if start := daemons[i-1].Daemon; x.Instance != start.Instance || x.Version != start.Version {
				t.Errorf("run %d started as %+v and stopped as %+v", run+1, *start, *x)
			}
		} else if x.Reason != "" {
			t.Errorf("the start of run %d has a reason: %q", run+1, x.Reason)
		}
	}
	if daemons[0].Daemon.Instance == daemons[2].Daemon.Instance {
		t.Errorf("both runs have instance %s", daemons[0].Daemon.Instance)
	}
	if code, out, errOut := auditCLI("audit", "verify", "--log", d.AuditLog); code != 0 || !strings.HasPrefix(out, "ok: ") {
		t.Errorf("audit verify: %d %s%s", code, out, errOut)
	}
	code, out, errOut := auditCLI("audit", "--log", d.AuditLog, "--json")
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, `"id":"run-1"`) || !strings.Contains(out, `"id":"run-2"`) {
		t.Errorf("audit --json: %d, want a row for each of the two requests, nothing else:\n%s%s", code, out, errOut)
	}
}
