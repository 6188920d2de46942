package daemontest

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Mark is a named pipe in the daemon's directory through which a command
// the daemon runs tells the test that it got somewhere, so that the test
// waits for that event instead of a guessed time: the command runs Shell,
// which blocks until the test's Wait has read it.
type Mark struct {
	t    testing.TB
	path string
}

// Mark makes a named pipe called name in d.Dir that any user's command can
// write to.
func (d *Daemon) Mark(name string) *Mark {
	d.t.Helper()
	path := filepath.Join(d.Dir, name)
	if err := syscall.Mkfifo(path, 0o666); err != nil {
		d.t.Fatalf("mkfifo %s: %v", path, err)
	}
	// The umask may have narrowed the mode.
	if err := os.Chmod(path, 0o666); err != nil {
		d.t.Fatal(err)
	}
	return &Mark{t: d.t, path: path}
}

// Shell is the shell command that reaches the mark: it writes a line to
// the pipe, blocking until the test reads it.
func (m *Mark) Shell() string { return "echo reached > '" + m.path + "'" }

// Wait blocks until a command has run Shell, failing the test after 30s.
func (m *Mark) Wait() {
	m.t.Helper()
	done := make(chan error, 1)
	go func() {
		f, err := os.Open(m.path) // blocks until a writer opens the pipe
		if err == nil {
			_, err = io.ReadAll(f)
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			m.t.Fatalf("read the mark %s: %v", m.path, err)
		}
	case <-time.After(30 * time.Second):
		// Release the reader blocked in open.
		if f, err := os.OpenFile(m.path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		m.t.Fatalf("no command reached the mark %s within 30s", m.path)
	}
}
