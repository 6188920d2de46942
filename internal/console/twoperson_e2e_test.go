package console_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2ETwoPersonOneOfTwo, with the real daemon and the real console on
// an 80×24 terminal: under a rule with approvals = 2, the first allow (a
// passkey's, relayed by a first console) leaves the request waiting; the
// console in tmux then shows on that request "1 of 2 approvals", waiting
// for another person, and who allowed; a console that connects after the
// allow is told too; a deny at the console then decides.
func TestE2ETwoPersonOneOfTwo(t *testing.T) {
	t.Parallel()
	needE2E(t)
	keys := passkeytest.Dir(t)
	k, err := passkeytest.New("alice-e2e", "localhost", "https://localhost:8443")
	if err != nil {
		t.Fatal(err)
	}
	en, err := k.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	if err := (passkey.Store{Dir: keys}).Save(en); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "60s", MaxConnections: 16,
		Extra: fmt.Sprintf("passkeys = %q", keys), Rules: `
[[rule]]
name = "two people"
action = "ask"
match = ["echo", "two-person", "**"]
approvals = 2
`})
	tm := startApprove(t, d, 80, 24)
	first := daemontest.Dial(t, d.ApproverSocket)

	r := ask(t, d, &proto.Request{Pipeline: [][]string{{"echo", "two-person"}}, Reason: "needs two", Session: "e2e"})
	tm.WaitFor("NEEDS 2 DIFFERENT PEOPLE: 0 of 2 approvals so far")
	p := first.Pending(r.ID)
	st := approval.Statement{Record: p.Record, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce,
		Scope: approval.ScopeOnce, Expires: time.Now().Add(time.Minute).UTC(), Nonce: passkeytest.Nonce()}
	sig, err := k.Sign(st)
	if err != nil {
		t.Fatal(err)
	}
	first.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce, Signed: &sig})
	// The answer to the allow and the approved message that every console
	// gets come in either order.
	var res, got *approval.Message
	for res == nil || got == nil {
		m := first.Next()
		switch {
		case m.Type == approval.MsgResult && m.ID == r.ID:
			res = &m
		case m.Type == approval.MsgApproved && m.ID == r.ID:
			got = &m
		}
	}
	if !res.OK || !strings.Contains(res.Note, "1 of 2") {
		t.Fatalf("the first allow: %+v, want ok with a note saying 1 of 2", res)
	}
	if got.Hash != p.Hash || len(got.ApprovedBy) != 1 || !strings.HasPrefix(got.ApprovedBy[0], `passkey "alice-e2e" (via console`) {
		t.Fatalf("approved %+v, want %s approved by alice-e2e's passkey", got, r.ID)
	}

	screen := tm.WaitFor("1 of 2 approvals · waiting for another person · allowed by")
	flat := strings.Join(strings.Fields(screen), " ")
	for _, want := range []string{`allowed by passkey "alice-e2e" (via console`, "command echo two-person", "Your decision:"} {
		if !strings.Contains(flat, want) {
			t.Errorf("the console's screen lacks %q:\n%s", want, screen)
		}
	}
	if lines := strings.Split(strings.TrimRight(screen, "\n"), "\n"); len(lines) > 24 {
		t.Errorf("%d lines on 24 rows:\n%s", len(lines), screen)
	}

	late := daemontest.Dial(t, d.ApproverSocket)
	late.Pending(r.ID)
	if got := late.NextOf(approval.MsgApproved); got.ID != r.ID || len(got.ApprovedBy) != 1 {
		t.Fatalf("a console connected after the allow got %+v, want the approved message", got)
	}

	denyWithoutNote(t, tm, r)
	if resp := r.Wait(); resp.Status != proto.StatusDenied {
		t.Fatalf("response %+v, want denied", resp)
	}
}
