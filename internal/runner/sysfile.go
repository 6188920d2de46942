package runner

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// readFile reads a small kernel file (/proc, cgroupfs) whole, with plain
// system calls (see doc.go, "Cost of a request"). An error is an
// *fs.PathError, as os.ReadFile's.
func readFile(name string) ([]byte, error) {
	fd, err := openFd(name, unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// writeFile writes b to the existing kernel file name (cgroupfs) in one
// write, with plain system calls.
func writeFile(name string, b []byte) error {
	fd, err := openFd(name, unix.O_WRONLY)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "write", Path: name, Err: err}
		}
		if n < len(b) {
			return &fs.PathError{Op: "write", Path: name, Err: unix.EIO}
		}
		return nil
	}
}

// openFile opens name as an *os.File that Go's network poller leaves alone:
// blocking, for a file whose reads and writes never wait (a directory, a
// device such as /dev/null) or whose descriptor is only passed on.
func openFile(name string, flags int) (*os.File, error) {
	fd, err := openFd(name, flags)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// openFd opens name with O_CLOEXEC and O_NOCTTY added to flags.
func openFd(name string, flags int) (int, error) {
	for {
		fd, err := unix.Open(name, flags|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return fd, nil
	}
}
