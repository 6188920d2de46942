package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// Recent is a request record read back from the end of the log: the
// request's id and the time it carried.
type Recent struct {
	ID string
	// RequestTime is the request's own time (its `time` field), zero for a
	// record that has none.
	RequestTime time.Time
	// Received is the record's time: when the daemon received the request.
	Received time.Time
}

// RecentRequests returns the request records of the log at path written at
// or after since, newest first, read backwards from the end of the file
// and, when the file starts after since (or is missing), from its rotated
// predecessor: path.1, or path.1.gz, read whole since gzip cannot be read
// backwards. It stops at the first record older than since: records are
// appended in the order they are written, and a caller that asks for a
// margin more than the few milliseconds by which concurrent records can be
// out of order sees them all. No log at all is no records. Lines that are
// not records (a torn last line, a corrupt one) are skipped: audit.Verify
// reports them.
//
// The daemon reads these at start to remember the request ids that could
// still be replayed (docs/security.md, "Replaying a captured request").
func RecentRequests(path string, since time.Time) ([]Recent, error) {
	var out []Recent
	done, err := recentInFile(path, since, &out)
	if err != nil && !errors.Is(err, fs.ErrNotExist) || done {
		return out, err
	}
	done, err = recentInFile(path+".1", since, &out)
	if !errors.Is(err, fs.ErrNotExist) || done {
		return out, err
	}
	err = recentInGzip(path+".1.gz", since, &out)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	return out, err
}

// recentInGzip appends the request records of the gzip file name written at
// or after since to out, newest first, reading it from its start.
func recentInGzip(name string, since time.Time, out *[]Recent) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := decompressed(f)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var found []Recent
	for {
		line, complete, err := readLine(br)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, errLineTooLong) {
			return fmt.Errorf("read %s: %w", name, err)
		}
		if complete {
			recentLine(line, since, &found)
		}
	}
	for i := len(found) - 1; i >= 0; i-- {
		*out = append(*out, found[i])
	}
	return nil
}

// recentInFile appends the request records of the file name written at or
// after since to out, newest first; done reports that it met an older
// record, so that no earlier file need be read.
func recentInFile(name string, since time.Time, out *[]Recent) (done bool, err error) {
	f, err := os.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("read %s: %w", name, err)
	}
	const chunk = 64 << 10
	var tail []byte // the start of a line whose beginning is not read yet
	for end := info.Size(); end > 0; {
		start := max(0, end-chunk)
		buf := make([]byte, end-start, int(end-start)+len(tail))
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return false, fmt.Errorf("read %s: %w", name, err)
		}
		buf = append(buf, tail...)
		// Every complete line in buf but the first, which may begin
		// before start, newest first.
		for {
			i := bytes.LastIndexByte(buf[:max(0, len(buf)-1)], '\n')
			if i < 0 {
				break
			}
			if older := recentLine(buf[i+1:], since, out); older {
				return true, nil
			}
			buf = buf[:i+1]
		}
		if start == 0 {
			if older := recentLine(buf, since, out); older {
				return true, nil
			}
			return false, nil
		}
		if len(buf) > MaxLineBytes {
			// A line longer than any record: skip it, as Read does.
			buf = nil
		}
		tail = buf
		end = start
	}
	return false, nil
}

// recentLine appends line's request to out when it is a request record
// written at or after since; older reports a record written before since.
func recentLine(line []byte, since time.Time, out *[]Recent) (older bool) {
	line = bytes.TrimSuffix(line, []byte("\n"))
	var r struct {
		Type    Type      `json:"type"`
		Time    time.Time `json:"time"`
		ID      string    `json:"id"`
		Request *struct {
			RequestTime time.Time `json:"request_time"`
		} `json:"request"`
	}
	if len(line) == 0 || json.Unmarshal(line, &r) != nil || r.Time.IsZero() {
		return false
	}
	if r.Time.Before(since) {
		return true
	}
	if r.Type == TypeRequest && r.ID != "" && r.Request != nil {
		*out = append(*out, Recent{ID: r.ID, RequestTime: r.Request.RequestTime, Received: r.Time})
	}
	return false
}
