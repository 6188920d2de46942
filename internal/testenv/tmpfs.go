package testenv

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// Tmpfs mounts a tmpfs of size bytes (mode 0755) on a fresh directory for
// the test and returns it, or skips the test when it cannot (not root,
// -short, or no mount allowed here). It is detached at the test's end,
// after the cleanups registered later (a daemon writing there) have run.
func Tmpfs(t testing.TB, size int) string {
	t.Helper()
	NeedsRoot(t)
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
