package audit

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/internal/account"
	"github.com/agent-sudo/agent-sudo/internal/boundedline"
	"github.com/agent-sudo/agent-sudo/internal/fsperm"
)

// MaxLineBytes bounds one line of the log. The largest request (1 MiB, see
// proto.MaxRequestBytes) makes a line of a few MiB; a longer line is
// reported as corrupt rather than read into memory.
const MaxLineBytes = 64 << 20

// logGroupName is the group that may read the log, when it exists.
const logGroupName = "adm"

// writer is the state of the file the log appends to. Only the writer
// goroutine uses it.
type writer struct {
	path string
	wrap func(logFile) logFile
	log  *slog.Logger

	f  logFile     // nil after a failure, until the next successful open
	fi os.FileInfo // f's identity, to notice a rename
	// size is the length of the file's complete lines written; prev and
	// seq are the hash and number of its last record. synced, syncedPrev
	// and syncedSeq are the same for the lines known to be synced: size
	// is larger only while lazily written records wait for a sync.
	size       int64
	prev       string
	seq        uint64
	synced     int64
	syncedPrev string
	syncedSeq  uint64
	// epoch counts the failures that cut records already reported
	// written (lazy ones, not yet synced) off the file: a request whose
	// earlier records were written in an older epoch may have lost them,
	// and goes no further (Log.write's checkEpoch).
	epoch uint64
	buf   []byte
}

// dirty reports whether written records wait for a sync.
func (w *writer) dirty() bool { return w.f != nil && w.size > w.synced }

// markSynced records that everything written is on disk.
func (w *writer) markSynced() {
	w.synced, w.syncedPrev, w.syncedSeq = w.size, w.prev, w.seq
}

// syncPending syncs the records written lazily, if any. A failure cuts
// them off like a failed append (they were reported written, so the
// epoch moves on) and is logged: their callers were already answered.
func (w *writer) syncPending() {
	if !w.dirty() {
		return
	}
	if err := w.f.Sync(); err != nil {
		w.log.Error("audit: records written without waiting for their sync are lost: the sync failed",
			"file", w.path, "records", w.seq-w.syncedSeq, "err", w.fail("sync", err))
		return
	}
	w.markSynced()
}

func (w *writer) head() Receipt { return Receipt{Seq: w.seq, Hash: w.prev} }

// open opens the file and reads where its chain ends.
func (w *writer) open() error {
	if err := prepareDir(filepath.Dir(w.path)); err != nil {
		return fmt.Errorf("audit log %s: %w", w.path, err)
	}
	f, fi, err := openLogFile(w.path)
	if err != nil {
		return fmt.Errorf("audit log %s: %w", w.path, err)
	}
	var lf logFile = f
	if w.wrap != nil {
		lf = w.wrap(f)
	}
	size, prev, seq, err := w.chainEnd(lf, fi.Size())
	if err != nil {
		_ = lf.Close()
		return fmt.Errorf("audit log %s: %w", w.path, err)
	}
	if w.prev != "" && (prev != w.prev || seq != w.seq) {
		w.log.Warn("audit: the chain continues from a different record than the one last written",
			"file", w.path, "last_written_seq", w.seq, "last_written_hash", w.prev, "continues_seq", seq, "continues_hash", prev)
	}
	w.f, w.fi, w.size, w.prev, w.seq = lf, fi, size, prev, seq
	w.markSynced()
	return nil
}

