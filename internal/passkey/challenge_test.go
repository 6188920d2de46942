package passkey_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
)

// TestNoEmptyChallenge: a statement whose expiry has the offset +24:00
// cannot be encoded, so it has no challenge, and an assertion over the
// empty challenge (what a browser signs when handed one) verifies for no
// statement, whatever its request, decision or nonce; nor does one over a
// challenge shorter than approval.MinChallenge. Issue 31, finding 6: the
// encoding error was dropped, the challenge was empty, and one such
// assertion verified for every request, in the daemon and in audit verify
// (both call VerifyWith).
func TestNoEmptyChallenge(t *testing.T) {
	s := passkey.Store{Dir: filepath.Join(t.TempDir(), "passkeys")}
	k := enrol(t, s, "alice")
	keys, err := s.List(true)
	if err != nil {
		t.Fatal(err)
	}
	plus24 := time.FixedZone("+24:00", 24*3600)
	st := statement()
	st.Expires = time.Now().Add(time.Minute).In(plus24)
	if c, err := st.Challenge(); err == nil || len(c) != 0 {
		t.Fatalf("Challenge of a statement expiring at offset +24:00: %x %v, want an error and none", c, err)
	}
	sig, err := k.SignChallenge(st, "")
	if err != nil {
		t.Fatal(err)
	}
	other := st
	other.ID, other.Decision, other.Nonce = "r2", approval.DenyOnce, "another-nonce-of-16-bytes"
	for _, tt := range []struct {
		name string
		st   approval.Statement
	}{{"the statement it claims", st}, {"another request, decision and nonce", other}} {
		sig.Statement = tt.st
		if name, err := passkey.VerifyWith(keys, sig); err == nil {
			t.Errorf("%s: an assertion over the empty challenge verified as %q", tt.name, name)
		}
		if signer, err := s.Verify(sig); err == nil {
			t.Errorf("%s: Verify took an assertion over the empty challenge as %q", tt.name, signer.Name)
		}
	}
	for _, short := range []string{"", "AA", strings.Repeat("A", 42)} {
		a, err := k.SignChallenge(statement(), short)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := passkey.VerifyChallenge(keys, short, a.Assertion); err == nil || !strings.Contains(err.Error(), "32 or more bytes") {
			t.Errorf("challenge %q: %v, want it refused as too short", short, err)
		}
	}
}
