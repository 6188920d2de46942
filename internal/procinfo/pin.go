package procinfo

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Pin is a connected process as it was when its connection was accepted: a
// pidfd (which always names that process, never a later one with its pid),
// its start time and the identity of the file it executed. The ancestry
// is read later, once the request line is read; [Pin.Check] then tells
// whether the pid still names the same process running the same program
// (see the package doc, "The requester is pinned at accept").
//
// A Pin holds a descriptor: Close it.
type Pin struct {
	pid   int32
	fd    int // the pidfd; -1 when the kernel gave none
	start uint64
	exe   string
	id    fileID
	// err says why the process could not be pinned; "" when it was.
	err string
}

// fileID is the device and inode of a file.
type fileID struct{ dev, ino uint64 }

// What [Pin.Check] says of a requester that is not the process that
// connected. They start the message; the rest says which process and
// program.
const (
	ChangedExited   = "requester exited after connecting"
	ChangedExec     = "requester exec'd another program after connecting"
	ChangedUnpinned = "requester could not be identified when it connected"
	ChangedUnread   = "requester could not be read again after connecting"
)

// PinPeer pins pid, the peer of the socket conn as SO_PEERCRED named it:
// the kernel's pidfd of the peer (SO_PEERPIDFD, Linux 6.5), else
// pidfd_open of pid, then the process's start time (/proc/PID/stat field
// 22) and the path, device and inode of /proc/PID/exe. It reads nothing
// that the process can hold up (never its memory), so it can run in the
// accept loop. It never fails: a process that cannot be pinned is marked,
// and Check says so.
func PinPeer(conn syscall.Conn, pid int32) *Pin {
	pin := &Pin{pid: pid, fd: -1}
	if raw, err := conn.SyscallConn(); err == nil {
		// The descriptor the kernel installs is close-on-exec; the fork
		// lock only covers kernels that did not set the flag.
		syscall.ForkLock.RLock()
		_ = raw.Control(func(s uintptr) {
			if fd, err := unix.GetsockoptInt(int(s), unix.SOL_SOCKET, unix.SO_PEERPIDFD); err == nil {
				unix.CloseOnExec(fd)
				pin.fd = fd
			}
		})
		syscall.ForkLock.RUnlock()
	}
	if pin.fd < 0 {
		// Older kernels: the pid may have been reused between connect and
		// accept, which only SO_PEERPIDFD rules out.
		fd, err := unix.PidfdOpen(int(pid), 0)
		switch {
		case err == nil:
			pin.fd = fd
		case errors.Is(err, unix.ESRCH):
			pin.err = fmt.Sprintf("%s (pid %d) before its connection was accepted", ChangedExited, pid)
			return pin
		}
		// ENOSYS (before Linux 5.3): the start time alone tells a reused pid.
	}
	var err error
	if pin.start, err = startTime(pid); err == nil {
		pin.exe, pin.id, err = exeID(pid)
	}
	if err == nil && !pin.alive() {
		err = syscall.ESRCH
	}
	if err != nil {
		if gone(err) {
			pin.err = fmt.Sprintf("%s (pid %d) before its connection was accepted", ChangedExited, pid)
		} else {
			pin.err = fmt.Sprintf("%s (pid %d): %s", ChangedUnpinned, pid, why(err))
		}
	}
	return pin
}

// Close releases the pin's pidfd. A nil Pin may be closed.
func (pin *Pin) Close() {
	if pin != nil && pin.fd >= 0 {
		_ = unix.Close(pin.fd)
		pin.fd = -1
	}
}

// alive reports whether the pinned process has not exited (without a
// pidfd: true, and the start time decides).
func (pin *Pin) alive() bool {
	if pin.fd < 0 {
		return true
	}
	err := unix.PidfdSendSignal(pin.fd, 0, nil, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// Check compares the process at the pin's pid with the pin, after its
// ancestry was read: "" when it is the process that connected (its pidfd
// alive, its start time the same), running the file it ran then (same
// path, device and inode). Otherwise it says in words what changed: it
// starts with ChangedExited ("… (pid 812, was /usr/bin/python3)"),
// ChangedExec ("…: was /usr/bin/python3, now /usr/bin/sleep") or, when
// it could not be pinned at all, ChangedUnpinned or ChangedExited with
// "before its connection was accepted"; ChangedUnread when /proc could not
// be read now for another reason than the process being gone. The same file
// removed meanwhile (" (deleted)") is no change. The ancestry read before Check
// returned "" is the requester's; an exec of the same file again is not
// told apart (its argv is its own claim anyway). A nil pin is "".
func (pin *Pin) Check() string {
	if pin == nil {
		return ""
	}
	if pin.err != "" {
		return pin.err
	}
	exited := fmt.Sprintf("%s (pid %d, was %s)", ChangedExited, pin.pid, pin.exe)
	start, err := startTime(pin.pid)
	if err != nil {
		if gone(err) {
			return exited
		}
		return fmt.Sprintf("%s (pid %d): %s", ChangedUnread, pin.pid, why(err))
	}
	exe, id, err := exeID(pin.pid)
	// The reads above were of the pinned process only if it is still
	// alive now: checked last.
	if start != pin.start || !pin.alive() || gone(err) {
		return exited
	}
	if err != nil {
		return fmt.Sprintf("%s (pid %d): %s", ChangedUnread, pin.pid, why(err))
	}
	// The file it runs may have been removed meanwhile (a package
	// upgrade): the kernel then adds " (deleted)" to the same file's path.
	if id != pin.id || strings.TrimSuffix(exe, deleted) != strings.TrimSuffix(pin.exe, deleted) {
		return fmt.Sprintf("%s (pid %d): was %s, now %s", ChangedExec, pin.pid, pin.exe, exe)
	}
	return ""
}

// deleted is what the kernel appends to /proc/PID/exe when the file was
// removed.
const deleted = " (deleted)"

// startTime reads field 22 of the kernel's /proc/PID/stat (a pin reads the
// kernel's /proc whatever Proc walks the ancestry: the pidfd is the
// kernel's too): when the process started, in clock ticks after boot.
func startTime(pid int32) (uint64, error) {
	b, _, err := readBounded(Proc{}.path(pid, "stat"))
	if err != nil {
		return 0, err
	}
	return parseStartTime(b)
}

// parseStartTime is field 22 (starttime) of a /proc/PID/stat line, read
// after the last ")" since comm may hold any byte.
func parseStartTime(b []byte) (uint64, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, errors.New("malformed stat: no (comm)")
	}
	// Field 3 (state) is the first after comm.
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 22-2 {
		return 0, fmt.Errorf("malformed stat: %d fields after comm, want at least %d", len(f), 22-2)
	}
	v, err := strconv.ParseUint(f[22-3], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("malformed stat: starttime: %w", err)
	}
	return v, nil
}

// exeID is the target of /proc/PID/exe and the device and inode of the file
// it names.
func exeID(pid int32) (string, fileID, error) {
	name := Proc{}.path(pid, "exe")
	target, err := os.Readlink(name)
	if err != nil {
		return "", fileID{}, err
	}
	var st unix.Stat_t
	if err := unix.Stat(name, &st); err != nil {
		return "", fileID{}, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	return target, fileID{dev: st.Dev, ino: st.Ino}, nil
}
