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
	var out []Recent
	for _, name := range []string{path, path + ".1", path + ".1.gz"} {
		if name == path+".1.gz" {
			if _, err := os.Stat(path + ".1"); err == nil {
				break // the predecessor is path.1
			}
		}
		err := recentInFile(name, since, &out)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return out, err
		}
	}
	return out, nil
}

// recentInFile appends the request records of the file name (plain or
// gzip) written at or after since to out, last line first, reading it
// from its start.
func recentInFile(name string, since time.Time, out *[]Recent) error {
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
