package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os/user"
	"strconv"
	"strings"
	"sync"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/internal/procinfo"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// approverServer accepts consoles on the approver channel: the root-only
// socket that is the only way, besides the daemon's own terminal, that a
// decision reaches the broker; the agent socket has no message that decides
// anything. It checks that each console is root and hands it to channel,
// which speaks the protocol.
type approverServer struct {
	channel *approverChannel
	log     *slog.Logger
	conns   sync.WaitGroup
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

// handle identifies the console's peer, refuses it unless it is root, and
// hands the connection to the approver channel.
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
	who := procinfo.Proc{}.Person(peer.PID)
	a.channel.Serve(ctx, conn, approverConsole{By: consoleName(peer, who), Person: (*approval.Person)(&who)})
}

// consoleName describes a console for the audit log and the other
// consoles: its uid, the terminal its process has on stdin (when it has
// one), its pid, and who is behind it: the login uid and the terminal's
// owner (kernel facts), and SUDO_USER and SUDO_UID when its environment has
// them, marked as coming from there (whoever started the console could set
// them).
func consoleName(peer peercred.Creds, who procinfo.Person) string {
	tty := who.TTY
	if tty == "" {
		tty = "unknown"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "console uid=%d tty=%s pid=%d", peer.UID, termtext.EscStrict(tty), peer.PID)
	if who.LoginUID != nil {
		fmt.Fprintf(&b, " loginuid=%s", idName(*who.LoginUID))
	}
	if who.TTYOwner != nil {
		fmt.Fprintf(&b, " tty_owner=%s", idName(*who.TTYOwner))
	}
	if who.SudoUser != "" || who.SudoUID != "" {
		b.WriteString(" env:")
		if who.SudoUser != "" {
			q, _ := termtext.Quote(who.SudoUser)
			b.WriteString(" SUDO_USER=" + q)
		}
		if who.SudoUID != "" {
			q, _ := termtext.Quote(who.SudoUID)
			b.WriteString(" SUDO_UID=" + q)
		}
	}
	return b.String()
}

// idName is a uid with its user name: "1000(alice)", or "1000" when it has
// none.
func idName(uid uint32) string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		return fmt.Sprintf("%d(%s)", uid, termtext.EscStrict(u.Username))
	}
	return strconv.FormatUint(uint64(uid), 10)
}

// peerInfo is the identity the broker and the consoles are given for a
// requesting peer: its kernel credentials, with the user name looked up once.
func peerInfo(c peercred.Creds) approval.PeerInfo {
	return approval.PeerInfo{UID: c.UID, User: c.User(), PID: c.PID, Exe: c.Exe, Ancestry: ancestryShown(c.Ancestry),
		Container: (*approval.Container)(c.Container)}
}

// ancestryShown is a requester's ancestry as procinfo read it, in the
// approver channel's types; nil when it was not read.
func ancestryShown(a *procinfo.Ancestry) *approval.Ancestry {
	if a == nil {
		return nil
	}
	out := &approval.Ancestry{End: a.End, Changed: a.Changed}
	for _, h := range a.Hops {
		out.Hops = append(out.Hops, approval.Hop(h))
	}
	return out
}
