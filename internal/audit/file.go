package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
)

// MaxLineBytes bounds one line of the log. The largest request (1 MiB, see
// proto.MaxRequestBytes) makes a line of a few MiB; a longer line is
// reported as corrupt rather than read into memory.
const MaxLineBytes = 64 << 20

// writer is the state of the file the log appends to. Only the writer
// goroutine uses it.
//
// The writer keeps its file, and with it the writers' lock (flock), open
// for as long as path names that file: a failed write or sync, and a
// Reopen of a path that still names it, keep the descriptor. Were it closed
// and opened again, the lock would be taken anew on the same file, and a
// child the daemon is starting (which shares the old open file description
// between its fork and its exec) would still hold the old one: the new lock
// would be refused. Only when path names another file (logrotate renamed
// it, someone removed it) is the old file closed and the new one opened and
// locked.
type writer struct {
	path string
	wrap func(logFile) logFile
	log  *slog.Logger
	// lost, when set, is told of records reported written that a failed
	// sync cut from the file, and of the head of the chain after the cut.
	lost func(lost []lostRecord, head Receipt)

	f  logFile     // nil after a failed open, until the next successful one
	fi os.FileInfo // f's identity, to notice a rename
	// stale is set when the file may not end where size says (a failed
	// write or sync could not cut it back): the next append reads where
	// its chain ends again, from the same descriptor.
	stale bool
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
	// epoch counts the failed syncs that cut records already reported
	// written (lazy ones, not yet synced) off the file: a request whose
	// earlier records were written in an older epoch may have lost them,
	// and goes no further (Log.write's checkEpoch).
	epoch uint64
	buf   []byte
}

// lostRecord is a record that was reported written, without waiting for
// its sync, and that a failed sync then cut from the log.
type lostRecord struct {
	Seq  uint64
	Hash string
	Type Type
	ID   string
}

// dirty reports whether written records wait for a sync.
func (w *writer) dirty() bool { return w.f != nil && w.size > w.synced }

// markSynced records that everything written is on disk.
func (w *writer) markSynced() {
	w.synced, w.syncedPrev, w.syncedSeq = w.size, w.prev, w.seq
}

