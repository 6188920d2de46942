package runner

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// capture collects one output stream, keeping at most max bytes.
//
// Its buffer is an anonymous private mapping of max bytes reserved up front
// and read into directly. Pages become resident only as output arrives, so a
// command that prints little costs little; nothing is ever copied to grow
// the buffer; and the bytes live outside the Go heap, so a 16 MiB output
// does not also cost the garbage collector's headroom. The mapping must be
// released: by release, or, once result has made it an Output's, by
// Output.Release (Result.Release).
type capture struct {
	max       int
	buf       []byte // the mapping, len max; nil before init
	n         int    // bytes kept
	truncated bool
	// sum hashes the kept bytes as they arrive, so the audit log's
	// SHA-256 of a 16 MiB output costs nothing after the command ends.
	sum hash.Hash

	// mu guards latest and total, which a Live reads while the reader
	// writes them. The mapping is never read through a Live, so its
	// lifetime is the reader's and Release's business only.
	mu sync.Mutex
	// latest holds the last TailBytes bytes the stream carried, kept or
	// discarded: the end of the output so far.
	latest []byte
	// total counts every byte the stream carried, kept or discarded.
	total int64
}

// init maps the buffer.
func (c *capture) init(max int) error {
	b, err := unix.Mmap(-1, 0, max, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
	if err != nil {
		return fmt.Errorf("runner: reserving %d bytes for output: %w", max, err)
	}
	if max > smallPagesBytes {
		// Past the first 2 MiB, transparent huge pages (docs/execution.md,
		// "Output"); advice the kernel may ignore, so its error is too.
		_ = unix.Madvise(b[smallPagesBytes:], unix.MADV_HUGEPAGE)
	}
	c.max, c.buf, c.sum = max, b, sha256.New()
	return nil
}

// smallPagesBytes is how much of a capture is mapped with ordinary pages:
// the output of almost every command fits, and costs only the pages it
// touches.
const smallPagesBytes = 2 << 20

// release unmaps the buffer unless result has handed it to an Output.
func (c *capture) release() {
	if c.buf != nil {
		_ = unix.Munmap(c.buf)
		c.buf = nil
	}
}

// readFrom reads r until EOF, an error or the read deadline. Bytes past the
// cap are read and discarded, so that the writer never blocks on a full pipe
// nor dies of SIGPIPE because its output was long.
func (c *capture) readFrom(r *os.File) {
	var discard []byte
	for {
		dst := c.room()
		if dst == nil {
			if discard == nil {
				discard = make([]byte, readChunk)
			}
			dst = discard
		}
		n, err := r.Read(dst)
		c.account(dst, n)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// A writer escaped the process group and keeps the pipe open
			// (see finishReading). A read past its deadline returns at once
			// without looking at the pipe, so what the stages wrote before
			// they exited may still be in it: take that, without waiting.
			c.drainNow(r)
			return
		}
		if err != nil {
			return // io.EOF once every writer is gone
		}
	}
}

// room returns the unused part of the buffer, or nil when it is full.
func (c *capture) room() []byte {
	if c.n >= c.max {
		return nil
	}
	return c.buf[c.n:c.max]
}

// account records n bytes read into dst.
func (c *capture) account(dst []byte, n int) {
	if n <= 0 {
		return
	}
	c.remember(dst[:n])
	if c.n < c.max && &dst[0] == &c.buf[c.n] {
		c.sum.Write(dst[:n])
		c.n += n
		return
	}
	c.truncated = true
}

// drainNow reads what is in the pipe right now, without blocking.
func (c *capture) drainNow(r *os.File) {
	raw, err := r.SyscallConn()
	if err != nil {
		return
	}
	discard := make([]byte, readChunk)
	_ = raw.Control(func(fd uintptr) {
		for {
			dst := c.room()
			if dst == nil {
				dst = discard
			}
			n, err := unix.Read(int(fd), dst)
			if err != nil || n <= 0 {
				return // EAGAIN: nothing more buffered; 0: EOF
			}
			c.account(dst, n)
		}
	})
}

// add appends as much of b as the cap allows.
func (c *capture) add(b []byte) {
	c.remember(b)
	room := c.room()
	if len(b) > len(room) {
		c.truncated = true
		b = b[:len(room)]
	}
	n := copy(room, b)
	c.sum.Write(room[:n])
	c.n += n
}

// remember keeps the end of b as the latest output and counts it.
func (c *capture) remember(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(b))
	if len(b) >= TailBytes {
		c.latest = append(c.latest[:0], b[len(b)-TailBytes:]...)
		return
	}
	if over := len(c.latest) + len(b) - TailBytes; over > 0 {
		c.latest = c.latest[:copy(c.latest, c.latest[over:])]
	}
	c.latest = append(c.latest, b...)
}

// tail returns a copy of the latest output and the number of bytes the
// stream has carried so far.
func (c *capture) tail() ([]byte, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.latest...), c.total
}

// result returns the captured bytes as an Output that takes over the
// mapping (the capture no longer releases it), whether any were discarded,
// and the SHA-256 of the captured bytes. It is only called after the reader
// has stopped.
func (c *capture) result() (*Output, bool, [sha256.Size]byte) {
	var sum [sha256.Size]byte
	c.sum.Sum(sum[:0])
	buf := c.buf
	c.buf = nil
	out := newMappedOutput(buf[:c.n:c.n], func() { _ = unix.Munmap(buf) })
	return out, c.truncated, sum
}

func (p *pipeline) releaseCaptures() {
	p.stdout.release()
	for i := range p.stderrs {
		p.stderrs[i].release()
	}
}
