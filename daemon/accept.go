package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/internal/procinfo"
	"github.com/agent-sudo/agent-sudo/proto"
	"golang.org/x/sys/unix"
)

// Serve accepts connections on ln until ctx is cancelled, then shuts down:
// it stops accepting, ends every request still waiting for approval with an
// error (nothing runs), gives running commands up to shutdown_timeout to
// finish before they are killed, answers every connection, and returns.
// ctx is the base of every request. Serve closes ln. A temporary accept
// error (temporaryAccept: out of descriptors or memory, an aborted
// connection) is logged and retried after a pause that doubles from
// minAcceptBackoff up to maxAcceptBackoff; any other, a closed listener
// among them, ends Serve, which returns it. Every goroutine it started has
// ended when it returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// Commands outlive ctx by up to shutdown_timeout, so they get their own
	// context that is cancelled only after that grace; the cause of that
	// cancellation names the grace given (see timeoutMessage).
	execCtx, stopExec := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopExec(nil)
	// The shutdown watcher closes ln when ctx ends, and ends the commands
	// shutdown_timeout later; it stops when Serve returns, whatever the
	// reason, and Serve waits for it.
	done, watcherDone := make(chan struct{}), make(chan struct{})
	defer func() {
		close(done)
		<-watcherDone
	}()
	go func() {
		defer close(watcherDone)
		select {
		case <-ctx.Done():
		case <-done:
			return
		}
		_ = ln.Close()
		grace := s.policy().cfg.ShutdownTimeout
		t := time.NewTimer(grace.Duration)
		defer t.Stop()
		select {
		case <-t.C:
			stopExec(shutdownExpired{grace})
		case <-done:
		}
	}()

	var acceptErr error
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if !temporaryAccept(err) {
				acceptErr = fmt.Errorf("accept: %w", err)
				break
			}
			// Out of descriptors or memory, or a connection aborted
			// before it was taken: wait, as net/http does, and go on.
			backoff = min(max(2*backoff, minAcceptBackoff), maxAcceptBackoff)
			s.warnLimited(s.log, "accept", 0, "accept failed; retrying", "err", err, "retry_in", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
			continue
		}
		backoff = 0
		conn, ok := c.(*net.UnixConn)
		if !ok {
			_ = c.Close()
			continue
		}
		// The peer's credentials are read once, here: the limits below
		// are per user, counting every uid of the user namespaces a user
		// owns as that user (peercred.Creds.Controller). A peer whose
		// credentials cannot be read is handled (and refused) as an
		// unknown non-root uid.
		peer, perr := peercred.Get(conn)
		uid := peer.Controller
		if perr != nil {
			uid = unknownUID
		}
		if ok, after := s.rates.allow(uid, time.Now()); !ok {
			s.refuseConn(conn, uid, "rate", fmt.Sprintf(
				"rate limited: uid %d opened more than %d connections in the last minute (max_requests_per_minute); try again in %s",
				uid, s.rates.perMinute, (after+time.Second-1).Truncate(time.Second)))
			continue
		}
		// A connection that finds no free slot is queued for one, in
		// the order of accept, and told "busy" when the queue is full or
		// has not moved for busyWait (docs/daemon.md, "Connection limits").
		verdict, w, msg := s.limits.admit(uid)
		if verdict == refused {
			s.refuseConn(conn, uid, "busy", msg)
			continue
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			// The requester is pinned first thing, before it can
			// likely exec or pass the socket on; describePeer compares
			// (see procinfo's package doc). Not in the accept loop:
			// pinning stats the peer's program file, which a FUSE
			// mount of the agent's could hold up forever.
			var pin *procinfo.Pin
			if perr == nil {
				pin = procinfo.PinPeer(conn, peer.PID)
			}
			defer pin.Close()
			if verdict == mustWait && !s.limits.wait(ctx, w, busyWait) {
				s.refuseConn(conn, uid, "busy", s.limits.busyMessage(uid))
				return
			}
			defer s.limits.release(uid)
			s.handle(ctx, execCtx, conn, peer, pin, perr)
		}()
	}
	_ = ln.Close()
	s.conns.Wait()
	return acceptErr
}

// The pause after a temporary accept error doubles from minAcceptBackoff
// to maxAcceptBackoff, as in net/http, and starts over after an accept
// that succeeds.
const (
	minAcceptBackoff = 5 * time.Millisecond
	maxAcceptBackoff = time.Second
)

// temporaryAccept reports whether an accept error is one that passes with
// time: the process or the system is out of descriptors (EMFILE, ENFILE) or
// memory (ENOBUFS, ENOMEM), or a connection went away before it was
// accepted (ECONNABORTED), or the call was interrupted. A closed listener
// (net.ErrClosed) and every other error are not.
func temporaryAccept(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	for _, e := range []error{unix.EMFILE, unix.ENFILE, unix.ENOBUFS, unix.ENOMEM, unix.ECONNABORTED, unix.EINTR, unix.EAGAIN} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// unknownUID stands for a peer whose credentials could not be read, for the
// connection limits only; such a peer is always refused.
const unknownUID = 1<<32 - 1

// busyWait is how long a queued connection waits while no slot is handed
// to any waiter before it is told "busy".
const busyWait = time.Second

// logEvery is how often each kind of refusal is logged per uid at most.
const logEvery = 10 * time.Second

// refuseConn answers a connection refused before it is read (busy, rate
// limited) and closes it. Such connections are not audited, since no
// request was read; the log gets at most one line per kind and uid per
// logEvery, saying how many were held back.
func (s *Server) refuseConn(conn *net.UnixConn, uid uint32, kind, msg string) {
	defer conn.Close()
	var line bytes.Buffer
	_ = proto.WriteResponse(&line, &proto.Response{Status: proto.StatusError, Message: msg, Version: Version()})
	_ = writeOnce(conn, line.Bytes()) // a peer that is gone needs no answer
	s.warnLimited(s.log.With("peer_uid", uid), kind, uid, "refused connection", "reason", msg)
}

// writeOnce makes one non-blocking write of b to conn, and fails unless all
// of b was written. A refusal is a short line on a connection nothing has
// been written to, which the socket takes whole at once; one attempt
// without a deadline can neither stall the accept loop nor fail because the
// daemon itself was not scheduled before a deadline passed. (With a 1 s
// write deadline, a daemon overloaded by 200 clients sometimes found the
// deadline gone before it wrote; it then closed the connection with the
// request unread, and the client got a reset instead of "busy: ...".)
func writeOnce(conn *net.UnixConn, b []byte) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var (
		n    int
		werr error
	)
	if err := raw.Write(func(fd uintptr) bool {
		n, werr = unix.Write(int(fd), b)
		return true // one attempt: never wait for the socket
	}); err != nil {
		return err
	}
	if werr != nil {
		return werr
	}
	if n < len(b) {
		return io.ErrShortWrite
	}
	return nil
}

// warnLimited logs a warning on log (which names the peer) at most once per
// logEvery for kind and uid, with the number of lines held back since the
// last one.
func (s *Server) warnLimited(log *slog.Logger, kind string, uid uint32, msg string, args ...any) {
	ok, held := s.logs.allow(fmt.Sprintf("%s/%d", kind, uid), time.Now())
	if !ok {
		return
	}
	if held > 0 {
		args = append(args, "held_back", held)
	}
	log.Warn(msg, append(args, "kind", kind)...)
}
