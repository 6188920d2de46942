package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/clienttest"
)

// notRunningSocket makes a socket path in each of the ways a client finds
// agent-sudod not running, and returns it.
type notRunningSocket struct {
	name string
	make func(t *testing.T) string
	// want is in the message besides "agent-sudod is not running" and
	// the journal hint.
	want string
}

var notRunningSockets = []notRunningSocket{
	{"no socket file (ENOENT: the socket units stopped)", func(t *testing.T) string {
		return filepath.Join(t.TempDir(), "agent-sudo.sock")
	}, "no such file or directory"},
	{"a socket file nothing listens on (ECONNREFUSED)", func(t *testing.T) string {
		p := filepath.Join(t.TempDir(), "agent-sudo.sock")
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		ln.SetUnlinkOnClose(false)
		if err := ln.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}, "connection refused"},
	{"a connection reset unanswered (systemd closed the socket: the daemon failed to start)", func(t *testing.T) string {
		return clienttest.ResettingSocket(t)
	}, "reset before it answered"},
}

// TestClientsSayDaemonNotRunning: when agent-sudod is not there to answer
// (its socket is gone, nothing listens, or the connection is reset before
// an answer, as systemd does when the daemon fails to start), status and
// run say at once that it is not running and where to look, with exit 69.
func TestClientsSayDaemonNotRunning(t *testing.T) {
	for _, s := range notRunningSockets {
		for _, args := range [][]string{{"status"}, {"run", "--reason", "test", "--", "id", "-u"}, {"run", "--json", "--reason", "test", "--", "id", "-u"}} {
			t.Run(s.name+"/"+strings.Join(args[:min(2, len(args))], " "), func(t *testing.T) {
				sock := s.make(t)
				got := runCLI(context.Background(), map[string]string{envSocket: sock}, args...)
				for _, want := range []string{"agent-sudod is not running", sock, s.want, "journalctl -u agent-sudo"} {
					if !strings.Contains(got.stderr, want) {
						t.Errorf("%s: stderr %q does not contain %q", args[0], got.stderr, want)
					}
				}
				if got.code != exitUnavailable {
					t.Errorf("%s: exit %d, want %d; stderr %q", args[0], got.code, exitUnavailable, got.stderr)
				}
			})
		}
	}
}

// TestApproveSaysDaemonNotRunning: a console that finds no approver socket
// (the daemon failed and systemd stopped its sockets, or they were never
// started) says the daemon is not running, where to look, and how to start
// it.
func TestApproveSaysDaemonNotRunning(t *testing.T) {
	sock := "/run/agent-sudo/approver.sock"
	for _, errno := range []syscall.Errno{syscall.ENOENT, syscall.ECONNREFUSED, syscall.ECONNRESET} {
		t.Run(errno.Error(), func(t *testing.T) {
			f := &fakeApprove{euid: 0, terminal: true, dialErr: fmt.Errorf("connect to the approver socket %s: %w", sock, &net.OpError{Op: "dial", Net: "unix", Err: errno})}
			got := runApprove(context.Background(), f, nil)
			for _, want := range []string{"agent-sudod is not running", errno.Error(), "journalctl -u agent-sudo", "sudo systemctl reset-failed agent-sudo; sudo systemctl restart agent-sudo"} {
				if !strings.Contains(got.stderr, want) {
					t.Errorf("stderr %q does not contain %q", got.stderr, want)
				}
			}
			if got.code != exitUnavailable {
				t.Errorf("exit %d, want %d", got.code, exitUnavailable)
			}
		})
	}
	// Another reason to fail keeps the general question.
	f := &fakeApprove{euid: 0, terminal: true, dialErr: errors.New("connect: permission denied")}
	if got := runApprove(context.Background(), f, nil); strings.Contains(got.stderr, "is not running") {
		t.Errorf("a refused dial is reported as a daemon not running: %q", got.stderr)
	}
}
