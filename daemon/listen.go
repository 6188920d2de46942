package daemon

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/activation"

	"github.com/agent-sudo/agent-sudo/internal/fsperm"
	"github.com/agent-sudo/agent-sudo/internal/hint"
)

// Names of the sockets systemd passes the daemon (FileDescriptorName= in
// packaging/systemd's socket units; LISTEN_FDNAMES). A socket unit without
// the setting passes its unit's name, which is taken as the agent socket.
const (
	agentFDName    = "agent"
	approverFDName = "approver"
	agentUnitName  = "agent-sudo.socket"
)

// Sockets are the daemon's two listeners, and whether systemd passed each.
type sockets struct {
	Agent, Approver                   net.Listener
	AgentActivated, ApproverActivated bool
}

// Close closes both listeners, those that are set.
func (s *sockets) Close() {
	for _, ln := range []net.Listener{s.Agent, s.Approver} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// ListenBoth returns the listeners of the agent socket (at agentPath,
// owner root, group gid, mode agentMode) and of the approver socket (at
// approverPath, root's only): for each, the one systemd passed by name
// (socket activation, LISTEN_FDS and LISTEN_FDNAMES) when there is one,
// else a socket of its own.
//
// A socket file left by a daemon that died is removed, but only after a dial
// shows that nothing answers on it: two daemons on one socket would split
// the requests between two approvers and two audit logs. An approver socket that
// systemd passed is refused unless its file is the daemon's user's and
// nobody else may connect to it: the approver channel decides requests.
func listenBoth(ctx context.Context, agentPath string, gid int, agentMode fs.FileMode, approverPath string) (*sockets, error) {
	named, err := activation.ListenersWithNames()
	if err != nil {
		return nil, fmt.Errorf("socket activation: %w", err)
	}
	s, err := pickActivated(named)
	if err != nil {
		return nil, err
	}
	if s.Approver != nil {
		if err := checkApproverSocket(s.Approver); err != nil {
			s.Close()
			return nil, err
		}
	} else {
		// The approver socket comes first: a request must never wait on
		// a channel no human can reach.
		if s.Approver, err = listenOwn(ctx, approverPath, 0, 0o600); err != nil {
			s.Close()
			return nil, fmt.Errorf("approver socket: %w", err)
		}
	}
	if s.Agent == nil {
		if s.Agent, err = listenOwn(ctx, agentPath, gid, agentMode); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// pickActivated sorts the listeners systemd passed, by name, into the
// agent's and the approver's. Anything else (a second socket of a name, a
// name the daemon does not know, a socket that is not a Unix stream) is
// refused: the units and the daemon disagree, and guessing could hand the
// approver channel to agents.
func pickActivated(named map[string][]net.Listener) (*sockets, error) {
	s := &sockets{}
	var bad error
	for name, lns := range named {
		for _, ln := range lns {
			switch {
			case bad != nil:
			case ln.Addr().Network() != "unix":
				bad = fmt.Errorf("socket activation: systemd passed socket %q of type %s at %s; the daemon takes Unix stream sockets only",
					name, ln.Addr().Network(), ln.Addr())
			case name == approverFDName && s.Approver == nil:
				s.Approver, s.ApproverActivated = ln, true
				continue
			case (name == agentFDName || name == agentUnitName || unnamed(name) && len(named) == 1 && len(lns) == 1) && s.Agent == nil:
				s.Agent, s.AgentActivated = ln, true
				continue
			case name == approverFDName || name == agentFDName || name == agentUnitName:
				bad = fmt.Errorf("socket activation: systemd passed more than one socket for %q (another is at %s)", name, ln.Addr())
			default:
				bad = hint.Wrap(fmt.Errorf("socket activation: systemd passed a socket named %q (at %s), which the daemon does not know", name, ln.Addr()),
					fmt.Sprintf("the daemon knows only %q (FileDescriptorName=%s in agent-sudo.socket) and %q (in agent-sudo-approver.socket)",
						agentFDName, agentFDName, approverFDName))
			}
			_ = ln.Close()
		}
	}
	if bad != nil {
		s.Close()
		return nil, bad
	}
	return s, nil
}

// unnamed reports whether name is what go-systemd calls a socket passed
// without LISTEN_FDNAMES (systemd before 227, systemd-socket-activate
// without --fdname, other supervisors). One such socket alone is taken as
// the agent socket, as before sockets had names: the agent's protocol
// decides nothing, so the guess gives no one the approver channel.
func unnamed(name string) bool { return strings.HasPrefix(name, "LISTEN_FD_") }

// checkApproverSocket refuses an approver socket systemd passed whose file
// someone other than the daemon's user owns, or whose group or others have
// any permission on it: agent-sudo-approver.socket says SocketUser=root,
// SocketMode=0600, and an override that loosened it would let others reach
// the channel that approves (the channel checks each peer's uid as well).
func checkApproverSocket(ln net.Listener) error {
	path := ln.Addr().String()
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("approver socket from systemd: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return fmt.Errorf("approver socket from systemd: %s: no owner information", path)
	case fi.Mode().Type() != fs.ModeSocket:
		return fmt.Errorf("approver socket from systemd: %s is not a socket (mode %v)", path, fi.Mode())
	case int(st.Uid) != os.Getuid():
		return hint.Wrap(fmt.Errorf("approver socket from systemd: %s belongs to uid %d, not to the daemon's uid %d", path, st.Uid, os.Getuid()),
			"set SocketUser=root in agent-sudo-approver.socket")
	case fi.Mode().Perm()&0o077 != 0:
		return hint.Wrap(fmt.Errorf("approver socket from systemd: %s has mode %04o: its group and others may connect", path, fi.Mode().Perm()),
			"set SocketMode=0600 in agent-sudo-approver.socket")
	}
	return checkDir(filepath.Dir(path))
}

func listenOwn(ctx context.Context, path string, gid int, mode fs.FileMode) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create socket directory %s: %w", dir, err)
	}
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	if _, err := os.Lstat(path); err == nil {
		d := net.Dialer{Timeout: time.Second}
		if c, err := d.DialContext(ctx, "unix", path); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("listen %s: another daemon is already answering on this socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
	}
	// The socket is created under a umask that leaves it unreachable until
	// its group and mode are set, so no one connects in between.
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	if err := os.Chown(path, os.Getuid(), gid); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("chown socket %s: %w", path, err)
	}
	if err := os.Chmod(path, mode); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("chmod socket %s: %w", path, err)
	}
	return ln, nil
}

// checkDir refuses a socket directory that someone other than us could
// write to: they could replace our socket with theirs between restarts, or
// plant one before we start, and an agent or a console would talk to it.
func checkDir(dir string) error {
	return fsperm.SecureDir(dir, "socket directory")
}
