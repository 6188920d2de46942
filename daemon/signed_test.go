package daemon

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

// fakeVerifier takes an assertion whose signature is the statement's
// challenge as made by "alice": the channel's checks around the signature
// are what these tests prove (internal/passkey tests the signatures).
type fakeVerifier struct{}

func (fakeVerifier) Verify(s approval.Signed) (approval.Signer, error) {
	c, err := s.Statement.Challenge()
	if err != nil {
		return approval.Signer{}, err
	}
	if !bytes.Equal(s.Assertion.Signature, c) {
		return approval.Signer{}, errors.New("bad signature")
	}
	return approval.Signer{Name: "alice", Person: "passkey alice"}, nil
}

// fakeSign signs st's challenge; a statement with no challenge gets an
// empty signature, as a browser signs the empty challenge it was given.
func fakeSign(st approval.Statement) *approval.Signed {
	c, err := st.Challenge()
	if err != nil {
		c = nil
	}
	return &approval.Signed{Statement: st, Assertion: approval.Assertion{Signature: c}}
}

// serveSigned serves b's channel with signed decisions checked by
// fakeVerifier, to a Client.
func serveSigned(t *testing.T, b *broker, sigs *approval.Signatures) *approval.Client {
	t.Helper()
	server, client := net.Pipe()
	ch := &approverChannel{Broker: b, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Signatures: sigs}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer server.Close()
		ch.Serve(context.Background(), server, approverConsole{By: "web relay"})
	}()
	t.Cleanup(func() {
		_ = client.Close()
		<-done
	})
	return approval.NewClient(client)
}

func freshNonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func statementFor(p approval.Message, d approval.Choice) approval.Statement {
	return approval.Statement{Record: p.Record, ID: p.ID, Hash: p.Hash, Decision: d, Scope: approval.ScopeOnce,
		Expires: time.Now().Add(time.Minute), Nonce: freshNonce()}
}

// TestSignedOnly: a connection that sent signed_only cannot decide,
// revoke, stop or watch without a signature; a decision signed for the
// request it names is taken, and the decision carries who signed it; the
// same signed decision sent again, one signed for another request, one
// naming another audit record, one signed for deny but sent as allow, and
// one that would make a session grant are refused.
func TestSignedOnly(t *testing.T) {
	b := newBroker(time.Hour, nil)
	p1, p2 := pending("s1"), pending("s2")
	p1.Record, p2.Record = strings.Repeat("1", 64), strings.Repeat("2", 64)
	r1 := askAsync(context.Background(), b, p1)
	r2 := askAsync(context.Background(), b, p2)
	c := serveSigned(t, b, &approval.Signatures{Verifier: fakeVerifier{}})
	// Both pending first: recvType skips what it does not look for.
	var pend []approval.Message
	for len(pend) < 2 {
		pend = append(pend, recvType(t, c, approval.MsgPending))
	}
	if err := c.Send(approval.Message{Type: approval.MsgSignedOnly}); err != nil {
		t.Fatal(err)
	}
	if res := recvType(t, c, approval.MsgResult); !res.OK {
		t.Fatalf("signed_only answered %+v", res)
	}
	// The two asks race: take them by id.
	if pend[0].ID != "s1" {
		pend[0], pend[1] = pend[1], pend[0]
	}
	a, other := pend[0], pend[1]
	if a.ID != "s1" || a.Record != p1.Record {
		t.Fatalf("pending %+v, want s1 with its record", a)
	}
	expectErr := func(what string, m approval.Message, want string) {
		t.Helper()
		if err := c.Send(m); err != nil {
			t.Fatal(err)
		}
		res := recvType(t, c, approval.MsgResult)
		if res.OK || !strings.Contains(res.Error, want) {
			t.Errorf("%s: result %+v, want an error with %q", what, res, want)
		}
	}
	expectErr("unsigned decide", approval.Message{Type: approval.MsgDecide, ID: a.ID, Hash: a.Hash, Decision: approval.AllowOnce}, "signed decisions")
	expectErr("revoke", approval.Message{Type: approval.MsgRevoke, Grant: "g1"}, "signed decisions")
	expectErr("watch", approval.Message{Type: approval.MsgWatch}, "signed decisions")
	expectErr("signed for the other request", approval.Message{Type: approval.MsgDecide, ID: a.ID, Hash: a.Hash, Decision: approval.AllowOnce,
		Signed: fakeSign(statementFor(other, approval.AllowOnce))}, "another request")
	wrongRecord := statementFor(a, approval.AllowOnce)
	wrongRecord.Record = other.Record
	expectErr("another audit record", approval.Message{Type: approval.MsgDecide, ID: a.ID, Hash: a.Hash, Decision: approval.AllowOnce,
		Signed: fakeSign(wrongRecord)}, "another audit record")
	expectErr("deny signed, allow sent", approval.Message{Type: approval.MsgDecide, ID: a.ID, Hash: a.Hash, Decision: approval.AllowOnce,
		Signed: fakeSign(statementFor(a, approval.DenyOnce))}, "another request or decision")
	forged := fakeSign(statementFor(a, approval.AllowOnce))
	forged.Assertion.Signature = []byte("forged")
	expectErr("forged signature", approval.Message{Type: approval.MsgDecide, ID: a.ID, Hash: a.Hash, Decision: approval.AllowOnce, Signed: forged}, "bad signature")
	// A signature never makes a session grant (docs/security.md, "The
	// web approver"): neither as allow_session nor with another scope.
	expectErr("allow for the session, signed", approval.Message{Type: approval.MsgDecide, ID: a.ID, Hash: a.Hash, Decision: approval.AllowSession,
		Signed: fakeSign(statementFor(a, approval.AllowSession))}, "a signature decides")
	sessionScope := statementFor(a, approval.AllowOnce)
	sessionScope.Scope = "session"
	expectErr("scope session", approval.Message{Type: approval.MsgDecide, ID: a.ID, Hash: a.Hash, Decision: approval.AllowOnce, Signed: fakeSign(sessionScope)}, "scope \"session\"")
	long := statementFor(a, approval.AllowOnce)
	long.Expires = time.Now().Add(time.Hour)
	expectErr("valid for an hour", approval.Message{Type: approval.MsgDecide, ID: a.ID, Hash: a.Hash, Decision: approval.AllowOnce, Signed: fakeSign(long)}, "more than")

	good := approval.Message{Type: approval.MsgDecide, ID: a.ID, Hash: a.Hash, Decision: approval.AllowOnce, Signed: fakeSign(statementFor(a, approval.AllowOnce))}
	if err := c.Send(good); err != nil {
		t.Fatal(err)
	}
	if res := recvType(t, c, approval.MsgResult); !res.OK {
		t.Fatalf("signed decision: %+v", res)
	}
	got := <-r1
	if got.err != nil || got.d.Verdict != approval.Allow || got.d.Signed == nil || got.d.Signed.Approver != "alice" ||
		got.d.Signed.Relay != "web relay" || !strings.Contains(got.d.By, `passkey "alice"`) {
		t.Fatalf("Ask returned %+v %v, want allowed, signed by alice via the relay", got.d, got.err)
	}
	expectErr("the same signed decision again", good, "replay")

	// The other request is still waiting: none of the refusals touched it.
	if err := c.Send(approval.Message{Type: approval.MsgDecide, ID: other.ID, Hash: other.Hash, Decision: approval.DenyOnce, Signed: fakeSign(statementFor(other, approval.DenyOnce))}); err != nil {
		t.Fatal(err)
	}
	if res := recvType(t, c, approval.MsgResult); !res.OK {
		t.Fatalf("signed deny: %+v", res)
	}
	if got := <-r2; got.d.Verdict != approval.Deny || got.d.Signed == nil {
		t.Fatalf("s2: %+v, want denied with a signature", got.d)
	}
}

