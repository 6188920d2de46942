package testenv

import (
	"os"
	"syscall"
	"testing"
)

// WriteExecutable writes data to path as a program (mode 0755 when it
// creates the file) that can be run at once, and fails the test if it
// cannot. It holds syscall.ForkLock while the file is open for writing: a
// process that a parallel test forked meanwhile would otherwise inherit the
// descriptor until it execs, and running path would fail with "text file
// busy" (ETXTBSY) until then (golang/go#22315).
func WriteExecutable(t testing.TB, path string, data []byte) {
	t.Helper()
	syscall.ForkLock.RLock() // no fork while the descriptor is open
	err := os.WriteFile(path, data, 0o755)
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatalf("write the program %s: %v", path, err)
	}
}