// chainEnd returns the size of f's complete lines and the hash and seq of
// its last record. When f is empty, the chain continues from the last
// record this writer wrote, or, at startup, from the rotated file's last
// record (or Genesis). An
// incomplete last line, which only an interrupted write leaves and which
// was never reported durable, is cut off.
func (w *writer) chainEnd(f logFile, size int64) (int64, string, uint64, error) {
	if size > 0 {
		nl, err := lastNewline(f, size)
		if err != nil {
			return 0, "", 0, err
		}
		if nl != size-1 {
			w.log.Warn("audit: removing an incomplete last line left by an interrupted write",
				"file", w.path, "offset", nl+1, "bytes", size-nl-1)
			if err := f.Truncate(nl + 1); err != nil {
				return 0, "", 0, fmt.Errorf("the file ends with an incomplete line (%d bytes after offset %d) that cannot be removed: %w", size-nl-1, nl+1, err)
			}
			if err := f.Sync(); err != nil {
				return 0, "", 0, fmt.Errorf("sync after removing an incomplete last line: %w", err)
			}
			size = nl + 1
		}
	}
	if size == 0 {
		prev, seq, err := predecessorEnd(w.path)
		if w.prev == "" {
			// A fresh start: the rotated file says where the chain is.
			return 0, prev, seq, err
		}
		// The writer knows what it wrote last: continue from that, so
		// that a log renamed away (not rotated) shows as a gap.
		if err != nil || prev != w.prev {
			w.log.Warn("audit: the new file continues from the last record written, not from the rotated file's last record",
				"file", w.path, "rotated_hash", prev, "rotated_seq", seq, "err", err)
		}
		return 0, w.prev, w.seq, nil
	}
	line, err := lastLine(f, size)
	if err != nil {
		return 0, "", 0, err
	}
	return size, LineHash(line), seqOf(line), nil
}

// append writes one line per body, chained, with one write and, when sync
// is set, one sync, which also covers every line written before. On any
// failure nothing of the batch is reported written, the file is cut back to
// its last synced line when possible, and it is closed; the next append
// opens it again.
func (w *writer) append(bodies [][]byte, sync bool) ([]Receipt, error) {
	if w.f != nil && w.moved() {
		// Lines written lazily to the old file are synced there first.
		w.syncPending()
		if w.f != nil {
			_ = w.f.Close()
			w.f = nil
		}
	}
	if w.f == nil {
		if err := w.open(); err != nil {
			return nil, fmt.Errorf("%w (the record was not written)", err)
		}
	}
	buf := w.buf[:0]
	rcpts := make([]Receipt, len(bodies))
	prev, seq := w.prev, w.seq
	for i, body := range bodies {
		seq++
		start := len(buf)
		buf = append(buf, body[:len(body)-1]...)
		buf = append(buf, `,"seq":`...)
		buf = strconv.AppendUint(buf, seq, 10)
		buf = append(buf, `,"prev":"`...)
		buf = append(buf, prev...)
		buf = append(buf, `"}`...)
		prev = LineHash(buf[start:])
		buf = append(buf, '\n')
		rcpts[i] = Receipt{Seq: seq, Hash: prev}
	}
	if cap(buf) <= maxBatchBytes {
		w.buf = buf[:0]
	} else {
		w.buf = nil
	}
	if _, err := w.f.Write(buf); err != nil {
		return nil, w.fail("write", err)
	}
	if sync {
		// On failure the size is still the one before this batch, so that
		// fail tells lost lazy records from this batch's own.
		if err := w.f.Sync(); err != nil {
			return nil, w.fail("sync", err)
		}
	}
	w.size += int64(len(buf))
	w.prev, w.seq = prev, seq
	if sync {
		w.markSynced()
	}
	return rcpts, nil
}

// fail undoes what was written since the last sync and closes the file.
// Lazily written records among it were reported written: the epoch moves
// on, so that the requests they belong to go no further.
func (w *writer) fail(what string, err error) error {
	// Cut back only what may have been added since the last sync: never
	// extend a file that someone else shrank.
	if fi, serr := w.f.Stat(); serr != nil || fi.Size() < w.synced {
		w.log.Warn("audit: not cutting the log back after a failed write: it is shorter than what was synced",
			"file", w.path, "synced_size", w.synced)
	} else if terr := w.f.Truncate(w.synced); terr != nil {
		w.log.Warn("audit: could not cut the log back to its last synced record after a failed write; the next open removes an incomplete line",
			"file", w.path, "size", w.synced, "err", terr)
	}
	if w.size > w.synced {
		w.epoch++
	}
	w.size, w.prev, w.seq = w.synced, w.syncedPrev, w.syncedSeq
	_ = w.f.Close()
	w.f = nil
	return fmt.Errorf("audit log %s: %s: %w (the record was not written)", w.path, what, err)
}

