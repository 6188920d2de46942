package audit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Entry is one line of the log as it was read.
type Entry struct {
	// File and Line locate the line; Line counts from 1 in each file.
	File string
	Line int
	// Raw is the line without its newline.
	Raw []byte
	// Hash is LineHash(Raw), the prev of the line that should follow.
	Hash string
	// Record is the decoded line; nil when the line is corrupt.
	Record *Record
}

// Location returns "file:line".
func (e Entry) Location() string { return e.File + ":" + strconv.Itoa(e.Line) }

// LineError reports a line that is not a valid record, or that could not
// be read whole.
type LineError struct {
	File string
	Line int
	Err  error
}

// Error returns "file:line: problem".
func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

// Unwrap returns the underlying problem.
func (e *LineError) Unwrap() error { return e.Err }

// errIncomplete is the problem of a last line with no newline.
var errIncomplete = errors.New("incomplete line: no newline at the end of the file (an interrupted write, or the file was cut)")

// Files returns the files of the log at path, oldest first: its rotated
// predecessors path.N or path.N.gz, highest N first, then path itself. A
// file missing in the middle of the numbers is not an error here; Verify
// reports the gap in the chain. It is an error when nothing exists at all,
// or when both path.N and path.N.gz exist.
func Files(path string) ([]string, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("audit log %s: %w (its directory does not exist)", path, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("list the audit log's directory: %w", err)
	}
	rotated := map[int]string{}
	for _, e := range entries {
		name := e.Name()
		rest, ok := strings.CutPrefix(name, base+".")
		if !ok {
			continue
		}
		num := strings.TrimSuffix(rest, ".gz")
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 || strconv.Itoa(n) != num {
			continue
		}
		if other, dup := rotated[n]; dup {
			return nil, fmt.Errorf("both %s and %s exist; remove or rename the one that is not rotation number %d",
				filepath.Join(dir, other), filepath.Join(dir, name), n)
		}
		rotated[n] = name
	}
	nums := make([]int, 0, len(rotated))
	for n := range rotated {
		nums = append(nums, n)
	}
	slices.Sort(nums)
	slices.Reverse(nums)
	files := make([]string, 0, len(nums)+1)
	for _, n := range nums {
		files = append(files, filepath.Join(dir, rotated[n]))
	}
	if _, err := os.Lstat(path); err == nil {
		files = append(files, path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("audit log %s: %w", path, fs.ErrNotExist)
	}
	return files, nil
}

// Read yields every line of files, in order, each file plain or gzip
// (recognised by its content). A corrupt line is yielded with a
// *[LineError] and its Entry (Record nil), and reading goes on if the
// consumer continues. A file that cannot be opened or read ends the
// iteration with an error that is not a *LineError, as does ctx ending.
func Read(ctx context.Context, files ...string) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		for _, name := range files {
			if !readFile(ctx, name, yield) {
				return
			}
		}
	}
}

// readFile yields the lines of one file; it returns false when the
// iteration must stop.
func readFile(ctx context.Context, name string, yield func(Entry, error) bool) bool {
	f, err := os.Open(name)
	if err != nil {
		yield(Entry{File: name}, fmt.Errorf("read audit log: %w", err))
		return false
	}
	defer f.Close()
	r, err := decompressed(f)
	if err != nil {
		yield(Entry{File: name}, fmt.Errorf("read audit log %s: %w", name, err))
		return false
	}
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			yield(Entry{File: name, Line: n}, ctx.Err())
			return false
		}
		line, complete, err := readLine(br)
		switch {
		case errors.Is(err, io.EOF):
			return true
		case errors.Is(err, errLineTooLong):
			if !yield(Entry{File: name, Line: n}, &LineError{File: name, Line: n, Err: err}) {
				return false
			}
			continue
		case err != nil:
			yield(Entry{File: name, Line: n}, fmt.Errorf("read audit log %s after line %d: %w", name, n-1, err))
			return false
		}
		e, err := makeEntry(name, n, line)
		if !complete {
			e.Record, err = nil, &LineError{File: name, Line: n, Err: errIncomplete}
		}
		if !yield(e, err) {
			return false
		}
	}
}

// makeEntry decodes one line; the error, if any, is a *LineError.
func makeEntry(file string, n int, line []byte) (Entry, error) {
	e := Entry{File: file, Line: n, Raw: bytes.Clone(line), Hash: LineHash(line)}
	rec, err := parseRecord(e.Raw)
	if err != nil {
		return e, &LineError{File: file, Line: n, Err: err}
	}
	e.Record = rec
	return e, nil
}

// FollowOptions configure [Follow].
type FollowOptions struct {
	// Poll is how often the file is checked for new lines and for a
	// rotation; zero means one second.
	Poll time.Duration
	// CaughtUp, when set, is called once, between two yields, when every
	// line that was in the log when Follow started has been yielded: what
	// comes after it is new.
	CaughtUp func()
}

