package daemon_test

import (
	"context"
	"os"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2EAuditDaemonHost checks that the real daemon writes its own host
// name (os.Hostname) as daemon_host in every audit record, whatever host
// the agent claims (its own daemon record, of its start, has none), and
// that the log verifies.
func TestE2EAuditDaemonHost(t *testing.T) {
	t.Parallel()
	want, err := os.Hostname()
	if err != nil || want == "" {
		t.Skipf("this machine has no host name (%v)", err)
	}
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll})
	resp := d.Run(&proto.Request{ID: "dh-1", Host: "claimed.example", Pipeline: [][]string{{"true"}}, Privileged: true})
	if resp.Status != proto.StatusOK {
		t.Fatalf("%+v", resp)
	}
	logPath := d.AuditLog
	n, daemons := 0, 0
	for e, err := range audit.Read(context.Background(), logPath) {
		if err != nil {
			t.Fatal(err)
		}
		claimed := "claimed.example"
		if e.Record.Type == audit.TypeDaemon {
			daemons++
			claimed = ""
		} else {
			n++
		}
		if e.Record.DaemonHost != want || e.Record.Host != claimed {
			t.Errorf("%s: %s record: daemon_host %q, host %q; want %q and %q", e.Location(), e.Record.Type, e.Record.DaemonHost, e.Record.Host, want, claimed)
		}
	}
	if n != 4 || daemons != 1 {
		t.Errorf("%d records of the request and %d of the daemon, want 4 (request, decision, exec, result) and its start", n, daemons)
	}
	if _, err := audit.Verify(context.Background(), logPath); err != nil {
		t.Errorf("Verify: %v", err)
	}
}
