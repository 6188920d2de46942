package daemon_test

import (
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2EFinishedOnlyForPasskeyDecisions: a web approver (a signed-only
// connection) is told how a request ended (finished) only for the requests
// a passkey allowed, for its receipts: not for one a rule allowed, nor one
// a console allowed, which it never decided. A request announced after
// them is the next thing it reads.
func TestE2EFinishedOnlyForPasskeyDecisions(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "60s", Rules: `
[[rule]]
name = "ruled"
action = "allow"
match = ["echo", "ruled"]
`})
	web := daemontest.Dial(t, d.ApproverSocket)
	web.Send(approval.Message{Type: approval.MsgSignedOnly, DaemonHost: "laptop"})
	console := daemontest.Dial(t, d.ApproverSocket)

	if resp := d.Run(&proto.Request{ID: "fin-rule", Session: "s", Pipeline: [][]string{{"echo", "ruled"}}}); resp.Status != proto.StatusOK {
		t.Fatalf("fin-rule: %+v", resp)
	}
	asked := d.Ask(t, &proto.Request{ID: "fin-console", Session: "s", Pipeline: [][]string{{"echo", "by a console"}}})
	p := console.Pending("fin-console")
	console.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce})
	if resp := asked.Wait(); resp.Status != proto.StatusOK {
		t.Fatalf("fin-console: %+v", resp)
	}
	marker := d.Ask(t, &proto.Request{ID: "fin-marker", Session: "s", Pipeline: [][]string{{"echo", "marker"}}})
	for {
		m := web.Next()
		if m.Type == approval.MsgFinished {
			t.Fatalf("the web approver was told how %s ended: %+v", m.ID, m)
		}
		if m.Type == approval.MsgPending && m.ID == "fin-marker" {
			break
		}
	}
	marker.Cancel()
}
