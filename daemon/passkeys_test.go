package daemon

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

// keySource is fakeVerifier with passkeys that a test changes.
type keySource struct {
	fakeVerifier
	mu      sync.Mutex
	keys    []approval.PublicKey
	err     error
	changes int
}

func (k *keySource) PublicKeys() ([]approval.PublicKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys, k.err
}

func (k *keySource) KeysStamp() (string, time.Time, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return strconv.Itoa(k.changes), time.Time{}, nil
}

func (k *keySource) set(err error, keys ...approval.PublicKey) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys, k.err = keys, err
	k.changes++
}

// nextKeys reads c until a passkeys message.
func nextKeys(t *testing.T, c *approval.Client) approval.Message {
	t.Helper()
	for {
		m, err := c.Recv(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if m.Type == approval.MsgPasskeys {
			return m
		}
	}
}

// TestSignedOnlySendsPasskeys: a connection that sends signed_only gets
// the answer, then the passkeys' public part, then the passkeys again
// each time they change (and only then), with the reason when they cannot
// be read; a connection that does not is never sent them.
func TestSignedOnlySendsPasskeys(t *testing.T) {
	b := newBroker(time.Hour, nil)
	ks := &keySource{}
	ks.set(nil, approval.PublicKey{Name: "alice", CredentialID: []byte{1}, PublicKey: []byte{2}, Identity: "uid 5123"})
	sigs := &approval.Signatures{Verifier: ks, KeysPoll: time.Millisecond}

	plain := serveSigned(t, b, sigs)
	c := serveSigned(t, b, sigs)
	if err := c.Send(approval.Message{Type: approval.MsgSignedOnly}); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := c.Recv(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if m.Type == approval.MsgPasskeys {
			t.Fatal("the passkeys came before the answer to signed_only")
		}
		if m.Type == approval.MsgResult {
			if !m.OK {
				t.Fatalf("signed_only: %+v", m)
			}
			break
		}
	}
	if m := nextKeys(t, c); len(m.Passkeys) != 1 || m.Passkeys[0].Name != "alice" || m.Error != "" {
		t.Fatalf("first passkeys %+v, want alice's", m)
	} else if m.Passkeys[0].Identity != "uid 5123" {
		t.Fatalf("alice's passkey is sent as person %q, want the one recorded with it, %q", m.Passkeys[0].Identity, "uid 5123")
	}
	// A second signed_only starts nothing more.
	if err := c.Send(approval.Message{Type: approval.MsgSignedOnly}); err != nil {
		t.Fatal(err)
	}
	ks.set(nil, approval.PublicKey{Name: "alice", CredentialID: []byte{1}, PublicKey: []byte{2}}, approval.PublicKey{Name: "bob", CredentialID: []byte{3}, PublicKey: []byte{4}})
	if m := nextKeys(t, c); len(m.Passkeys) != 2 || m.Passkeys[1].Name != "bob" {
		t.Fatalf("after bob's enrolment %+v, want alice and bob", m)
	}
	// A change of stamp with the same keys sends nothing; the next change
	// does.
	ks.set(nil, approval.PublicKey{Name: "alice", CredentialID: []byte{1}, PublicKey: []byte{2}}, approval.PublicKey{Name: "bob", CredentialID: []byte{3}, PublicKey: []byte{4}})
	ks.set(errors.New("mode 0755"))
	if m := nextKeys(t, c); len(m.Passkeys) != 0 || m.Error != "the daemon cannot read its passkeys: mode 0755" {
		t.Fatalf("unreadable passkeys %+v, want none and the reason", m)
	}
	ks.set(nil)
	if m := nextKeys(t, c); len(m.Passkeys) != 0 || m.Error != "" {
		t.Fatalf("every passkey revoked %+v, want none and no error", m)
	}

	// The connection that never sent signed_only: its next message after
	// its greeting is the answer to its watch.
	if err := plain.Watch(); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := plain.Recv(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if m.Type == approval.MsgPasskeys {
			t.Fatalf("a connection that did not send signed_only got %+v", m)
		}
		if m.Type == approval.MsgRunning {
			break
		}
	}
}

// TestPasskeysOverTheLineLimit: passkeys whose listing would be longer
// than MaxLine are answered with a passkeys message listing none and
// saying why, not with a result for no request (issue 31, finding 10: it
// came as a result with an empty id, which no relay reads as the
// passkeys').
func TestPasskeysOverTheLineLimit(t *testing.T) {
	b := newBroker(time.Hour, nil)
	ks := &keySource{}
	ks.set(nil, approval.PublicKey{Name: "alice", CredentialID: []byte{1}, PublicKey: make([]byte, approval.MaxLine)})
	c := serveSigned(t, b, &approval.Signatures{Verifier: ks, KeysPoll: time.Hour})
	if err := c.Send(approval.Message{Type: approval.MsgSignedOnly}); err != nil {
		t.Fatal(err)
	}
	if r := recvType(t, c, approval.MsgResult); !r.OK {
		t.Fatalf("signed_only: %+v", r)
	}
	m, err := c.Recv(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if m.Type != approval.MsgPasskeys || len(m.Passkeys) != 0 || !strings.Contains(m.Error, "more than the approver channel's limit") {
		t.Fatalf("after signed_only: %+v, want a passkeys message listing none and saying why", m)
	}
}
