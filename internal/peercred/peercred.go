// Package peercred reads who is on the other end of a Unix socket.
//
// The kernel records the peer's credentials when it connects (SO_PEERCRED,
// SO_PEERGROUPS); they cannot be forged by the peer and do not change when the
// peer later calls setuid. The daemon reads them once per connection, when it
// accepts, and carries them with the connection: every later decision uses
// that one reading, never a fresh look at a PID that may have been reused.
package peercred

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"slices"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/internal/procinfo"
)

// Creds identifies a connected peer.
type Creds struct {
	// UID, GID and PID as the kernel recorded them at connect time.
	UID, GID uint32
	PID      int32
	// Groups are the peer's supplementary groups at connect time.
	Groups []uint32
	// Exe is the target of /proc/PID/exe, read right after accept, for the
	// record only: a PID can be reused, so it is never used to authorise.
	Exe string
	// Ancestry is the peer and its parents and Container the namespaces
	// it lives in when they are not the daemon's, read from /proc by the
	// daemon after accept (nil until then), for the human's judgement and
	// the record only, like Exe.
	Ancestry  *procinfo.Ancestry
	Container *procinfo.Container
}

// User returns the peer's user name, or its numeric uid when it has none.
func (c Creds) User() string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(c.UID), 10)); err == nil {
		return u.Username
	}
	return strconv.FormatUint(uint64(c.UID), 10)
}

// InGroup reports whether gid is the peer's primary or a supplementary group.
func (c Creds) InGroup(gid uint32) bool {
	return c.GID == gid || slices.Contains(c.Groups, gid)
}

// Get reads the credentials of conn's peer.
func Get(conn *net.UnixConn) (Creds, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return Creds{}, fmt.Errorf("peer credentials: syscall conn: %w", err)
	}
	var (
		cred    *unix.Ucred
		groups  []uint32
		credErr error
		grpErr  error
	)
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if credErr == nil {
			groups, grpErr = peerGroups(int(fd))
		}
	}); err != nil {
		return Creds{}, fmt.Errorf("peer credentials: control: %w", err)
	}
	if credErr != nil {
		return Creds{}, fmt.Errorf("peer credentials: getsockopt SO_PEERCRED: %w", credErr)
	}
	if grpErr != nil {
		return Creds{}, fmt.Errorf("peer credentials: getsockopt SO_PEERGROUPS: %w", grpErr)
	}
	c := Creds{UID: cred.Uid, GID: cred.Gid, PID: cred.Pid, Groups: groups}
	c.Exe = exeOf(os.Readlink(fmt.Sprintf("/proc/%d/exe", cred.Pid)))
	return c, nil
}

// exeOf is Creds.Exe from reading /proc/PID/exe: the target, or, when it
// could not be read (the peer already exited), "(unknown: " and why ")".
// The why is the bare cause (a *fs.PathError's Err) when err wraps one, else
// err itself: the path is the PID, not news.
func exeOf(target string, err error) string {
	if err == nil {
		return target
	}
	if inner := errors.Unwrap(err); inner != nil {
		err = inner
	}
	return "(unknown: " + err.Error() + ")"
}

// peerGroups reads SO_PEERGROUPS (Linux 4.13+), which x/sys/unix has the
// constant for but no typed helper. The kernel answers ERANGE with the needed
// length when the buffer is too small.
func peerGroups(fd int) ([]uint32, error) {
	n := 64
	for range 4 {
		buf := make([]uint32, n)
		size := uint32(len(buf) * 4)
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)), 0)
		switch errno {
		case 0:
			return buf[:size/4], nil
		case unix.ERANGE:
			n = int(size/4) + 1
		default:
			return nil, errno
		}
	}
	return nil, unix.ERANGE
}
