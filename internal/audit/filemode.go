package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/internal/account"
	"github.com/agent-sudo/agent-sudo/internal/fsperm"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// logGroupName is the group that may read the log, when it exists.
const logGroupName = "adm"

// logGroup returns the group id new files and directories get and whether
// it is the log group; when it is not, they are private to root.
func logGroup() (int, bool) {
	if os.Geteuid() != 0 {
		return -1, false
	}
	gid, err := account.GID(logGroupName)
	if err != nil {
		return -1, false
	}
	return int(gid), true
}

// prepareDir creates dir if it does not exist and checks that only root
// (or the daemon's user) can change what is in it, or any directory or
// symbolic link on the way to it ([fsperm.SecureDir]): a link an agent
// owns, or a directory it can write, above the log would let it move the
// log where it likes.
func prepareDir(dir string) error {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create directory: %w", err)
		}
		mode := fs.FileMode(0o700)
		if gid, ok := logGroup(); ok {
			if err := os.Chown(dir, 0, gid); err != nil {
				return fmt.Errorf("set the group of directory %s: %w", dir, err)
			}
			mode = 0o750
		}
		if err := os.Chmod(dir, mode); err != nil {
			return fmt.Errorf("set the mode of directory %s: %w", dir, err)
		}
		fi, err = os.Stat(dir)
	}
	if err != nil {
		return fmt.Errorf("directory: %w", err)
	}
	if err := fsperm.Dir("directory "+dir, fi, "whoever can write it can replace or remove the log"); err != nil {
		return err
	}
	return fsperm.SecureDir(dir, "audit log directory")
}

// openLogFile opens path for appending and reading, creating it 0640
// root:adm (0600 when there is no adm group) if it does not exist, and
// checks it.
func openLogFile(path string) (*os.File, os.FileInfo, error) {
	const flags = os.O_RDWR | os.O_APPEND | syscall.O_NOFOLLOW
	f, err := os.OpenFile(path, flags|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		if err := setNewFileMode(f); err != nil {
			_ = f.Close()
			return nil, nil, err
		}
		if err := syncDir(filepath.Dir(path)); err != nil {
			_ = f.Close()
			return nil, nil, err
		}
	case errors.Is(err, fs.ErrExist):
		f, err = os.OpenFile(path, flags, 0)
	}
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, nil, fmt.Errorf("open: %s is a symbolic link; the log must be a regular file", path)
		}
		return nil, nil, fmt.Errorf("open: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("stat: %w", err)
	}
	if err := fsperm.OwnFile("the file", fi, "whoever can write it can rewrite the log"); err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	if err := lockFile(f); err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// lockFile takes an exclusive lock on f for as long as it is open: two
// writers would interleave their lines and break the chain.
func lockFile(f *os.File) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	var lockErr error
	if err := raw.Control(func(fd uintptr) {
		lockErr = unix.Flock(int(fd), unix.LOCK_EX|unix.LOCK_NB)
	}); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if errors.Is(lockErr, unix.EWOULDBLOCK) {
		return lockedBy(f)
	}
	if lockErr != nil {
		return fmt.Errorf("lock: %w", lockErr)
	}
	return nil
}

// lockedBy says who holds the writers' lock on f, as /proc/locks tells:
// the kernel records the process that took a flock lock. When that is this
// process, an earlier descriptor of its own holds the lock (kept open by a
// child between its fork and its exec), not a second writer.
func lockedBy(f *os.File) error {
	const twoWriters = "two writers would break its hash chain"
	pid, ok := flockHolder(f)
	switch {
	case !ok:
		return fmt.Errorf("the writers' lock on this log is held, and /proc/locks does not say by which process; %s", twoWriters)
	case pid == os.Getpid():
		return errors.New("this daemon's earlier descriptor of this log holds its writers' lock (a child being started shares it); try again")
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		exe = "unknown program"
	}
	return fmt.Errorf("process %d (%s) holds the writers' lock on this log; %s", pid, termtext.Esc(exe), twoWriters)
}

// flockHolder returns the pid that took the flock lock on f's file, read
// from /proc/locks, whose lines read "1: FLOCK  ADVISORY  WRITE PID
// MAJOR:MINOR:INODE START END" (major and minor in hex).
func flockHolder(f *os.File) (int, bool) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return 0, false
	}
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		fields := strings.Fields(line)
		// A blocked waiter's line has "->" after the number.
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[5] != want {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil || pid <= 0 {
			return 0, false
		}
		return pid, true
	}
	return 0, false
}

func setNewFileMode(f *os.File) error {
	mode := fs.FileMode(0o600)
	if gid, ok := logGroup(); ok {
		if err := f.Chown(0, gid); err != nil {
			return fmt.Errorf("set the group of the new file: %w", err)
		}
		mode = 0o640
	}
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("set the mode of the new file: %w", err)
	}
	return nil
}

// syncDir makes a new directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open directory to sync it: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}
