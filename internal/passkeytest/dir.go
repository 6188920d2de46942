package passkeytest

import (
	"os"
	"testing"
)

// Dir returns a new, empty passkeys directory for a test, under the
// system's temporary directory, mode 0700 (root's alone when the test
// runs as root, as the daemon and the passkey store require), removed
// when the test ends.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pk")
	if err != nil {
		t.Fatalf("passkeys directory: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatalf("passkeys directory: %v", err)
	}
	return dir
}
