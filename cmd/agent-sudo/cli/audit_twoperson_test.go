package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestAuditShowTwoPerson: show of a request a rule gave to two people,
// decided over the real daemon by two passkeys' signed allows, prints both
// allows in the order given, each with its person and its signature's
// passkey and credential, not the last one alone (issue 33: the first
// approver was only in the JSON).
func TestAuditShowTwoPerson(t *testing.T) {
	daemontest.RequireRoot(t)
	keys := passkeytest.Dir(t)
	var signers []*passkeytest.Key
	for _, name := range []string{"alice", "bob"} {
		k, err := passkeytest.New(name, "localhost", "https://localhost:8443")
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
		signers = append(signers, k)
	}
	target := filepath.Join(t.TempDir(), "ran")
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "60s", Extra: fmt.Sprintf("passkeys = %q", keys), Rules: `
[[rule]]
name = "two people"
action = "ask"
match = ["touch", "**"]
approvals = 2
`})
	watcher := daemontest.Dial(t, d.ApproverSocket)
	asked := d.Ask(t, &proto.Request{ID: "two-1", Pipeline: [][]string{{"touch", target}}, Session: "s1", Reason: "two people", Time: time.Now()})
	p := watcher.Pending("two-1")
	for i, k := range signers {
		st := approval.Statement{Record: p.Record, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce,
			Scope: approval.ScopeOnce, Expires: time.Now().Add(time.Minute).UTC(), Nonce: passkeytest.Nonce()}
		sig, err := k.Sign(st)
		if err != nil {
			t.Fatal(err)
		}
		watcher.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce, Signed: &sig})
		if r := watcher.Result("two-1"); !r.OK {
			t.Fatalf("allow %d by %s: %+v", i+1, k.Name, r)
		}
	}
	if resp := asked.Wait(); resp.Status != proto.StatusOK {
		t.Fatalf("response %+v, want ok", resp)
	}

	got := runAuditCLI(context.Background(), "--log", d.AuditLog, "show", "two-1")
	if got.code != 0 {
		t.Fatalf("show: exit %d: %s", got.code, got.stderr)
	}
	var want []string
	for i, k := range signers {
		want = append(want, fmt.Sprintf("  allow %d of 2:   ", i+1), "  person:       passkey "+k.Name+"\n",
			fmt.Sprintf("  signed:       passkey %s, credential %x, carried by ", k.Name, k.ID))
	}
	at := 0
	for _, w := range want {
		i := strings.Index(got.stdout[at:], w)
		if i < 0 {
			t.Fatalf("show lacks %q after byte %d (the allows in order, each with its person and passkey):\n%s", w, at, got.stdout)
		}
		at += i + len(w)
	}
}
