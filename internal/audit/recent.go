package audit

import (
	"bufio"
	"bytes"
	"context"
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
// or after since: those of the file path and of its rotated predecessor,
// path.1 or path.1.gz, newest file first and, within a file, last line
// first. It reads both files whole and does not assume that record times
// grow from line to line: after a clock step (NTP after boot, a resumed
// VM) a record written later can carry an earlier time, and one written
// before it a time within the window. No log at all is no records. Lines
// that are not records (a torn last line, a corrupt one) are skipped:
// audit.Verify reports them.
//
// The daemon reads these at start to remember the request ids that could
// still be replayed (docs/security.md, "Replaying a captured request"). The
// cost is one pass over the two files; request records older than since
// are skipped on their time alone, without decoding the rest of the line.
func RecentRequests(path string, since time.Time) ([]Recent, error) {
	return recentRequests(context.Background(), path, since, nil)
}

// StartScan is what a starting daemon reads of its log, in one pass over
// the file at path: the request records written at or after since, as
// [RecentRequests] returns them (path's rotated predecessor read too), and
// the requests the file shows allowed and never finished, as
// [UnfinishedRequests] returns them. No log at all is neither.
func StartScan(ctx context.Context, path string, since time.Time) (recent []Recent, unfinished []Unfinished, err error) {
	u := newUnfinishedScan()
	recent, err = recentRequests(ctx, path, since, u.line)
	if err != nil {
		return nil, nil, err
	}
	return recent, u.result(), nil
}

// recentRequests is RecentRequests, also handing each complete line of
// the file path (not its predecessor) with its number to also, when set.
func recentRequests(ctx context.Context, path string, since time.Time, also func(n int, line []byte)) ([]Recent, error) {
	var out []Recent
	for _, name := range []string{path, path + ".1", path + ".1.gz"} {
		if name == path+".1.gz" {
			if _, err := os.Stat(path + ".1"); err == nil {
				break // the predecessor is path.1
			}
		}
		var found []Recent
		err := eachLine(ctx, name, func(n int, line []byte) {
			recentLine(line, since, &found)
			if also != nil && name == path {
				also(n, line)
			}
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return out, err
		}
		// Last line first, within a file.
		for i := len(found) - 1; i >= 0; i-- {
			out = append(out, found[i])
		}
	}
	return out, nil
}

// eachLine calls each with every complete line of the file name (plain or
// gzip) and its number, from the file's start; lines too long to be
// records, and a last line without its newline, are skipped. It stops with
// ctx's error when ctx ends.
func eachLine(ctx context.Context, name string, each func(n int, line []byte)) error {
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
	for n := 1; ; n++ {
		if n%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line, complete, err := readLine(br)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil && !errors.Is(err, errLineTooLong):
			return fmt.Errorf("read %s after line %d: %w", name, n-1, err)
		case err == nil && complete:
			each(n, line)
		}
	}
}

// The start of every record line the writer writes: its type, then its
// time (see Record).
var (
	typePrefix    = []byte(`{"type":"`)
	requestPrefix = []byte(`{"type":"request","time":"`)
)

// recentLine appends line's request to out when it is a request record
// written at or after since. A line the writer wrote is judged on its
// prefix (type, then time) first, so that the many lines that are not
// recent request records are not decoded whole.
func recentLine(line []byte, since time.Time, out *[]Recent) {
	if bytes.HasPrefix(line, typePrefix) && !bytes.HasPrefix(line, requestPrefix) {
		return
	}
	if rest, ok := bytes.CutPrefix(line, requestPrefix); ok {
		if end := bytes.IndexByte(rest, '"'); end > 0 {
			if at, err := time.Parse(time.RFC3339Nano, string(rest[:end])); err == nil && at.Before(since) {
				return
			}
		}
	}
	var r struct {
		Type    Type      `json:"type"`
		Time    time.Time `json:"time"`
		ID      string    `json:"id"`
		Request *struct {
			RequestTime time.Time `json:"request_time"`
		} `json:"request"`
	}
	if len(line) == 0 || json.Unmarshal(line, &r) != nil || r.Time.IsZero() || r.Time.Before(since) {
		return
	}
	if r.Type == TypeRequest && r.ID != "" && r.Request != nil {
		*out = append(*out, Recent{ID: r.ID, RequestTime: r.Request.RequestTime, Received: r.Time})
	}
}
