package audit

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// rotatedLog writes a log with four files, oldest first: .3.gz, .2.gz, .1
// and the current one, each holding the decision records of its ids.
func rotatedLog(t *testing.T) (string, [][]string) {
	t.Helper()
	path := logPath(t)
	l := openLog(t, path, Options{})
	ctx := context.Background()
	ids := [][]string{{"a1", "a2"}, {"b1"}, {"c1", "c2", "c3"}, {"d1"}}
	for i, group := range ids {
		for _, id := range group {
			if _, err := l.Append(ctx, decisionRecord(id)); err != nil {
				t.Fatal(err)
			}
		}
		if i < len(ids)-1 {
			// logrotate with delaycompress: shift, compress .2, rename.
			for n := 2; n >= 1; n-- {
				if _, err := os.Stat(fmt.Sprintf("%s.%d.gz", path, n)); err == nil {
					mustRename(t, fmt.Sprintf("%s.%d.gz", path, n), fmt.Sprintf("%s.%d.gz", path, n+1))
				}
			}
			if _, err := os.Stat(path + ".1"); err == nil {
				mustRename(t, path+".1", path+".2")
				gzipFile(t, path+".2", path+".2.gz")
			}
			mustRename(t, path, path+".1")
			if err := l.Reopen(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	return path, ids
}

func TestReadAcrossRotatedFiles(t *testing.T) {
	path, ids := rotatedLog(t)
	files, err := Files(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{path + ".3.gz", path + ".2.gz", path + ".1", path}
	if strings.Join(files, " ") != strings.Join(want, " ") {
		t.Fatalf("Files = %q, want %q", files, want)
	}
	var got, wantIDs, locs []string
	for _, g := range ids {
		wantIDs = append(wantIDs, g...)
	}
	for e, err := range Read(context.Background(), files...) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Record.ID)
		locs = append(locs, filepath.Base(e.Location()))
	}
	if strings.Join(got, " ") != strings.Join(wantIDs, " ") {
		t.Errorf("Read yielded %q, want %q", got, wantIDs)
	}
	wantLocs := "audit.jsonl.3.gz:1 audit.jsonl.3.gz:2 audit.jsonl.2.gz:1 audit.jsonl.1:1 audit.jsonl.1:2 audit.jsonl.1:3 audit.jsonl:1"
	if strings.Join(locs, " ") != wantLocs {
		t.Errorf("locations %q, want %q", locs, wantLocs)
	}
	if res, err := Verify(context.Background(), files...); err != nil || res.Records != 7 {
		t.Errorf("Verify = %+v, %v", res, err)
	}
}

func TestFilesErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	if _, err := Files(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Files of nothing = %v, want ErrNotExist", err)
	}
	for _, name := range []string{"audit.jsonl.2", "audit.jsonl.2.gz", "audit.jsonl.x", "audit.jsonl.01", "audit.jsonl.0", "other.1"} {
		must(t, os.WriteFile(filepath.Join(dir, name), nil, 0o600))
	}
	if _, err := Files(path); err == nil || !strings.Contains(err.Error(), "both") {
		t.Errorf("Files with .2 and .2.gz = %v", err)
	}
	must(t, os.Remove(filepath.Join(dir, "audit.jsonl.2")))
	files, err := Files(path)
	if err != nil || len(files) != 1 || files[0] != path+".2.gz" {
		t.Errorf("Files = %q, %v; want only the .2.gz (no current file yet)", files, err)
	}
}

// TestReadCorruptLine: a corrupt line in a gzip file is reported with its
// file and line, and reading goes on.
func TestReadCorruptLine(t *testing.T) {
	path, _ := rotatedLog(t)
	// Rewrite .3.gz with a bad line between its two records.
	gz := path + ".3.gz"
	f, err := os.Open(gz)
	must(t, err)
	zr, err := gzip.NewReader(f)
	must(t, err)
	var plain bytes.Buffer
	_, err = plain.ReadFrom(zr)
	must(t, err)
	f.Close()
	ls := bytes.Split(bytes.TrimSuffix(plain.Bytes(), []byte("\n")), []byte("\n"))
	ls = append(ls[:1:1], append([][]byte{[]byte("\x1b[2J not json")}, ls[1:]...)...)
	writeLines(t, path+".3", ls)
	gzipFile(t, path+".3", gz)

	files, _ := Files(path)
	var ids []string
	var lineErrs []string
	for e, err := range Read(context.Background(), files...) {
		var le *LineError
		switch {
		case errors.As(err, &le):
			lineErrs = append(lineErrs, fmt.Sprintf("%s:%d", filepath.Base(le.File), le.Line))
			if e.Record != nil || e.Location() != le.File+":"+fmt.Sprint(le.Line) {
				t.Errorf("entry of a corrupt line: %+v", e)
			}
		case err != nil:
			t.Fatal(err)
		default:
			ids = append(ids, e.Record.ID)
		}
	}
	if strings.Join(lineErrs, " ") != "audit.jsonl.3.gz:2" {
		t.Errorf("line errors %q, want audit.jsonl.3.gz:2", lineErrs)
	}
	if len(ids) != 7 {
		t.Errorf("read %d records around the corrupt line, want 7", len(ids))
	}
	_, err = Verify(context.Background(), files...)
	var ce *ChainError
	if !errors.As(err, &ce) || ce.File != gz || ce.Line != 2 {
		t.Errorf("Verify = %v, want %s:2", err, gz)
	}
}

func TestReadLongLine(t *testing.T) {
	testenv.Slow(t, "reads a 64 MiB line")
	testenv.SkipUnderRace(t, "reads a 64 MiB line in one goroutine: nothing for the race detector to find")
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var b bytes.Buffer
	b.WriteString("{\"x\":\"")
	b.Write(bytes.Repeat([]byte("a"), MaxLineBytes))
	b.WriteString("\"}\n{}\n")
	must(t, os.WriteFile(path, b.Bytes(), 0o600))
	var problems []string
	for _, err := range Read(context.Background(), path) {
		problems = append(problems, fmt.Sprint(err))
	}
	if len(problems) != 2 || !strings.Contains(problems[0], ":1: line longer than") || !strings.Contains(problems[1], `:2: no "type"`) {
		t.Errorf("problems %q", problems)
	}
}

// TestFollow follows a log while records are appended and the log is
// rotated.
func TestFollow(t *testing.T) {
	path := logPath(t)
	l := openLog(t, path, Options{})
	bg := context.Background()
	_, err := l.Append(bg, decisionRecord("old"))
	must(t, err)
	mustRename(t, path, path+".1")
	must(t, l.Reopen(bg))
	_, err = l.Append(bg, decisionRecord("current"))
	must(t, err)

	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	got := make(chan string, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		caughtUp := func() { got <- "caught up" }
		for e, err := range Follow(ctx, path, FollowOptions{Poll: 5 * time.Millisecond, CaughtUp: caughtUp}) {
			if err != nil {
				got <- "error: " + err.Error()
				continue
			}
			got <- e.Record.ID + "@" + filepath.Base(e.Location())
		}
	}()
	next := func() string {
		select {
		case s := <-got:
			return s
		case <-ctx.Done():
			return "timed out"
		}
	}
	for _, want := range []string{"old@audit.jsonl.1:1", "current@audit.jsonl:1", "caught up"} {
		if g := next(); g != want {
			t.Fatalf("got %q, want %q", g, want)
		}
	}
	_, err = l.Append(bg, decisionRecord("new"))
	must(t, err)
	if g := next(); g != "new@audit.jsonl:2" {
		t.Fatalf("got %q, want new@audit.jsonl:2", g)
	}
	// Rotate: the follower finishes the old file and goes on with the new.
	mustRename(t, path, path+".1")
	_, err = l.Append(bg, decisionRecord("rotated"))
	must(t, err)
	if g := next(); g != "rotated@audit.jsonl:1" {
		t.Fatalf("got %q, want rotated@audit.jsonl:1", g)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Follow did not stop when its context was cancelled")
	}
}
