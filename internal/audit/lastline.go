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
	"os"

	"github.com/agent-sudo/agent-sudo/internal/boundedline"
)

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
