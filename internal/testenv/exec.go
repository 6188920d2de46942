package testenv

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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

// CopyExecutable copies the program at src to dst (mode 0755 when it
// creates the file), as WriteExecutable writes one, and fails the test if
// it cannot. The bytes go from file to file in the kernel (io.Copy between
// two files is copy_file_range): a race-built test that read a
// race-built program of tens of megabytes into its memory paid the race
// detector for every byte, a tenth of the daemon's tests' CPU time
// (docs/performance.md, "How long the tests take").
func CopyExecutable(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatalf("read the program to copy: %v", err)
	}
	defer in.Close()
	syscall.ForkLock.RLock() // no fork while the descriptor is open
	err = copyFile(dst, in)
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatalf("copy the program %s to %s: %v", src, dst, err)
	}
}

// copyFile writes what in holds to path, created with mode 0755.
func copyFile(path string, in *os.File) error {
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// PublicCopy copies the program at src into a new directory under parent
// (the system's temporary directory when parent is ""), which every user
// can enter, as name, which every user can run, and returns the copy's
// path. The directory is removed when the test ends. It is for running a
// program as another user, when src lies where only root can reach it.
func PublicCopy(t testing.TB, parent, src, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp(parent, "public")
	if err != nil {
		t.Fatalf("a directory for %s: %v", name, err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("open %s to every user: %v", dir, err)
	}
	path := filepath.Join(dir, name)
	CopyExecutable(t, src, path)
	return path
}

// WaitForFile waits up to a minute for the file at path, which another
// process writes (whole, by rename), to exist and hold want (any content
// when want is ""), and returns its content; it fails the test after that.
func WaitForFile(t testing.TB, path, want string) string {
	t.Helper()
	for range 1200 {
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), want) {
			return string(b)
		}
		time.Sleep(50 * time.Millisecond) // polling for a file another process writes
	}
	t.Fatalf("%s does not exist or does not hold %q after a minute", path, want)
	return ""
}
