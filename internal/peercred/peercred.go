// Package peercred reads who is on the other end of a Unix socket.
//
// The kernel records the peer's credentials when it connects (SO_PEERCRED,
// SO_PEERGROUPS); they cannot be forged by the peer and do not change when the
// peer later calls setuid. The daemon reads them once per connection, when it
// accepts, and carries them with the connection: every later decision uses
// that one reading, never a fresh look at a PID that may have been reused.
//
// It also reads which user controls the peer when the peer lives in a user
// namespace (Creds.Controller): the daemon's per-user limits count every uid
// a user controls as that user (docs/config.md, "Who counts as one user").
package peercred

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"slices"
	"strconv"
	"sync"
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
	// Controller is the user the peer counts as for the per-user limits:
	// UID when the peer is in the daemon's user namespace; otherwise the
	// owner (its creator's uid, as the kernel records it) of the outermost
	// user namespace, on the way from the peer's up to the daemon's, that
	// a non-root user created, or UID when root created every one of
	// them. An unprivileged user can give a namespace only the uids it
	// owns (its own and, through newuidmap, its /etc/subuid ranges), so
	// every uid such a peer shows belongs to that owner.
	Controller uint32
	// UserNSOwners are the owners of the user namespaces from the peer's
	// (first) up to the daemon's (excluded); empty when the peer is in the
	// daemon's user namespace.
	UserNSOwners []uint32
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
	var nsErr error
	if err := raw.Control(func(fd uintptr) {
		c.UserNSOwners, nsErr = userNSOwners(int(fd), cred.Pid)
	}); err != nil {
		return Creds{}, fmt.Errorf("peer credentials: control: %w", err)
	}
	if nsErr != nil {
		return Creds{}, fmt.Errorf("peer credentials: user namespace of pid %d: %w", cred.Pid, nsErr)
	}
	c.Controller = controller(c.UID, c.UserNSOwners)
	c.Exe = exeOf(os.Readlink(fmt.Sprintf("/proc/%d/exe", cred.Pid)))
	return c, nil
}

// controller is Creds.Controller for a peer with uid whose user
// namespaces, from its own up to the daemon's (excluded), were created by
// owners: the outermost owner that is not root, else uid. Root's
// namespaces (containers root set up) do not make their uids root's: a uid
// 0 there would otherwise escape every limit.
func controller(uid uint32, owners []uint32) uint32 {
	for i := len(owners) - 1; i >= 0; i-- {
		if owners[i] != 0 {
			return owners[i]
		}
	}
	return uid
}

// pidfdGetUserNamespace is PIDFD_GET_USER_NAMESPACE (Linux 6.11),
// _IO(PIDFS_IOCTL_MAGIC, 9), which x/sys/unix does not define.
const pidfdGetUserNamespace = 0xFF<<8 | 9

// maxUserNSDepth bounds the walk up the user namespaces: the kernel nests
// them at most 32 deep.
const maxUserNSDepth = 33

// userNSOwners reads the owners of the user namespaces of the peer on the
// socket fd (whose pid is pid), from its own up to the daemon's
// (excluded). The peer is pinned by a pidfd: the one the kernel recorded
// at connect time (SO_PEERPIDFD, Linux 6.5) when it has one, else
// pidfd_open(pid). Its namespace is read from the pidfd
// (PIDFD_GET_USER_NAMESPACE, Linux 6.11), else from /proc/PID/ns/user
// while the pidfd shows the process alive. A peer that has exited cannot
// be placed, and is an error: its connection is refused.
func userNSOwners(fd int, pid int32) ([]uint32, error) {
	pidfd, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PEERPIDFD)
	if err != nil {
		if !errors.Is(err, unix.ENOPROTOOPT) {
			return nil, fmt.Errorf("getsockopt SO_PEERPIDFD: %w", err)
		}
		if pidfd, err = unix.PidfdOpen(int(pid), 0); err != nil {
			return nil, fmt.Errorf("pidfd_open: %w", err)
		}
	}
	defer unix.Close(pidfd)
	ns, err := userNSOf(pidfd, pid, false)
	if err != nil {
		return nil, err
	}
	own, err := ownUserNS()
	if err != nil {
		unix.Close(ns)
		return nil, fmt.Errorf("stat the daemon's own user namespace: %w", err)
	}
	return walkUserNS(ns, own)
}

// ownUserNS is the process's own user namespace, read once: a process
// never changes it once it has threads, and Get runs for every connection.
var ownUserNS = sync.OnceValues(func() (unix.Stat_t, error) {
	var st unix.Stat_t
	err := unix.Stat("/proc/self/ns/user", &st)
	return st, err
})

// userNSOf opens the user namespace of the process pidfd refers to,
// whose pid is pid: with PIDFD_GET_USER_NAMESPACE, or, when the kernel
// lacks it (or viaProc is set, for the tests of that path), through
// /proc/PID/ns/user while the pidfd shows that process still alive.
func userNSOf(pidfd int, pid int32, viaProc bool) (int, error) {
	if !viaProc {
		ns, err := unix.IoctlRetInt(pidfd, pidfdGetUserNamespace)
		if err == nil {
			return ns, nil
		}
		if !errors.Is(err, unix.ENOTTY) && !errors.Is(err, unix.EINVAL) {
			return -1, fmt.Errorf("ioctl PIDFD_GET_USER_NAMESPACE: %w", err)
		}
	}
	ns, err := unix.Open(fmt.Sprintf("/proc/%d/ns/user", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open /proc/%d/ns/user: %w", pid, err)
	}
	// The namespace read is the pidfd's process's only if that process
	// still holds its PID.
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		unix.Close(ns)
		return -1, fmt.Errorf("the peer exited: %w", err)
	}
	return ns, nil
}

// walkUserNS walks from the user namespace ns (a descriptor it closes) up
// to own, the daemon's, and returns the owner of each namespace below own.
func walkUserNS(ns int, own unix.Stat_t) ([]uint32, error) {
	defer func() { unix.Close(ns) }()
	var owners []uint32
	for range maxUserNSDepth {
		var st unix.Stat_t
		if err := unix.Fstat(ns, &st); err != nil {
			return nil, fmt.Errorf("fstat user namespace: %w", err)
		}
		if st.Dev == own.Dev && st.Ino == own.Ino {
			return owners, nil
		}
		owner, err := unix.IoctlGetUint32(ns, unix.NS_GET_OWNER_UID)
		if err != nil {
			return nil, fmt.Errorf("ioctl NS_GET_OWNER_UID on user namespace %d: %w", st.Ino, err)
		}
		owners = append(owners, owner)
		parent, err := unix.IoctlRetInt(ns, unix.NS_GET_PARENT)
		if err != nil {
			// EPERM: the parent is outside the daemon's namespace, so
			// the peer's is not below it.
			return nil, fmt.Errorf("ioctl NS_GET_PARENT on user namespace %d (not below the daemon's?): %w", st.Ino, err)
		}
		unix.Close(ns)
		ns = parent
	}
	return nil, fmt.Errorf("user namespaces nested deeper than %d", maxUserNSDepth)
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
