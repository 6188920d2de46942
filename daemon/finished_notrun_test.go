package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestServerFinishedWhenNothingRan: a request a passkey allowed whose
// exec record could not be made durable (nothing ran) is told to the web
// approvers as finished with status error, as a request that failed to
// start is: without it, the receipt of the decision on the phone would
// say "running" for ever.
func TestServerFinishedWhenNothingRan(t *testing.T) {
	t.Parallel()
	b := newBroker(time.Minute, nil)
	_, web, cancelWeb, w := b.subscribe()
	defer cancelWeb()
	b.markWeb(w)
	passkey := askFunc(func(context.Context, *approval.Pending) (approval.Decision, error) {
		return approval.Decision{Verdict: approval.Allow, By: "passkey alice", Signed: &approval.SignedBy{}}, nil
	})
	ts := startServer(t, serverSetup{opts: Options{Approver: passkey, running: b}, audit: failAt("exec")})
	if resp := ts.send(request(map[string]any{"id": "not-run"})); resp.Status != proto.StatusError {
		t.Fatalf("the request: %s %q, want an error (the exec record is not durable)", resp.Status, resp.Message)
	}
	// A marker every subscriber gets, after anything the request sent.
	b.mu.Lock()
	b.broadcast(approval.Message{Type: approval.MsgGrants})
	b.mu.Unlock()
	var finished *approval.Message
	for m := range web {
		if m.Type == approval.MsgGrants {
			break
		}
		if m.Type == approval.MsgFinished && m.ID == "not-run" {
			finished = &m.Message
		}
	}
	if finished == nil || finished.Status != string(proto.StatusError) || len(finished.ExitCodes) != 0 {
		t.Fatalf("the web approver was told %+v, want not-run finished with status error and no exit codes", finished)
	}
}
