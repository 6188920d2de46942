package daemon_test

import (
	"encoding/json"
	"os/exec"
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

// TestE2ESignedDecision: a console that sent signed_only (as the web
// approver does) cannot decide without a passkey's signature; a decision
// signed by an enrolled passkey over a statement naming the request's
// audit record runs the command; the same signed decision sent again is
// refused; the audit log records the approver, the credential and the
// assertion, and audit verify checks the signature offline, reporting one
// that does not verify against the enrolled key.
func TestE2ESignedDecision(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	keys := passkeytest.Dir(t)
	store := passkey.Store{Dir: keys}
	k, err := passkeytest.New("alice", "localhost", "https://localhost:8443")
	if err != nil {
		t.Fatal(err)
	}
	e, err := k.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Save(e); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "30s", Extra: "passkeys = " + `"` + keys + `"`})
	c := daemontest.Dial(t, d.ApproverSocket)
	c.Send(approval.Message{Type: approval.MsgSignedOnly})
	if r := c.NextOf(approval.MsgResult); !r.OK {
		t.Fatalf("signed_only: %+v", r)
	}

	asked := d.Ask(t, &proto.Request{ID: "sig-1", Pipeline: [][]string{{"echo", "signed"}}, Session: "s1", Reason: "test", Time: time.Now()})
	p := c.Pending("sig-1")
	if len(p.Record) != 64 {
		t.Fatalf("pending %+v: no audit record hash", p)
	}
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce})
	if r := c.Result("sig-1"); r.OK || !strings.Contains(r.Error, "signed decisions") {
		t.Fatalf("unsigned decision on a signed-only channel: %+v", r)
	}
	st := approval.Statement{Record: p.Record, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce,
		Scope: approval.ScopeOnce, Expires: time.Now().Add(time.Minute).UTC(), Nonce: passkeytest.Nonce()}
	sig, err := k.Sign(st)
	if err != nil {
		t.Fatal(err)
	}
	decide := approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce, Signed: &sig}
	c.Send(decide)
	if r := c.Result("sig-1"); !r.OK {
		t.Fatalf("signed decision: %+v", r)
	}
	if resp := asked.Wait(); resp.Status != proto.StatusOK || string(resp.Stdout) != "signed\n" {
		t.Fatalf("response %+v, want the command's output", resp)
	}
	c.Send(decide)
	if r := c.Result("sig-1"); r.OK {
		t.Fatalf("the same signed decision again: %+v, want refused", r)
	}

	var dec *audit.SignedBy
	for _, r := range d.AuditRecords("sig-1") {
		if r.Decision != nil {
			dec = r.Decision.Signed
			if r.Ref != p.Record {
				t.Errorf("decision record ref %s, but the pending message named %s", r.Ref, p.Record)
			}
		}
	}
	if dec == nil || dec.Approver != "alice" || string(dec.Assertion.CredentialID) != string(k.ID) || len(dec.Assertion.Signature) == 0 {
		t.Fatalf("decision record's signed: %+v, want alice's assertion", dec)
	}

	_, cli := daemontest.Binaries(t)
	out, err := exec.Command(cli, "audit", "verify", "--log", d.AuditLog, "--passkeys", keys).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "signed decisions: 1, every signature verified") {
		t.Fatalf("audit verify: %v\n%s", err, out)
	}
	// Another key enrolled under alice's credential id: the signature in
	// the log does not verify against it.
	forged := filepath.Join(t.TempDir(), "forged")
	other, _ := passkeytest.New("alice", "localhost", "https://localhost:8443")
	other.ID, other.UserID = k.ID, k.UserID
	oe, _ := other.Enrolled()
	if err := (passkey.Store{Dir: forged}).Save(oe); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(cli, "audit", "verify", "--log", d.AuditLog, "--passkeys", forged).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 65 || !strings.Contains(string(out), "signed decision does not verify") {
		t.Fatalf("audit verify against another key: %v\n%s; want status 65 naming the decision", err, out)
	}
}

// TestE2ESignedEmptyChallenge: over the real daemon, a signed decision
// whose statement expires at an offset of +24:00 (which no statement can be
// encoded with, so it has no challenge) and whose assertion is over the
// empty challenge is refused, and the request still waits for a decision.
// Issue 31, finding 6: the daemon took it (one such assertion verified for
// any request, either decision) and the request was errored out with a
// false "audit log unavailable".
func TestE2ESignedEmptyChallenge(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	keys := passkeytest.Dir(t)
	k, err := passkeytest.New("alice", "localhost", "https://localhost:8443")
	if err != nil {
		t.Fatal(err)
	}
	e, err := k.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	if err := (passkey.Store{Dir: keys}).Save(e); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "30s", Extra: "passkeys = " + `"` + keys + `"`})
	c := daemontest.Dial(t, d.ApproverSocket)
	asked := d.Ask(t, &proto.Request{ID: "empty-1", Pipeline: [][]string{{"echo", "signed"}}, Session: "s1", Reason: "test", Time: time.Now()})
	p := c.Pending("empty-1")
	exp := time.Now().Add(time.Minute).UTC().Truncate(time.Second)
	st := approval.Statement{Record: p.Record, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce,
		Scope: approval.ScopeOnce, Expires: exp, Nonce: passkeytest.Nonce()}
	sig, err := k.SignChallenge(st, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce, Signed: &sig})
	if err != nil {
		t.Fatal(err)
	}
	// The same instant at +24:00: the next day's date, the same clock.
	utc, plus24 := exp.Format(time.RFC3339), exp.Add(24*time.Hour).Format("2006-01-02T15:04:05")+"+24:00"
	line := strings.Replace(string(b), `"expires":"`+utc+`"`, `"expires":"`+plus24+`"`, 1)
	if line == string(b) {
		t.Fatalf("no expires %q in %s", utc, b)
	}
	c.SendLine(line)
	if r := c.NextOf(approval.MsgResult); r.OK || !strings.Contains(r.Error, "timezone hour out of range") {
		t.Fatalf("a signed decision over the empty challenge: %+v, want it refused for its expiry", r)
	}
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.DenyOnce})
	if r := c.Result("empty-1"); !r.OK {
		t.Fatalf("the deny after it: %+v", r)
	}
	if resp := asked.Wait(); resp.Status != proto.StatusDenied {
		t.Fatalf("response %+v, want denied by the console's deny", resp)
	}
}
