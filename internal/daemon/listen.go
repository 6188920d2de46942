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

// CheckSecureDir checks that only the daemon's user (and root) can change
// what is in dir: dir must be owned by the daemon's user and writable by
// nobody else, sticky bit or not (a sticky directory such as /tmp still
// lets anyone create names in it), and every directory above it must be
// owned by root or the daemon's user and either writable by nobody else
// or sticky (then nobody else can rename or remove the root-owned entry
// below it). Symbolic links on the way (such as /var/run -> /run) must be
// owned by root or the daemon's user; the directories they lead to are
// checked the same way. what names dir in errors, e.g. "socket directory".
func CheckSecureDir(dir, what string) error {
	dir = filepath.Clean(dir)
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%s %s: not an absolute path", what, dir)
	}
	if err := checkChain(dir, what, dir); err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	if real != dir {
		return checkChain(real, what, dir)
	}
	return nil
}

// checkChain checks path and every directory above it, as CheckSecureDir
// describes; shown is the path named in errors.
func checkChain(path, what, shown string) error {
	self := uint32(os.Geteuid())
	for d, last := path, true; ; d, last = filepath.Dir(d), false {
		fi, err := os.Lstat(d)
		if err != nil {
			return fmt.Errorf("%s %s: %w", what, shown, err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s %s: no ownership information for %s", what, shown, d)
		}
		link := fi.Mode()&fs.ModeSymlink != 0
		switch {
		case st.Uid != self && st.Uid != 0:
			return fmt.Errorf("%s %s: %s is owned by uid %d, not by root or the daemon's uid %d; whoever owns it can replace what the daemon puts there",
				what, shown, d, st.Uid, self)
		case link:
			// Checked where it leads, by the caller.
		case !fi.IsDir():
			return fmt.Errorf("%s %s: %s is not a directory", what, shown, d)
		case last && st.Uid != self:
			return fmt.Errorf("%s %s is owned by uid %d, not by the daemon's uid %d", what, shown, st.Uid, self)
		case last && fi.Mode().Perm()&0o022 != 0:
			sticky := ""
			if fi.Mode()&fs.ModeSticky != 0 {
				sticky = " (sticky, like /tmp: others can still create names in it)"
			}
			return fmt.Errorf("%s %s has mode %04o%s: others could plant or replace files there; use a directory of its own with mode 0755, e.g. /run/agent-sudo",
				what, shown, octal(fi.Mode()), sticky)
		case !last && fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0:
			return fmt.Errorf("%s %s: %s has mode %04o and is not sticky: others could rename what is in it and put their own in its place",
				what, shown, d, octal(fi.Mode()))
		}
		if d == "/" {
			return nil
		}
	}
}

// octal is a mode as chmod writes it: the permission bits and the sticky bit.
func octal(m fs.FileMode) uint32 {
	o := uint32(m.Perm())
	if m&fs.ModeSticky != 0 {
		o |= 0o1000
	}
	return o
}