// Follow yields every line of the log at path, from the oldest rotated
// file on, and then each line appended to path, until ctx ends (it then
// stops without an error). It follows a rotation: once path names a new
// file, it reads what is left of the old one and goes on with the new one
// from its start. Errors are as for [Read]; a file that shrinks
// (copytruncate) is reported and read again from its start.
func Follow(ctx context.Context, path string, opts FollowOptions) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		poll := opts.Poll
		if poll <= 0 {
			poll = time.Second
		}
		// Open the current file before listing the rotated ones, so that a
		// rotation in between neither loses nor repeats lines.
		t := &tailer{path: path, poll: poll, caughtUp: opts.CaughtUp}
		defer t.close()
		if err := t.openCurrent(); err != nil && !errors.Is(err, fs.ErrNotExist) {
			yield(Entry{File: path}, err)
			return
		}
		files, err := Files(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			yield(Entry{File: path}, err)
			return
		}
		var older []string
		for _, name := range files {
			if name == path || t.same(name) {
				continue
			}
			older = append(older, name)
		}
		for e, err := range Read(ctx, older...) {
			if !yield(e, err) {
				return
			}
			if err != nil && !isLineError(err) {
				return
			}
		}
		t.follow(ctx, yield)
	}
}

func isLineError(err error) bool {
	var le *LineError
	return errors.As(err, &le)
}

// tailer reads a growing file and follows its rotation.
type tailer struct {
	path    string
	poll    time.Duration
	f       *os.File
	fi      os.FileInfo
	name    string // what f was opened as, for locations
	off     int64
	line    int
	pending []byte
	skip    bool // dropping the rest of a line that was too long
	buf     []byte
	// caughtUp is called the first time the file has nothing more.
	caughtUp func()
}

func (t *tailer) openCurrent() error {
	f, err := os.Open(t.path)
	if err != nil {
		return fmt.Errorf("read audit log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("read audit log: %w", err)
	}
	t.close()
	t.f, t.fi, t.name, t.off, t.line, t.pending, t.skip = f, fi, t.path, 0, 0, nil, false
	return nil
}

func (t *tailer) same(name string) bool {
	if t.fi == nil {
		return false
	}
	fi, err := os.Stat(name)
	return err == nil && os.SameFile(fi, t.fi)
}

func (t *tailer) close() {
	if t.f != nil {
		_ = t.f.Close()
		t.f = nil
	}
}

// follow reads lines as they come until ctx ends or the consumer stops.
func (t *tailer) follow(ctx context.Context, yield func(Entry, error) bool) {
	if t.buf == nil {
		t.buf = make([]byte, 64<<10)
	}
	for {
		if t.f != nil {
			more, ok := t.drain(yield)
			if !ok {
				return
			}
			if more {
				continue
			}
		}
		rotated, err := t.checkRotation()
		if err != nil && !yield(Entry{File: t.path}, err) {
			return
		}
		if rotated {
			continue
		}
		if t.caughtUp != nil {
			t.caughtUp()
			t.caughtUp = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(t.poll):
		}
	}
}

// drain reads what f has now and yields its complete lines. more is true
// when it read something (there may be more); ok is false when the consumer
// stopped.
func (t *tailer) drain(yield func(Entry, error) bool) (more, ok bool) {
	n, err := t.f.ReadAt(t.buf, t.off)
	if n == 0 {
		if err != nil && !errors.Is(err, io.EOF) {
			return false, yield(Entry{File: t.name}, fmt.Errorf("read audit log %s: %w", t.name, err))
		}
		return false, true
	}
	t.off += int64(n)
	data := t.buf[:n]
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if !t.skip {
				t.pending = append(t.pending, data...)
				if len(t.pending) > MaxLineBytes {
					t.pending, t.skip = nil, true
				}
			}
			break
		}
		line := data[:i]
		data = data[i+1:]
		t.line++
		if !t.skip && len(t.pending)+len(line) > MaxLineBytes {
			t.pending, t.skip = nil, true
		}
		if t.skip {
			t.skip = false
			if !yield(Entry{File: t.name, Line: t.line}, &LineError{File: t.name, Line: t.line, Err: errLineTooLong}) {
				return true, false
			}
			continue
		}
		if len(t.pending) > 0 {
			line = append(t.pending, line...)
			t.pending = nil
		}
		e, err := makeEntry(t.name, t.line, line)
		if !yield(e, err) {
			return true, false
		}
	}
	return true, true
}

// checkRotation switches to a new file at path once the old one is read to
// its end, and notices a file that shrank.
func (t *tailer) checkRotation() (bool, error) {
	fi, err := os.Stat(t.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // between a rename and the new file: wait
		}
		return false, fmt.Errorf("follow audit log: %w", err)
	}
	if t.f == nil || !os.SameFile(fi, t.fi) {
		// The old file has been read to its end (drain found nothing).
		incomplete := t.f != nil && (len(t.pending) > 0 || t.skip)
		oldName, oldLine := t.name, t.line+1
		if err := t.openCurrent(); err != nil {
			return false, err
		}
		if incomplete {
			return true, &LineError{File: oldName, Line: oldLine, Err: errIncomplete}
		}
		return true, nil
	}
	if fi.Size() < t.off {
		t.off, t.line, t.pending, t.skip = 0, 0, nil, false
		return true, &LineError{File: t.path, Line: 0, Err: errors.New("the file shrank (truncated or copytruncate rotation): following it again from its start; lines may have been missed")}
	}
	return false, nil
}
