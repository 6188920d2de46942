package runner

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// File is a program file or working directory opened when the request was
// planned. The daemon executes the program, and enters the directory,
// through this descriptor rather than by path, so that what runs is the file
// that was shown and hashed even if its path is changed in between.
type File struct {
	// F is the open descriptor, close-on-exec.
	F *os.File
	// Dev and Ino identify the file.
	Dev, Ino uint64
	// SHA256 is the hash of a program file's content, read from F when it
	// was opened; zero for a directory.
	SHA256 [32]byte
	// Script is set when a program file starts with "#!".
	Script bool
	// hashes is the cache the hash may have come from, told by Verify
	// when the content no longer matches it.
	hashes *HashCache
}

// Close closes the descriptor; f may be nil.
func (f *File) Close() error {
	if f == nil || f.F == nil {
		return nil
	}
	return f.F.Close()
}

// OpenProgram opens the program r resolved to, checks that it is still the
// regular executable file that r.Link leads to, and hashes its content. The
// caller closes it once the request is done.
func OpenProgram(r Resolved) (*File, error) {
	return (*HashCache)(nil).OpenProgram(r)
}

// OpenProgram is the package's OpenProgram, taking the hash from c when the
// file is root-only and its stamp unchanged since c hashed it (HashCache),
// and caching the hash it computes otherwise. c may be nil.
func (c *HashCache) OpenProgram(r Resolved) (*File, error) {
	// O_NONBLOCK: a FIFO swapped in after resolving must not block the open;
	// it is refused below as not a regular file.
	fd, err := unix.Open(r.Path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("runner: opening program %s: %w", r.Path, err)
	}
	f := &File{F: os.NewFile(uintptr(fd), r.Path)}
	st, err := f.identify(r.Link, false)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("runner: program %s: %w", r.Path, err)
	}
	if len(r.Untrusted) > 0 {
		c = nil // someone other than root can change it: never cached
	}
	f.hashes = c
	if sum, script, ok := c.lookup(&st); ok {
		f.SHA256, f.Script = sum, script
		return f, nil
	}
	sum, head, err := hashFile(f.F)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("runner: reading program %s: %w", r.Path, err)
	}
	f.SHA256, f.Script = sum, bytes.HasPrefix(head, []byte("#!"))
	if c != nil {
		c.hashed.Add(1)
		var after unix.Stat_t
		if err := unix.Fstat(int(f.F.Fd()), &after); err == nil {
			c.store(&st, &after, f.SHA256, f.Script)
		}
	}
	return f, nil
}

// OpenDir opens the directory dir resolved to (real), checks that dir still
// leads to it, and returns it for entering through the descriptor.
func OpenDir(dir, real string) (*File, error) {
	fd, err := unix.Open(real, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("runner: opening directory %s: %w", real, err)
	}
	f := &File{F: os.NewFile(uintptr(fd), real)}
	if _, err := f.identify(dir, true); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("runner: directory %s: %w", dir, err)
	}
	return f, nil
}

// identify records f's device and inode, checks its type, and checks that
// resolving path again leads to the same file: an open that raced with a
// change of the path is refused rather than bound to a file nobody saw. It
// returns the descriptor's fstat.
func (f *File) identify(path string, dir bool) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.F.Fd()), &st); err != nil {
		return st, err
	}
	switch {
	case dir && st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return st, errors.New("is not a directory")
	case !dir && st.Mode&unix.S_IFMT != unix.S_IFREG:
		return st, errors.New("is not a regular file")
	case !dir && st.Mode&0o111 == 0:
		return st, errors.New("is not executable")
	}
	f.Dev, f.Ino = st.Dev, st.Ino
	w, err := walk(path)
	if err != nil {
		return st, fmt.Errorf("resolving it again: %w", err)
	}
	var again unix.Stat_t
	if err := unix.Stat(w.real, &again); err != nil {
		return st, fmt.Errorf("resolving it again: %w", err)
	}
	if again.Dev != st.Dev || again.Ino != st.Ino {
		return st, fmt.Errorf("%s changed while it was being resolved; refusing it", path)
	}
	return st, nil
}

// hashFile returns the SHA-256 of f's content and its first bytes, reading
// from offset 0 without moving f's offset.
func hashFile(f *os.File) (sum [32]byte, head []byte, err error) {
	h := sha256.New()
	r := io.NewSectionReader(f, 0, 1<<62)
	head = make([]byte, 2)
	n, _ := f.ReadAt(head, 0)
	if _, err := io.Copy(h, r); err != nil {
		return sum, nil, err
	}
	copy(sum[:], h.Sum(nil))
	return sum, head[:n], nil
}

// Verify checks, just before the program is started, that f is still the
// file that was opened with the same content: same device and inode, and
// the same SHA-256 read again from the descriptor. It never takes the hash
// from a HashCache: when the content no longer matches a hash that came
// from one, the entry is dropped and the program refused.
func (f *File) Verify() error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.F.Fd()), &st); err != nil {
		return fmt.Errorf("examining the program: %w", err)
	}
	if st.Dev != f.Dev || st.Ino != f.Ino {
		return errors.New("the program's descriptor no longer refers to the approved file")
	}
	sum, _, err := hashFile(f.F)
	if err != nil {
		return fmt.Errorf("reading the program: %w", err)
	}
	if sum != f.SHA256 {
		f.hashes.forget(f.Dev, f.Ino)
		return fmt.Errorf("the program's content changed after it was approved (sha256 %x, approved %x); not running it", sum, f.SHA256)
	}
	return nil
}

// procFD is the path through which the process that holds descriptor fd
// reaches the file it refers to.
func procFD(fd uintptr) string {
	return "/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10)
}
