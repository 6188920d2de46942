package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/approval"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
)

// maxApproverLine bounds one line a console sends; decisions are small.
const maxApproverLine = 4 << 20

// approverServer serves the approver channel: the root-only socket that
// consoles connect to. It is the only way, besides the daemon's own
// terminal, that a decision reaches the broker; the agent socket has no
// message that decides anything.
type approverServer struct {
	broker *approval.Broker
	log    *slog.Logger
	conns  sync.WaitGroup
}

// serve accepts consoles on ln until ctx ends, then closes them all.
func (a *approverServer) serve(ctx context.Context, ln net.Listener) {
	go func() {
		<-ctx.Done()
		_ = ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		conn, ok := c.(*net.UnixConn)
		if !ok {
			_ = c.Close()
			continue
		}
		a.conns.Add(1)
		go func() {
			defer a.conns.Done()
			a.handle(ctx, conn)
		}()
	}
	a.conns.Wait()
}

func (a *approverServer) handle(ctx context.Context, conn *net.UnixConn) {
	defer conn.Close()
	peer, err := peercred.Get(conn)
	if err != nil {
		a.log.Error("approver channel: cannot identify peer", "err", err)
		return
	}
	// The socket file is 0600 root, so only root can connect; checking the
	// kernel's word again guards against a mis-set mode or a socket passed
	// on by someone else.
	if peer.UID != 0 {
		a.log.Warn("approver channel: refused non-root peer", "peer_uid", peer.UID, "peer_pid", peer.PID)
		_ = json.NewEncoder(conn).Encode(approval.Message{Type: approval.MsgResult,
			Error: fmt.Sprintf("not allowed: the approver channel is for root only, and uid %d is not root", peer.UID)})
		return
	}
	by := consoleName(peer)
	log := a.log.With("console", by)
	log.Info("console connected")
	defer log.Info("console disconnected")

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	waiting, events, unsubscribe := a.broker.Subscribe()
	defer unsubscribe()

	// The greeting, the grants and what already waits are written before
	// live events, so a console never sees a request resolved before it
	// saw it pending.
	grants, omitted := a.broker.Grants()
	for _, m := range append([]approval.Message{
		{Type: approval.MsgHello, Version: Version()},
		{Type: approval.MsgGrants, Grants: grants, GrantsOmitted: omitted},
	}, waiting...) {
		if err := writeMessage(conn, m); err != nil {
			log.Warn("approver channel: write failed", "err", err)
			return
		}
	}

	out := make(chan approval.Message, 16)
	writeErr := make(chan error, 1)
	go func() { writeErr <- a.write(ctx, conn, out, events) }()
	send := func(m approval.Message) bool {
		select {
		case out <- m:
			return true
		case <-ctx.Done():
			return false
		}
	}

	readErr := make(chan error, 1)
	go func() { readErr <- a.read(conn, by, send) }()
	select {
	case <-ctx.Done():
	case err := <-writeErr:
		if err != nil {
			log.Warn("approver channel: write failed", "err", err)
		}
	case err := <-readErr:
		if err != nil {
			log.Warn("approver channel: read failed", "err", err)
		}
	}
}

// write sends the replies in out and the broker's events to the console, in
// one goroutine so lines never interleave.
func (a *approverServer) write(ctx context.Context, conn *net.UnixConn, out <-chan approval.Message, events <-chan approval.Message) error {
	for {
		var m approval.Message
		select {
		case <-ctx.Done():
			return nil
		case m = <-out:
		case ev, ok := <-events:
			if !ok {
				return errors.New("console fell too far behind the daemon's events")
			}
			m = ev
		}
		if err := writeMessage(conn, m); err != nil {
			return err
		}
	}
}

// writeMessage writes m as one line, within a write deadline. A line
// longer than approval.MaxLine is never sent: a console may refuse it and
// would lose the channel. A detail that long is answered with an error
// instead (the request can then only be denied or time out); nothing else
// can be that long.
func writeMessage(conn *net.UnixConn, m approval.Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.Type, err)
	}
	if len(b)+1 > approval.MaxLine {
		b, err = json.Marshal(approval.Message{Type: approval.MsgResult, ID: m.ID, Error: fmt.Sprintf(
			"the %s message for request %s would be %d bytes, more than the approver channel's limit of %d; it cannot be shown here, so it cannot be allowed",
			m.Type, m.ID, len(b), approval.MaxLine)})
		if err != nil {
			return fmt.Errorf("encode result: %w", err)
		}
	}
	_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("send %s: %w", m.Type, err)
	}
	return nil
}

// read handles the console's decide and revoke lines until it disconnects.
func (a *approverServer) read(conn *net.UnixConn, by string, send func(approval.Message) bool) error {
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 0, 64<<10), maxApproverLine)
	for sc.Scan() {
		var m approval.Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			send(approval.Message{Type: approval.MsgResult, Error: "invalid message: " + err.Error()})
			continue
		}
		reply := approval.Message{Type: approval.MsgResult, ID: m.ID}
		var err error
		switch m.Type {
		case approval.MsgDetail:
			var s *approval.Shown
			if s, err = a.broker.Detail(m.ID, m.Hash); err == nil {
				if !send(approval.Message{Type: approval.MsgDetail, ID: m.ID, Hash: m.Hash, Request: s}) {
					return nil
				}
				continue
			}
		case approval.MsgDecide:
			err = a.broker.Decide(m.ID, m.Hash, m.Decision, m.Note, by)
			a.log.Info("console decision", "id", m.ID, "decision", m.Decision, "console", by, "err", err)
		case approval.MsgRevoke:
			reply.Grant = m.Grant
			err = a.broker.Revoke(m.Grant)
			a.log.Info("console revoked grant", "grant", m.Grant, "console", by, "err", err)
		default:
			err = fmt.Errorf("unknown message type %q: a console sends %q, %q or %q", m.Type, approval.MsgDecide, approval.MsgRevoke, approval.MsgDetail)
		}
		if err != nil {
			reply.Error = err.Error()
		} else {
			reply.OK = true
		}
		send(reply)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read console line: %w", err)
	}
	return nil
}

// consoleName describes a console for the audit log: its uid, the terminal
// its process has on stdin (when it has one), and its pid.
func consoleName(peer peercred.Creds) string {
	tty, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", peer.PID))
	if err != nil {
		tty = "unknown"
	}
	return fmt.Sprintf("console uid=%d tty=%s pid=%d", peer.UID, tty, peer.PID)
}

// peerInfo is the identity the broker and the consoles are given for a
// requesting peer: its kernel credentials, with the user name looked up once.
func peerInfo(c peercred.Creds) approval.PeerInfo {
	return approval.PeerInfo{UID: c.UID, User: c.User(), PID: c.PID, Exe: c.Exe}
}
