package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/activation"

	"github.com/agent-sudo/agent-sudo/internal/fsperm"
)

// Listen returns the listener for the agent socket at path: the one systemd
// passed (socket activation, LISTEN_FDS) when there is one, else a socket of
// our own with owner root, group gid and mode.
//
// A socket file left by a daemon that died is removed, but only after a dial
// shows that nothing answers on it: two daemons on one socket would split
// the requests between two approvers and two audit logs.
func Listen(ctx context.Context, path string, gid int, mode fs.FileMode) (net.Listener, bool, error) {
	lns, err := activation.Listeners()
	if err != nil {
		return nil, false, fmt.Errorf("socket activation: %w", err)
	}
	for _, ln := range lns {
		if ln != nil && ln.Addr().Network() == "unix" {
			for _, other := range lns {
				if other != nil && other != ln {
					_ = other.Close()
				}
			}
			return ln, true, nil
		}
	}
	if len(lns) > 0 {
		return nil, false, errors.New("socket activation: systemd passed no Unix stream socket")
	}
	ln, err := listenOwn(ctx, path, gid, mode)
	return ln, false, err
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
	return CheckSecureDir(dir, "socket directory")
}

// CheckSecureDir is [fsperm.SecureDir]: only the daemon's user (and root)
// can change what is in dir, and every directory and symbolic link above
// it is root's or the daemon's.
func CheckSecureDir(dir, what string) error {
	return fsperm.SecureDir(dir, what)
}
