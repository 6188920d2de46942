package passkey_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
)

func statement() approval.Statement {
	return approval.Statement{Record: strings.Repeat("a", 64), ID: "r1", Hash: strings.Repeat("b", 64),
		Decision: approval.AllowOnce, Scope: approval.ScopeOnce, Expires: time.Now().Add(time.Minute).UTC(), Nonce: passkeytest.Nonce()}
}

func enrol(t *testing.T, s passkey.Store, name string) *passkeytest.Key {
	t.Helper()
	k, err := passkeytest.New(name, "localhost", "https://localhost:8443")
	if err != nil {
		t.Fatal(err)
	}
	e, err := k.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(e); err != nil {
		t.Fatal(err)
	}
	return k
}

// TestVerify: an enrolled passkey's assertion over a statement verifies
// and names its approver; the same assertion presented for another
// statement, one without user verification, one from another origin, one
// with a flipped signature byte and one from a passkey that was revoked
// do not.
func TestVerify(t *testing.T) {
	s := passkey.Store{Dir: filepath.Join(t.TempDir(), "passkeys")}
	k := enrol(t, s, "alice")
	st := statement()
	sig, err := k.Sign(st)
	if err != nil {
		t.Fatal(err)
	}
	if signer, err := s.Verify(sig); err != nil || signer.Name != "alice" {
		t.Fatalf("Verify: %+v %v, want alice", signer, err)
	}

	other := sig
	other.Statement.ID = "r2"
	if _, err := s.Verify(other); err == nil || !strings.Contains(err.Error(), "challenge") {
		t.Errorf("assertion for another statement: %v, want a challenge error", err)
	}
	k.NoUV = true
	noUV, _ := k.Sign(st)
	k.NoUV = false
	if _, err := s.Verify(noUV); err == nil {
		t.Error("assertion without user verification verified")
	}
	k2, _ := passkeytest.New("alice", "localhost", "https://evil.example")
	k2.ID, k2.UserID = k.ID, k.UserID
	if wrong, _ := k2.Sign(st); true {
		if _, err := s.Verify(wrong); err == nil {
			t.Error("assertion from another origin and key verified")
		}
	}
	flipped := sig
	flipped.Assertion.Signature = append([]byte{}, sig.Assertion.Signature...)
	flipped.Assertion.Signature[len(flipped.Assertion.Signature)-1] ^= 1
	if _, err := s.Verify(flipped); err == nil {
		t.Error("assertion with a flipped signature byte verified")
	}

	if err := s.Revoke("alice", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(sig); err == nil || !strings.Contains(err.Error(), "not enrolled") {
		t.Errorf("revoked passkey: %v, want not enrolled", err)
	}
	all, err := s.List(true)
	if err != nil || len(all) != 1 || all[0].Revoked.IsZero() {
		t.Fatalf("List(revoked) = %+v %v, want alice, revoked", all, err)
	}
	if name, err := passkey.VerifyWith(all, sig); err != nil || name != "alice" {
		t.Errorf("VerifyWith the revoked keys (as audit verify does): %q %v", name, err)
	}
}

// TestStoreRefusesOpenDir: a passkey directory others can read or write is
// refused, as is a second enrolment under a name already enrolled.
func TestStoreRefusesOpenDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the store checks that root owns the directory: run as root")
	}
	s := passkey.Store{Dir: filepath.Join(t.TempDir(), "passkeys")}
	k := enrol(t, s, "bob")
	e, _ := k.Enrolled()
	if err := s.Save(e); err == nil {
		t.Error("a second bob was enrolled")
	}
	if err := os.Chmod(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(false); err == nil || !strings.Contains(err.Error(), "0700") {
		t.Errorf("List of a 0755 directory: %v, want refused", err)
	}
	if err := passkey.CheckName("Bob; rm"); err == nil {
		t.Error("a name with a space and a semicolon passed")
	}
}

// TestPublicKeysAndStamp: the stamp of a missing directory is "none";
// enrolling, revoking and opening up the directory each change it; the
// public keys are the valid passkeys' public part, which verifies an
// assertion as the stored passkey does.
func TestPublicKeysAndStamp(t *testing.T) {
	s := passkey.Store{Dir: filepath.Join(t.TempDir(), "passkeys")}
	stamp := func() string {
		t.Helper()
		st, _, err := s.KeysStamp()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := stamp(); st != "none" {
		t.Fatalf("stamp of a missing directory %q", st)
	}
	seen := map[string]string{}
	step := func(what string) {
		t.Helper()
		st := stamp()
		if prev, ok := seen[st]; ok {
			t.Fatalf("the stamp after %s is the one after %s", what, prev)
		}
		seen[st] = what
	}
	alice := enrol(t, s, "alice")
	step("alice's enrolment")
	enrol(t, s, "bob")
	step("bob's enrolment")
	if err := s.Revoke("bob", time.Now()); err != nil {
		t.Fatal(err)
	}
	step("bob's revocation")
	keys, err := s.PublicKeys()
	if err != nil || len(keys) != 1 || keys[0].Name != "alice" || string(keys[0].CredentialID) != string(alice.ID) || len(keys[0].PublicKey) == 0 {
		t.Fatalf("public keys %+v %v, want alice's alone", keys, err)
	}
	st := statement()
	sig, err := alice.Sign(st)
	if err != nil {
		t.Fatal(err)
	}
	if name, err := passkey.VerifyWith([]passkey.Enrolled{passkey.FromPublic(keys[0])}, sig); err != nil || name != "alice" {
		t.Fatalf("verify with the public part: %q %v", name, err)
	}
	if err := os.Chmod(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	step("chmod 0755")
	if _, err := s.PublicKeys(); err == nil && os.Geteuid() == 0 {
		t.Error("the public keys of a 0755 directory were read")
	}
}
