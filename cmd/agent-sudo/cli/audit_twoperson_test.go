package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/audit"
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

// TestShowDecisionSigning: show's decision lines for a console's allow
// then a passkey's (whichever came first), a single signed decision, and
// a hostile name, escaped; every allow of a two-person request in order,
// each with whether it was signed.
func TestShowDecisionSigning(t *testing.T) {
	uid := uint32(1000)
	console := &audit.Person{LoginUID: &uid, TTY: "/dev/pts/3"}
	passkeyOf := func(name, relay string, cred byte) *audit.SignedBy {
		return &audit.SignedBy{Approver: name, Person: "passkey " + name, Relay: relay,
			Signed: approval.Signed{Assertion: approval.Assertion{CredentialID: []byte{cred, 0xff}}}}
	}
	tests := []struct {
		name string
		d    audit.DecisionSection
		want string
	}{
		{"console then passkey", audit.DecisionSection{Verdict: "allowed", By: `passkey "bob" (via console uid=0)`, Signed: passkeyOf("bob", "console uid=0", 0x0b),
			Approvals: []audit.Approval{{By: "console uid=0 tty=/dev/pts/3", Person: console, Identity: "uid 1000"}}},
			"  allow 1 of 2:   console uid=0 tty=/dev/pts/3\n    person:       uid 1000\n" +
				"    signed:       no: a console, login uid 1000, tty /dev/pts/3\n" +
				"  allow 2 of 2:   passkey \"bob\" (via console uid=0)\n    person:       passkey bob\n" +
				"    signed:       passkey bob, credential 0bff, carried by console uid=0\n"},
		{"passkey then console", audit.DecisionSection{Verdict: "allowed", By: "console uid=0 tty=/dev/pts/3", Approver: console,
			Approvals: []audit.Approval{{By: `passkey "alice"`, Signed: passkeyOf("alice", "r", 0x0a), Identity: "passkey alice"}}},
			"  allow 1 of 2:   passkey \"alice\"\n    person:       passkey alice\n    signed:       passkey alice, credential 0aff, carried by r\n" +
				"  allow 2 of 2:   console uid=0 tty=/dev/pts/3\n    person:       uid 1000\n" +
				"    signed:       no: a console, login uid 1000, tty /dev/pts/3\n"},
		{"one signed decision", audit.DecisionSection{Verdict: "denied", By: `passkey "carol"`, Signed: passkeyOf("carol", "r", 0x0c)},
			"  by:             passkey \"carol\"\n  signed:         passkey carol, credential 0cff, carried by r\n"},
		{"hostile names escaped", audit.DecisionSection{Verdict: "allowed", By: "x", Signed: passkeyOf("d\x1b[2J", "r\x1b]0;t\a", 0x0d),
			Approvals: []audit.Approval{{By: "y\x1b[31m", Signed: passkeyOf("e\x9b1m", "r", 0x0e), Identity: "passkey e\x9b1m"}}},
			"  allow 1 of 2:   y\\x1b[31m\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.d
			got := prettyRecord(audit.Entry{File: "a.jsonl", Line: 2, Record: &audit.Record{Type: audit.TypeDecision, ID: "r", Decision: &d}})
			if !strings.Contains(got, tt.want) {
				t.Errorf("show:\n%s\nwant it to contain:\n%s", got, tt.want)
			}
			if strings.ContainsAny(got, "\x1b\a") || strings.Contains(got, "\x9b") {
				t.Errorf("show prints a control character:\n%q", got)
			}
		})
	}
}