// moved reports whether path no longer names the open file as the writer
// left it: logrotate renamed it, someone removed it, or it shrank
// (copytruncate). The writer then opens path again and continues the chain
// from what is on disk.
func (w *writer) moved() bool {
	fi, err := os.Lstat(w.path)
	return err != nil || !os.SameFile(fi, w.fi) || fi.Size() < w.size
}

func (w *writer) reopen() error {
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
	return w.open()
}

func (w *writer) close() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	if err != nil {
		return fmt.Errorf("audit log %s: close: %w", w.path, err)
	}
	return nil
}

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
		return errors.New("another process (a second agent-sudod?) is writing this log; two writers would break its hash chain")
	}
	if lockErr != nil {
		return fmt.Errorf("lock: %w", lockErr)
	}
	return nil
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

// lastNewline returns the offset of the last '\n' in the first size bytes
// of r, or -1 when there is none. It reads backwards, at most MaxLineBytes.
func lastNewline(r io.ReaderAt, size int64) (int64, error) {
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	for end := size; end > 0; {
		if size-end > MaxLineBytes {
			return 0, fmt.Errorf("no line break in the last %d bytes: not an audit log, or its last line is corrupt", MaxLineBytes)
		}
		start := max(0, end-chunk)
		b := buf[:end-start]
		if _, err := r.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("read the end of the file: %w", err)
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i), nil
		}
		end = start
	}
	return -1, nil
}

// lastLine returns the last line of the first size bytes of r, which end
// with '\n', without that newline.
func lastLine(r io.ReaderAt, size int64) ([]byte, error) {
	nl, err := lastNewline(r, size-1)
	if err != nil {
		return nil, err
	}
	line := make([]byte, size-1-(nl+1))
	if _, err := r.ReadAt(line, nl+1); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read the last line: %w", err)
	}
	return line, nil
}

// seqOf returns the seq of a record line, or 0 when it has none.
func seqOf(line []byte) uint64 {
	var r struct {
		Seq uint64 `json:"seq"`
	}
	if json.Unmarshal(line, &r) != nil {
		return 0
	}
	return r.Seq
}

// predecessorEnd returns where the chain of the rotated file path.1 (or
// path.1.gz) ends: the hash and seq of its last complete line. Without a
// rotated file, the chain starts at Genesis.
func predecessorEnd(path string) (string, uint64, error) {
	for _, name := range []string{path + ".1", path + ".1.gz"} {
		line, err := lastLineOfFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", 0, fmt.Errorf("continue the chain of the rotated file %s: %w", name, err)
		}
		if line == nil {
			continue // empty: look further back
		}
		return LineHash(line), seqOf(line), nil
	}
	return Genesis, 0, nil
}

// lastLineOfFile returns the last complete line of a plain or gzip file,
// or nil when it has none.
func lastLineOfFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := decompressed(f)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var last []byte
	for {
		line, complete, err := readLine(br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return last, nil
			}
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		if complete {
			last = append(last[:0], line...)
		}
	}
}

// decompressed returns r's content, gunzipped when it starts with the gzip
// magic number, whatever its name.
func decompressed(f io.Reader) (io.Reader, error) {
	br := bufio.NewReader(f)
	magic, err := br.Peek(2)
	if err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return zr, nil
	}
	return br, nil
}

// errLineTooLong is reported for a line longer than MaxLineBytes; the rest
// of it is skipped.
var errLineTooLong = fmt.Errorf("line longer than %d bytes", MaxLineBytes)

// readLine reads one line, without its newline. complete is false for a
// last line with no newline. A line longer than MaxLineBytes is skipped and
// reported with errLineTooLong. At the end of input it returns io.EOF.
func readLine(br *bufio.Reader) (line []byte, complete bool, err error) {
	line, n, err := boundedline.Read(br, MaxLineBytes+1) // room for the newline
	switch {
	case err == nil:
		if n > MaxLineBytes+1 {
			return nil, true, errLineTooLong
		}
		return line[:n-1], true, nil
	case errors.Is(err, io.EOF):
		if n > MaxLineBytes {
			return nil, false, errLineTooLong
		}
		if n == 0 {
			return nil, false, io.EOF
		}
		return line, false, nil
	default:
		return nil, false, err
	}
}
