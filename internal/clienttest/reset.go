package clienttest

import (
	"net"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// ResettingSocket returns the path of a socket whose every connection is
// reset unanswered once its request has arrived: the peer closes with the
// request unread in its queue (ECONNRESET), as systemd's closing of its
// socket does to the connections queued for a daemon that failed to start.
func ResettingSocket(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agent-sudo.sock")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			waitReadable(c)
			_ = c.Close()
		}
	}()
	return p
}

// waitReadable waits (up to 10s) until c has data to read, without reading
// it.
func waitReadable(c net.Conn) {
	rc, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		_, _ = unix.Poll(fds, 10_000)
	})
}
