package audit

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRecentRequests: the request records written since a time are read
// back from the end of the log, newest first, across chunk boundaries and
// into the rotated predecessor, skipping what is not a request record.
func TestRecentRequests(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	line := func(typ string, sec int, id string) string {
		at := t0.Add(time.Duration(sec) * time.Second).Format(time.RFC3339Nano)
		if typ == "request" {
			// A long reason makes the records cross the reader's chunks.
			return fmt.Sprintf(`{"type":"request","time":%q,"id":%q,"request":{"reason":%q,"request_time":%q}}`, at, id, strings.Repeat("r", 9000), at)
		}
		return fmt.Sprintf(`{"type":%q,"time":%q,"id":%q}`, typ, at, id)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	var rotated, current []string
	for i := range 20 {
		rotated = append(rotated, line("request", i, fmt.Sprintf("old%d", i)))
	}
	for i := 20; i < 40; i++ {
		current = append(current, line("request", i, fmt.Sprintf("new%d", i)), line("decision", i, fmt.Sprintf("new%d", i)), "not json")
	}
	write := func(name string, lines []string, torn string) {
		if err := os.WriteFile(name, []byte(strings.Join(lines, "\n")+"\n"+torn), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(path+".1", rotated, "")
	write(path, current, `{"type":"request","time":"2026-11-27T12:59:00Z","id":"torn"`)

	ids := func(since int) []string {
		t.Helper()
		got, err := RecentRequests(path, t0.Add(time.Duration(since)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range got {
			if r.RequestTime.IsZero() {
				t.Errorf("%s has no request time", r.ID)
			}
			out = append(out, r.ID)
		}
		return out
	}
	want := func(from, to int) []string {
		var w []string
		for i := to; i >= from; i-- {
			if i < 20 {
				w = append(w, fmt.Sprintf("old%d", i))
			} else {
				w = append(w, fmt.Sprintf("new%d", i))
			}
		}
		return w
	}
	for _, since := range []int{39, 30, 20, 15, 0, -5} {
		if got, w := ids(since), want(max(since, 0), 39); !slices.Equal(got, w) {
			t.Errorf("since +%ds: %v\nwant %v", since, got, w)
		}
	}
	if got := ids(40); len(got) != 0 {
		t.Errorf("since after the last record: %v, want none", got)
	}
	if got, err := RecentRequests(filepath.Join(dir, "missing.jsonl"), t0); err != nil || got != nil {
		t.Errorf("a missing log: %v, %v; want no records and no error", got, err)
	}

	// A predecessor compressed by logrotate is read too.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(strings.Join(rotated, "\n") + "\n"))
	zw.Close()
	if err := os.Remove(path + ".1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".1.gz", gz.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, since := range []int{15, 0} {
		if got, w := ids(since), want(since, 39); !slices.Equal(got, w) {
			t.Errorf("with path.1.gz, since +%ds: %v\nwant %v", since, got, w)
		}
	}
	// So is a predecessor when the current file is missing (rotated, not
	// yet created again).
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got, w := ids(15), want(15, 19); !slices.Equal(got, w) {
		t.Errorf("without the current file, since +15s: %v\nwant %v", got, w)
	}
}

// TestRecentRequestsAroundClockSteps: the read-back does not depend on the
// records' order. Records are written through the log with a clock that
// steps back or forward (as NTP after boot or a resumed VM does), in the
// current file and in its rotated predecessor; every request record whose
// time is in the window is read back, however the records around it are
// dated.
func TestRecentRequestsAroundClockSteps(t *testing.T) {
	base := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	type rec struct {
		id   string
		step time.Duration // the clock's offset when it is written
	}
	tests := []struct {
		name string
		// rotated, when set, is written first, then rotated to path.1.
		rotated, current []rec
		want             []string
	}{
		{"stepped back an hour after the request",
			nil, []rec{{"before", 0}, {"ran", 0}, {"after-step", -time.Hour}, {"after-step-2", -time.Hour}},
			[]string{"ran", "before"}},
		{"stepped forward, then put right",
			nil, []rec{{"future", time.Hour}, {"ran", 0}, {"after", 0}},
			[]string{"after", "ran", "future"}},
		{"stepped back a day, twice",
			nil, []rec{{"ran", 0}, {"back", -24 * time.Hour}, {"ran-2", 0}, {"back-2", -24 * time.Hour}},
			[]string{"ran-2", "ran"}},
		{"in the rotated file, the current one stepped back",
			[]rec{{"ran", 0}, {"back", -time.Hour}}, []rec{{"back-2", -time.Hour}},
			[]string{"ran"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := logPath(t)
			write := func(recs []rec) {
				var step time.Duration
				n := 0
				l, err := Open(path, Options{Now: func() time.Time {
					n++
					return base.Add(step).Add(time.Duration(n) * time.Millisecond)
				}})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range recs {
					step = r.step
					req := testRequest(r.id)
					req.Time = base.Add(r.step)
					if _, err := l.Received(context.Background(), req, testPeer); err != nil {
						t.Fatal(err)
					}
				}
				must(t, l.Close())
			}
			if tt.rotated != nil {
				write(tt.rotated)
				must(t, os.Rename(path, path+".1"))
			}
			write(tt.current)
			// The daemon restarts with the clock put right, and reads
			// back the last five minutes.
			got, err := RecentRequests(path, base.Add(-5*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range got {
				ids = append(ids, r.ID)
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("read back %q, want %q", ids, tt.want)
			}
		})
	}
}
