package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

func person(uid uint32) *approval.Person { return &approval.Person{LoginUID: &uid} }

// TestTwoPersonRule: a request that needs two people waits after one
// allow (the console is told so), refuses a second allow by the same
// login identity or by a console without one, and runs once a different
// person allows; the decision lists the first approval. A deny by anyone
// decides at once.
func TestTwoPersonRule(t *testing.T) {
	b := newBroker(time.Hour, nil)
	r, shown, events := askTwoPerson(t, b, pending("tp1"))
	if shown.Request.Approvals != 2 {
		t.Fatalf("pending %+v: the request does not say it needs two people", shown.Request)
	}
	hash := shown.Hash
	alice := approverConsole{By: "console alice", Person: person(1000)}
	note, err := b.decideNote("tp1", hash, approval.AllowOnce, "", alice)
	if err != nil || !strings.Contains(note, "1 of 2") {
		t.Fatalf("first allow: %q %v, want recorded, 1 of 2", note, err)
	}
	if b.Waiting() != 1 {
		t.Fatal("the request no longer waits after one allow")
	}
	if _, err := b.decideNote("tp1", hash, approval.AllowOnce, "", approverConsole{By: "another console of alice", Person: person(1000)}); err == nil || !strings.Contains(err.Error(), "already allowed") {
		t.Fatalf("alice again from another console: %v, want refused", err)
	}
	if _, err := b.decideNote("tp1", hash, approval.AllowOnce, "", approverConsole{By: "console without login"}); !errors.Is(err, ErrNoIdentity) {
		t.Fatalf("a console without a login identity: %v, want ErrNoIdentity", err)
	}
	if _, err := b.decideNote("tp1", hash, approval.AllowSession, "", approverConsole{By: "console bob", Person: person(1001)}); !errors.Is(err, approval.ErrNoSessionGrant) || !strings.Contains(err.Error(), "needs 2 different people") {
		t.Fatalf("allow for the session: %v, want ErrNoSessionGrant saying it needs 2 different people", err)
	}
	if note, err := b.decideNote("tp1", hash, approval.AllowOnce, "", approverConsole{By: "console bob", Person: person(1001)}); err != nil || note != "" {
		t.Fatalf("bob's allow: %q %v", note, err)
	}
	got := <-r
	if got.d.Verdict != approval.Allow || got.d.By != "console bob" || len(got.d.Approvals) != 1 || got.d.Approvals[0].By != "console alice" || got.d.Approvals[0].Identity != "uid 1000" {
		t.Fatalf("decision %+v, want allowed by bob after alice", got.d)
	}

	p2 := pending("tp2")
	p2.Approvals = 2
	r2 := askAsync(context.Background(), b, p2)
	for hash = ""; hash == ""; {
		if m := next(t, events); m.Type == approval.MsgPending && m.ID == "tp2" {
			hash = m.Hash
		}
	}
	if _, err := b.decideNote("tp2", hash, approval.AllowOnce, "", alice); err != nil {
		t.Fatal(err)
	}
	if _, err := b.decideNote("tp2", hash, approval.DenyOnce, "", approverConsole{By: "console carol", Person: person(1002)}); err != nil {
		t.Fatal(err)
	}
	if got := <-r2; got.d.Verdict != approval.Deny || len(got.d.Approvals) != 1 {
		t.Fatalf("tp2: %+v, want denied, with alice's earlier allow recorded", got.d)
	}
}