// TestSignedRefusedWithoutPasskeys: a daemon without a Verifier refuses a
// signed decision rather than taking it unchecked.
func TestSignedRefusedWithoutPasskeys(t *testing.T) {
	b := newBroker(time.Hour, nil)
	p := pending("s3")
	p.Record = strings.Repeat("3", 64)
	r := askAsync(context.Background(), b, p)
	c := serveSigned(t, b, nil)
	a := recvType(t, c, approval.MsgPending)
	if err := c.Send(approval.Message{Type: approval.MsgDecide, ID: a.ID, Hash: a.Hash, Decision: approval.AllowOnce, Signed: fakeSign(statementFor(a, approval.AllowOnce))}); err != nil {
		t.Fatal(err)
	}
	if res := recvType(t, c, approval.MsgResult); res.OK || !strings.Contains(res.Error, "no passkeys") {
		t.Fatalf("result %+v, want refused: no passkeys", res)
	}
	if b.Waiting() != 1 {
		t.Fatal("the request no longer waits")
	}
	_ = r
}

// acceptAll is a Verifier that takes any signature, as alice's.
type acceptAll struct{}

func (acceptAll) Verify(approval.Signed) (approval.Signer, error) {
	return approval.Signer{Name: "alice", Person: "passkey alice"}, nil
}

// TestSignedWithoutChallengeRefused: a statement that has no challenge (its
// expiry at the offset +24:00 cannot be encoded) is refused before any
// verifier sees it, whatever the verifier would say. Issue 31, finding 6.
func TestSignedWithoutChallengeRefused(t *testing.T) {
	g := &approval.Signatures{Verifier: acceptAll{}}
	st := approval.Statement{Record: "r", ID: "x", Hash: "h", Decision: approval.AllowOnce, Scope: approval.ScopeOnce,
		Expires: time.Now().Add(time.Minute).In(time.FixedZone("+24:00", 24*3600)), Nonce: freshNonce()}
	if by, err := g.Check("x", "h", approval.AllowOnce, &approval.Signed{Statement: st}, "relay"); err == nil || !strings.Contains(err.Error(), "cannot be encoded") {
		t.Fatalf("a statement with no challenge: %+v %v, want refused", by, err)
	}
	st.Expires = st.Expires.UTC()
	if by, err := g.Check("x", "h", approval.AllowOnce, &approval.Signed{Statement: st}, "relay"); err != nil || by.Approver != "alice" {
		t.Fatalf("the same statement in UTC: %+v %v, want taken", by, err)
	}
}
