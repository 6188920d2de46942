package client

import (
	"errors"
	"fmt"
	"syscall"
)

// ErrUnreachable reports that no connection to the daemon could be opened:
// the socket is missing, nothing listens on it, the caller may not open it,
// or the daemon's backlog is full. Nothing was sent, so retrying is safe.
// Errors that test true for it are of type [*UnreachableError].
var ErrUnreachable = errors.New("agent-sudod unreachable")

// ErrNoAnswer reports that the connection to the daemon was opened but
// reset before the answer came. With systemd's socket this is what a
// client sees when agent-sudod fails to start: the connection waited in the
// socket's queue until systemd gave up starting the daemon and closed the
// socket. The request may or may not have been seen.
var ErrNoAnswer = errors.New("agent-sudod reset the connection without answering")

// UnreachableError is the error for a failed connection to the daemon.
type UnreachableError struct {
	// Socket is the path that was dialled.
	Socket string
	// Err is the dial error, usually a *net.OpError around a syscall.Errno
	// such as ENOENT, ECONNREFUSED or EACCES.
	Err error
}

// Error says which socket could not be reached and why, e.g.
// "cannot reach agent-sudod at /run/agent-sudo/agent-sudo.sock: connection refused".
func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach agent-sudod at %s: %v", e.Socket, e.reason())
}

// reason is the shortest description of why the dial failed: the system
// error's text ("connection refused") when there is one, else Err's text.
// The full *net.OpError would name the socket a second time.
func (e *UnreachableError) reason() string {
	var errno syscall.Errno
	if errors.As(e.Err, &errno) {
		return errno.Error()
	}
	if e.Err == nil {
		return "unknown error"
	}
	return e.Err.Error()
}

// Is reports whether target is ErrUnreachable.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// Unwrap returns the dial error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// DaemonDown reports whether err, from Run or a dial of the daemon's
// socket, means that no daemon is there to answer: the socket is missing
// (ENOENT), nothing listens on it (ECONNREFUSED), or the connection was
// reset unanswered ([ErrNoAnswer], ECONNRESET), as when the daemon failed
// to start and systemd stopped its sockets. Nothing ran then.
func DaemonDown(err error) bool {
	return errors.Is(err, ErrNoAnswer) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}