// TestOnePersonUnchanged: a request without the two-person rule hashes as
// before (no approvals field) and one allow runs it.
func TestOnePersonUnchanged(t *testing.T) {
	s := pending("op").Shown()
	if s.Approvals != 0 {
		t.Fatalf("Approvals %d on a one-person request", s.Approvals)
	}
	b, _ := jsonMarshal(s)
	if strings.Contains(string(b), "approvals") {
		t.Fatalf("a one-person request's JSON names approvals: %s", b)
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// TestTwoPersonApprovedAnnounced: after the first of two allows, every
// subscriber is told who allowed (an approved message naming the request
// and its hash), and one that subscribes later gets it right after the
// request's pending; a deny then resolves it without another approved,
// and a queue not read yet coalesces them.
func TestTwoPersonApprovedAnnounced(t *testing.T) {
	b := newBroker(time.Hour, nil)
	r, shown, events := askTwoPerson(t, b, pending("tp2"))
	hash := shown.Hash
	by := "console uid=1000 \x1b[31malice"
	if _, err := b.decideNote("tp2", hash, approval.AllowOnce, "", approverConsole{By: by, Person: person(1000)}); err != nil {
		t.Fatal(err)
	}
	var got approval.Message
	for got.Type != approval.MsgApproved {
		got = next(t, events)
	}
	if got.ID != "tp2" || got.Hash != hash || len(got.ApprovedBy) != 1 || got.ApprovedBy[0] != by {
		t.Fatalf("approved %+v, want tp2 %s approved by %q", got, hash, by)
	}
	if len(got.ApprovedIdentities) != 1 || got.ApprovedIdentities[0] != "uid 1000" {
		t.Fatalf("approved identities %q, want [uid 1000]: the two-person rule's name for the person", got.ApprovedIdentities)
	}
	waiting, _, cancel2 := b.Subscribe()
	defer cancel2()
	if len(waiting) != 2 || waiting[0].Type != approval.MsgPending || waiting[1].Type != approval.MsgApproved || waiting[1].ApprovedBy[0] != by {
		t.Fatalf("a later subscriber got %+v, want tp2's pending then its approved", waiting)
	}
	if err := b.Decide("tp2", hash, approval.DenyOnce, "", "console bob"); err != nil {
		t.Fatal(err)
	}
	if d := <-r; d.d.Verdict != approval.Deny {
		t.Fatalf("decision %+v, want denied", d.d)
	}
	for m := next(t, events); m.Type != approval.MsgResolved; m = next(t, events) {
		if m.Type == approval.MsgApproved {
			t.Fatalf("a second approved after a deny: %+v", m)
		}
	}
	// In a queue not read yet, a newer approved replaces an older one,
	// and the resolved takes the pending and the approved with it.
	q := &subscriber{wake: make(chan struct{}, 1), done: make(chan struct{})}
	q.push(event{Message: approval.Message{Type: approval.MsgPending, ID: "tp2", Hash: hash}})
	q.push(event{Message: approval.Message{Type: approval.MsgApproved, ID: "tp2", Hash: hash, ApprovedBy: []string{"a"}}})
	q.push(event{Message: approval.Message{Type: approval.MsgApproved, ID: "tp2", Hash: hash, ApprovedBy: []string{"a", "b"}}})
	if len(q.q) != 2 || len(q.q[1].ApprovedBy) != 2 {
		t.Fatalf("queue %+v, want the pending and the newer approved", q.q)
	}
	q.push(event{Message: approval.Message{Type: approval.MsgResolved, ID: "tp2", Hash: hash}})
	if len(q.q) != 0 {
		t.Fatalf("queue %+v after the resolved, want empty", q.q)
	}
}

// TestPasskeyIdentity: a passkey is the person recorded with it at
// enrolment, never its name looked up again (the daemon's static build
// reads /etc/passwd alone, so a directory user's passkey was "passkey
// NAME" and their console "uid N": two people; issue 31, finding 3); a
// passkey recorded with no person cannot count as one of two people.
func TestPasskeyIdentity(t *testing.T) {
	for _, tc := range []struct {
		signed *approval.SignedBy
		want   string
		err    error
	}{
		{&approval.SignedBy{Approver: "dirk", Person: "uid 5123"}, "uid 5123", nil},
		{&approval.SignedBy{Approver: "root", Person: "passkey root"}, "passkey root", nil},
		{&approval.SignedBy{Approver: "root"}, "", ErrPasskeyNoPerson},
	} {
		got, err := identity(approverConsole{Signed: tc.signed})
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("identity(%+v) = %q %v, want %q %v", tc.signed, got, err, tc.want, tc.err)
		}
	}
}

// TestTwoPersonDirectoryUser: a directory user's passkey (recorded at
// enrolment as their uid) and their console (its login uid) are one
// person; a passkey recorded with no person is refused, and the request
// keeps waiting. Issue 31, finding 3.
func TestTwoPersonDirectoryUser(t *testing.T) {
	b := newBroker(time.Hour, nil)
	p := pending("tp-dir")
	p.Record = "record-tp-dir"
	r, shown, _ := askTwoPerson(t, b, p)
	if _, err := b.decideNote("tp-dir", shown.Hash, approval.AllowOnce, "", approverConsole{By: "console of dirk", Person: person(5123)}); err != nil {
		t.Fatalf("dirk's console: %v", err)
	}
	dirk := approverConsole{By: "passkey dirk", Signed: &approval.SignedBy{Approver: "dirk", Person: "uid 5123", Relay: "web",
		Signed: approval.Signed{Statement: approval.Statement{Record: p.Record}}}}
	if _, err := b.decideNote("tp-dir", shown.Hash, approval.AllowOnce, "", dirk); err == nil || !strings.Contains(err.Error(), "already allowed") {
		t.Fatalf("dirk's passkey after dirk's console: %v, want refused as the same person", err)
	}
	old := approverConsole{By: "passkey old", Signed: &approval.SignedBy{Approver: "old", Relay: "web", Signed: approval.Signed{Statement: approval.Statement{Record: p.Record}}}}
	if _, err := b.decideNote("tp-dir", shown.Hash, approval.AllowOnce, "", old); !errors.Is(err, ErrPasskeyNoPerson) {
		t.Fatalf("a passkey with no person: %v, want ErrPasskeyNoPerson", err)
	}
	if b.Waiting() != 1 {
		t.Fatal("the request no longer waits")
	}
	if _, err := b.decideNote("tp-dir", shown.Hash, approval.DenyOnce, "", approverConsole{By: "console of root", Person: person(0)}); err != nil {
		t.Fatal(err)
	}
	if got := <-r; got.d.Verdict != approval.Deny {
		t.Fatalf("decision %+v, want denied", got.d)
	}
}

// TestTwoPersonSamePasskeyTwice: a passkey is one person. Its second allow
// of a request that needs two people is refused, through another relay
// too, and so is the allow of a console whose login user the passkey is
// named after; another passkey's allow then decides.
func TestTwoPersonSamePasskeyTwice(t *testing.T) {
	b := newBroker(time.Hour, nil)
	p := pending("tp3")
	p.Record = "record-tp3" // what a signed statement must name
	r, shown, _ := askTwoPerson(t, b, p)
	hash := shown.Hash
	signed := func(name, relay string) approverConsole {
		person := "passkey " + name
		if name == "root" {
			person = "uid 0"
		}
		return approverConsole{By: "passkey " + name + " via " + relay, Signed: &approval.SignedBy{Approver: name, Person: person, Relay: relay,
			Signed: approval.Signed{Statement: approval.Statement{Record: p.Record}}}}
	}
	if note, err := b.decideNote("tp3", hash, approval.AllowOnce, "", signed("root", "web approver 1")); err != nil || !strings.Contains(note, "1 of 2") {
		t.Fatalf("the first allow: %q %v, want recorded, 1 of 2", note, err)
	}
	for _, who := range []approverConsole{
		signed("root", "web approver 1"),
		signed("root", "web approver 2"),
		{By: "console of root", Person: person(0)},
	} {
		if _, err := b.decideNote("tp3", hash, approval.AllowOnce, "", who); err == nil || !strings.Contains(err.Error(), "already allowed") {
			t.Fatalf("%s: %v, want refused as the same person", who.By, err)
		}
	}
	if b.Waiting() != 1 {
		t.Fatal("the request no longer waits after the same person's allows")
	}
	if _, err := b.decideNote("tp3", hash, approval.AllowOnce, "", signed("no such user alice", "web approver 1")); err != nil {
		t.Fatalf("another passkey's allow: %v", err)
	}
	got := <-r
	if got.d.Verdict != approval.Allow || len(got.d.Approvals) != 1 || got.d.Approvals[0].Identity != "uid 0" {
		t.Fatalf("decision %+v, want allowed after root's passkey", got.d)
	}
}

// askTwoPerson asks b, in the background, for p as a request that needs
// two people, and returns its askOutcome, the pending message announcing it
// and the events of a subscription made before the ask (so that the
// pending comes as an event and not in the first list), read up to it.
func askTwoPerson(t *testing.T, b *broker, p *approval.Pending) (<-chan askOutcome, approval.Message, <-chan event) {
	t.Helper()
	p.Approvals = 2
	_, events, unsubscribe := b.Subscribe()
	t.Cleanup(unsubscribe)
	r := askAsync(context.Background(), b, p)
	for {
		if m := next(t, events); m.Type == approval.MsgPending && m.ID == p.Request.ID {
			return r, m, events
		}
	}
}
