package daemon

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"golang.org/x/sys/unix"
)

// watchHangup cancels with approval.ErrWithdrawn when the client goes away. A client
// has nothing more to send after its request line, so the watch reads until
// EOF. EOF alone is not enough: a client may half-close its sending side and
// still wait for the answer, so after EOF the watch polls for POLLHUP, which
// a Unix stream socket reports only once the peer has closed both ways. The
// returned func stops the watch.
func watchHangup(conn *net.UnixConn, cancel context.CancelCauseFunc) (stop func()) {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(done)
		var b [512]byte
		for {
			_, err := conn.Read(b[:])
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return // stopped
			}
			if errors.Is(err, io.EOF) {
				if waitPeerClosed(conn, stopped) {
					cancel(approval.ErrWithdrawn)
				}
				return
			}
			if err != nil {
				cancel(approval.ErrWithdrawn)
				return
			}
		}
	}()
	return func() {
		close(stopped)
		_ = conn.SetReadDeadline(time.Unix(1, 0))
		<-done
		_ = conn.SetReadDeadline(time.Time{})
	}
}

// waitPeerClosed polls conn until its peer has fully closed (true) or stop
// is closed (false).
func waitPeerClosed(conn *net.UnixConn, stop <-chan struct{}) bool {
	raw, err := conn.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	_ = raw.Control(func(fd uintptr) {
		// No events requested: POLLHUP and POLLERR are always reported, and
		// asking for POLLIN would wake at once forever after EOF.
		fds := []unix.PollFd{{Fd: int32(fd)}}
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := unix.Poll(fds, 100)
			if err != nil && !errors.Is(err, unix.EINTR) {
				closed = true
				return
			}
			if n > 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0 {
				closed = true
				return
			}
		}
	})
	return closed
}