// syncPending syncs the records written lazily, if any. A failure cuts
// them off (they were reported written, so the epoch moves on) and logs
// each one lost: their callers were already answered.
func (w *writer) syncPending() {
	if !w.dirty() {
		return
	}
	if err := w.f.Sync(); err != nil {
		_ = w.failSync(err)
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
	w.continueFrom(prev, seq)
	w.f, w.fi, w.size, w.prev, w.seq, w.stale = lf, fi, size, prev, seq, false
	w.markSynced()
	return nil
}

// continueFrom warns when the chain continues from another record than the
// one this writer wrote last.
func (w *writer) continueFrom(prev string, seq uint64) {
	if w.prev != "" && (prev != w.prev || seq != w.seq) {
		w.log.Warn("audit: the chain continues from a different record than the one last written",
			"file", w.path, "last_written_seq", w.seq, "last_written_hash", w.prev, "continues_seq", seq, "continues_hash", prev)
	}
}

// resync reads where the chain of the open file ends again, after a
// failure left the file's end unknown or someone shrank it, and syncs the
// file, so that whatever of it is kept is on disk. It keeps the
// descriptor, and with it the lock.
func (w *writer) resync() error {
	fi, err := w.f.Stat()
	if err != nil {
		return fmt.Errorf("audit log %s: stat: %w (the record was not written)", w.path, err)
	}
	size, prev, seq, err := w.chainEnd(w.f, fi.Size())
	if err != nil {
		return fmt.Errorf("audit log %s: %w (the record was not written)", w.path, err)
	}
	if size < w.synced {
		// Someone shrank the file: what was synced is not there to lose.
		w.synced, w.syncedPrev, w.syncedSeq = size, prev, seq
	}
	w.continueFrom(prev, seq)
	w.size, w.prev, w.seq = size, prev, seq
	if err := w.f.Sync(); err != nil {
		return w.failSync(err)
	}
	w.markSynced()
	w.stale = false
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
// failure nothing of the batch is reported written. A failed write cuts the
// file back to where the batch began: the lines before it, synced or not,
// were reported written and stay. Only a failed sync cuts back further, to
// the last synced line (see failSync).
func (w *writer) append(bodies [][]byte, sync bool) ([]Receipt, error) {
	if err := w.ready(); err != nil {
		return nil, err
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
		return nil, w.failWrite(err)
	}
	if sync {
		// On failure the size is still the one before this batch, so that
		// failSync tells lost lazy records from this batch's own.
		if err := w.f.Sync(); err != nil {
			return nil, w.failSync(err)
		}
	}
	w.size += int64(len(buf))
	w.prev, w.seq = prev, seq
	if sync {
		w.markSynced()
	}
	return rcpts, nil
}

// ready makes sure the writer has the file path names open and knows where
// its chain ends: it opens path when the open file was renamed or removed
// (after syncing what was written to it lazily), and reads the chain's end
// again, from the same descriptor, after a failure or when someone shrank
// the file (copytruncate).
func (w *writer) ready() error {
	if w.f != nil {
		fi, err := os.Lstat(w.path)
		if err == nil && os.SameFile(fi, w.fi) {
			if w.stale || fi.Size() < w.size {
				return w.resync()
			}
			return nil
		}
		// Lines written lazily to the old file are synced there first.
		w.syncPending()
		if err := w.f.Close(); err != nil {
			w.log.Warn("audit: closing the renamed or removed log file failed", "file", w.path, "err", err)
		}
		w.f = nil
		w.log.Info("audit: the log's path no longer names the open file (rotated, removed or replaced): continuing in the file it names", "file", w.path)
	}
	if err := w.open(); err != nil {
		return fmt.Errorf("%w (the record was not written)", err)
	}
	return nil
}

// failWrite handles a failed write of a batch: it cuts the file back to
// where the batch began, removing only the batch's own partial bytes. The
// records before it (synced or not) were reported written, and stay; the
// descriptor stays open, and with it the lock. When the file cannot be cut
// back, the next append reads its end again (resync), removing the
// incomplete line.
func (w *writer) failWrite(err error) error {
	// Never extend a file that someone else shrank.
	if fi, serr := w.f.Stat(); serr != nil || fi.Size() < w.size {
		w.log.Warn("audit: not cutting the log back after a failed write: it is shorter than what was written",
			"file", w.path, "written_size", w.size)
		w.stale = true
	} else if terr := w.f.Truncate(w.size); terr != nil {
		w.log.Warn("audit: could not cut a failed write off the log; the next write removes the incomplete line",
			"file", w.path, "size", w.size, "err", terr)
		w.stale = true
	}
	return fmt.Errorf("audit log %s: write: %w (the record was not written)", w.path, err)
}

// failSync handles a failed sync: what was written since the last
// successful sync may not be on disk, so the file is cut back to the last
// synced line. Lazily written records among it were reported written: each
// one lost is logged and reported to w.lost (the journal), and the epoch
// moves on, so that the requests they belong to go no further.
func (w *writer) failSync(err error) error {
	lost := w.lostRecords()
	// Never extend a file that someone else shrank.
	if fi, serr := w.f.Stat(); serr != nil || fi.Size() < w.synced {
		w.log.Warn("audit: not cutting the log back after a failed sync: it is shorter than what was synced",
			"file", w.path, "synced_size", w.synced)
		w.stale = true
	} else if terr := w.f.Truncate(w.synced); terr != nil {
		w.log.Warn("audit: could not cut the log back to its last synced record after a failed sync; the next write removes an incomplete line",
			"file", w.path, "size", w.synced, "err", terr)
		w.stale = true
	}
	if w.size > w.synced {
		w.epoch++
	}
	w.size, w.prev, w.seq = w.synced, w.syncedPrev, w.syncedSeq
	if len(lost) > 0 {
		for _, r := range lost {
			w.log.Error("audit: a record reported written is lost: the sync that was to make it durable failed, and the log was cut back to its last synced record",
				"file", w.path, "seq", r.Seq, "hash", r.Hash, "type", r.Type, "id", r.ID, "err", err)
		}
		if w.lost != nil {
			w.lost(lost, w.head())
		}
	}
	return fmt.Errorf("audit log %s: sync: %w (the record was not written)", w.path, err)
}

// lostRecords reads back the records written since the last sync (the
// lines between synced and size), which a failed sync is about to cut. A
// record it cannot read is still counted, with its seq.
func (w *writer) lostRecords() []lostRecord {
	n := w.size - w.synced
	if n <= 0 {
		return nil
	}
	out := make([]lostRecord, 0, w.seq-w.syncedSeq)
	buf := make([]byte, n)
	if _, err := w.f.ReadAt(buf, w.synced); err == nil || errors.Is(err, io.EOF) {
		for line := range bytes.Lines(buf) {
			line = bytes.TrimSuffix(line, []byte("\n"))
			var r struct {
				Type Type   `json:"type"`
				ID   string `json:"id"`
				Seq  uint64 `json:"seq"`
			}
			if json.Unmarshal(line, &r) != nil {
				continue
			}
			out = append(out, lostRecord{Seq: r.Seq, Hash: LineHash(line), Type: r.Type, ID: r.ID})
		}
	}
	if len(out) == 0 {
		// Unreadable: name them by seq alone.
		for s := w.syncedSeq + 1; s <= w.seq; s++ {
			out = append(out, lostRecord{Seq: s})
		}
	}
	return out
}

// reopen opens path again when it no longer names the open file; when it
// still does, the file (and its lock) is kept. Lines written lazily are
// synced first.
func (w *writer) reopen() error {
	return w.ready()
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
