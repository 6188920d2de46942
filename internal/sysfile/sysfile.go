// Package sysfile reads and writes the kernel's small files (/proc,
// cgroupfs) and opens files that are only passed on (a directory, a
// device), with plain open, read, write and close system calls.
//
// The daemon does this for every request: it walks the peer's ancestry in
// /proc, and creates, lists, kills and waits on a cgroup per pipeline.
// os.Open would also try to register each file with Go's network poller
// (on Linux an epoll_ctl that fails for such files, and four fcntl calls
// around it), which more than doubled the system calls of an ancestry walk,
// and File.Fd would then make the descriptor blocking again.
// docs/performance.md has the figures.
//
// Every call retries on EINTR, opens with O_CLOEXEC and O_NOCTTY, and
// returns its errors as *fs.PathError, as the os package does.
package sysfile

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Open opens name with flags, O_CLOEXEC and O_NOCTTY, and returns the
// descriptor, which the caller closes.
func Open(name string, flags int) (int, error) {
	fd, err := Retry(func() (int, error) { return unix.Open(name, flags|unix.O_CLOEXEC|unix.O_NOCTTY, 0) })
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return fd, nil
}

// OpenFile opens name as an *os.File that Go's network poller leaves
// alone: blocking, for a file whose reads and writes never wait (a
// directory, a device such as /dev/null) or whose descriptor is only
// passed on.
func OpenFile(name string, flags int) (*os.File, error) {
	fd, err := Open(name, flags)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// ReadFile reads name whole.
func ReadFile(name string) ([]byte, error) {
	b, _, err := Read(name, -1)
	return b, err
}

// Read reads name up to max bytes (no limit when max is negative) and
// reports whether that was the whole file.
func Read(name string, max int) (b []byte, whole bool, err error) {
	fd, err := Open(name, unix.O_RDONLY)
	if err != nil {
		return nil, false, err
	}
	defer unix.Close(fd)
	// Most files read so are a few hundred bytes.
	b = make([]byte, 0, 512)
	for max < 0 || len(b) <= max {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		room := b[len(b):cap(b)]
		if max >= 0 {
			room = room[:min(len(room), max+1-len(b))]
		}
		n, err := Retry(func() (int, error) { return unix.Read(fd, room) })
		if err != nil {
			return nil, false, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if n == 0 {
			return b, true, nil
		}
		b = b[:len(b)+n]
	}
	return b[:max], false, nil
}

// WriteFile writes b to the existing file name in one write, as a kernel
// file (cgroupfs) takes a value.
func WriteFile(name string, b []byte) error {
	fd, err := Open(name, unix.O_WRONLY)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	n, err := Retry(func() (int, error) { return unix.Write(fd, b) })
	switch {
	case err != nil:
		return &fs.PathError{Op: "write", Path: name, Err: err}
	case n < len(b):
		return &fs.PathError{Op: "write", Path: name, Err: unix.EIO}
	}
	return nil
}

// Retry calls f until it fails with something other than EINTR.
func Retry(f func() (int, error)) (int, error) {
	for {
		n, err := f()
		if err != unix.EINTR {
			return n, err
		}
	}
}
