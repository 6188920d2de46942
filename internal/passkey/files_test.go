package passkey_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
)

// TestSaveRefusesAnEnrolledCredential: enrolling a credential id already
// enrolled under another name, valid or revoked, is refused, and alice's
// signatures still verify as hers (issue 31, finding 8: the second file was
// kept, alice's allows were then refused and audit verify failed on her
// earlier decision).
func TestSaveRefusesAnEnrolledCredential(t *testing.T) {
	s := passkey.Store{Dir: filepath.Join(t.TempDir(), "passkeys")}
	alice := enrol(t, s, "alice")
	bob, err := passkeytest.New("bob", "localhost", "https://localhost:8443")
	if err != nil {
		t.Fatal(err)
	}
	bob.ID = alice.ID
	be, err := bob.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(be); err == nil || !strings.Contains(err.Error(), `already enrolled as "alice"`) {
		t.Fatalf("bob enrolled with alice's credential id: %v, want refused", err)
	}
	sig, err := alice.Sign(statement())
	if err != nil {
		t.Fatal(err)
	}
	if signer, err := s.Verify(sig); err != nil || signer.Name != "alice" {
		t.Fatalf("alice's signature after the refused enrolment: %+v %v", signer, err)
	}
	if err := s.Revoke("alice", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(be); err == nil || !strings.Contains(err.Error(), `already enrolled as "alice"`) {
		t.Fatalf("bob enrolled with revoked alice's credential id: %v, want refused", err)
	}
	keys, err := s.List(true)
	if err != nil {
		t.Fatal(err)
	}
	if name, err := passkey.VerifyWith(keys, sig); err != nil || name != "alice" {
		t.Fatalf("audit verify of alice's signature: %q %v", name, err)
	}
}

// TestListChecksEveryFile: each passkey file is checked whenever it is
// read, not only at enrolment (issue 31, finding 8): its inner name must be
// a valid name and the one its file name gives (bob.json holding
// "name":"alice" signed as alice), and it must be root's and writable by
// nobody else; two files with one credential id under two names are
// refused. Each error quotes the names, so no escape sequence reaches a
// terminal raw.
func TestListChecksEveryFile(t *testing.T) {
	k, err := passkeytest.New("alice", "localhost", "https://localhost:8443")
	if err != nil {
		t.Fatal(err)
	}
	en, err := k.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	write := func(t *testing.T, dir, file, name string, mode os.FileMode) string {
		t.Helper()
		e := en
		e.Name = name
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, file)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string // "" when List takes it
	}{
		{"alice.json holding alice", func(t *testing.T, dir string) { write(t, dir, "alice.json", "alice", 0o600) }, ""},
		{"revoked alice", func(t *testing.T, dir string) {
			write(t, dir, "revoked/alice-1764374400000000000.json", "alice", 0o600)
		}, ""},
		{"bob.json holding alice", func(t *testing.T, dir string) { write(t, dir, "bob.json", "alice", 0o600) },
			`holds the passkey of "alice", not of the name its file name gives ("bob")`},
		{"revoked bob holding alice", func(t *testing.T, dir string) { write(t, dir, "revoked/bob-1764374400000000000.json", "alice", 0o600) },
			`holds the passkey of "alice", not of the name its file name gives ("bob")`},
		{"a name with an escape sequence", func(t *testing.T, dir string) { write(t, dir, "\x1b[2J.json", "\x1b[2J", 0o600) },
			`approver name "\x1b[2J"`},
		{"group-writable", func(t *testing.T, dir string) { write(t, dir, "alice.json", "alice", 0o620) }, "writable by group or others"},
		{"other-writable", func(t *testing.T, dir string) { write(t, dir, "alice.json", "alice", 0o602) }, "writable by group or others"},
		{"another user's", func(t *testing.T, dir string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give the file away")
			}
			if err := os.Chown(write(t, dir, "alice.json", "alice", 0o600), 1000, 1000); err != nil {
				t.Fatal(err)
			}
		}, "owned by uid 1000, not root"},
		{"a symbolic link", func(t *testing.T, dir string) {
			target := write(t, t.TempDir(), "x.json", "alice", 0o600)
			if err := os.Symlink(target, filepath.Join(dir, "alice.json")); err != nil {
				t.Fatal(err)
			}
		}, ""}, // not a regular file: not a passkey, skipped
		{"no credential", func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, "alice.json"), []byte(`{"name":"alice"}`), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "has no credential, relying party or origin"},
		{"one credential under two names", func(t *testing.T, dir string) {
			write(t, dir, "alice.json", "alice", 0o600)
			write(t, dir, "bob.json", "bob", 0o600)
		}, `"alice" and "bob" are enrolled with the same credential id`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := passkeytest.Dir(t)
			tt.setup(t, dir)
			_, err := passkey.Store{Dir: dir}.List(true)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("List: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("List: %v, want an error with %q", err, tt.want)
			case err != nil && strings.ContainsRune(err.Error(), 0x1b):
				t.Fatalf("List's error holds a raw escape: %q", err)
			}
		})
	}
}
