package audit

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestChainManyAppends(t *testing.T) {
	path := logPath(t)
	l := openLog(t, path, Options{})
	const n = 300
	for i := range n / 4 {
		fullRequest(t, l, fmt.Sprintf("req-%d", i))
	}
	ls := lines(t, path)
	if len(ls) != n {
		t.Fatalf("%d lines, want %d", len(ls), n)
	}
	prev := Genesis
	for i, line := range ls {
		rec, err := parseRecord(line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if rec.Prev != prev {
			t.Fatalf("line %d: prev %s, want %s", i+1, rec.Prev, prev)
		}
		if rec.Seq != uint64(i+1) {
			t.Fatalf("line %d: seq %d", i+1, rec.Seq)
		}
		prev = LineHash(line)
	}
	res, err := Verify(context.Background(), path)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	want := VerifyResult{Records: n, Files: 1, Start: Genesis, StartSeq: 1, Head: prev, HeadSeq: n}
	if *res != want {
		t.Errorf("Verify = %+v, want %+v", *res, want)
	}

	// Closing and opening again continues the chain.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, path, Options{})
	fullRequest(t, l2, "after-restart")
	if res, err := Verify(context.Background(), path); err != nil || res.Records != n+4 {
		t.Fatalf("Verify after restart = %+v, %v", res, err)
	}
}

func gzipFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(src); err != nil {
		t.Fatal(err)
	}
}

// TestRotationContinuation rotates the log the ways logrotate does and
// checks that the new file continues the chain of the old one.
func TestRotationContinuation(t *testing.T) {
	tests := []struct {
		name string
		// rotate renames the current file; l may be reopened by it.
		rotate func(t *testing.T, l *Log, path string)
		// restart closes the log after rotating and opens it again, as a
		// daemon restarted after rotation would.
		restart bool
		files   []string // suffixes, oldest first
	}{
		{"rename, Reopen", func(t *testing.T, l *Log, path string) {
			mustRename(t, path, path+".1")
			if err := l.Reopen(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, false, []string{".1", ""}},
		{"rename, no Reopen (noticed on the next append)", func(t *testing.T, l *Log, path string) {
			mustRename(t, path, path+".1")
		}, false, []string{".1", ""}},
		{"rename, restart", func(t *testing.T, l *Log, path string) {
			mustRename(t, path, path+".1")
		}, true, []string{".1", ""}},
		{"rename and gzip, restart", func(t *testing.T, l *Log, path string) {
			mustRename(t, path, path+".1")
			gzipFile(t, path+".1", path+".1.gz")
		}, true, []string{".1.gz", ""}},
		{"rename, empty file created by hand, restart", func(t *testing.T, l *Log, path string) {
			mustRename(t, path, path+".1")
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, true, []string{".1", ""}},
		{"two rotations, delaycompress", func(t *testing.T, l *Log, path string) {
			mustRename(t, path, path+".1")
			fullRequest(t, l, "between")
			mustRename(t, path+".1", path+".2")
			gzipFile(t, path+".2", path+".2.gz")
			mustRename(t, path, path+".1")
		}, true, []string{".2.gz", ".1", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := logPath(t)
			l := openLog(t, path, Options{})
			fullRequest(t, l, "before")
			tt.rotate(t, l, path)
			if tt.restart {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l = openLog(t, path, Options{})
			}
			fullRequest(t, l, "after")

			files, err := Files(path)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, s := range tt.files {
				want = append(want, path+s)
			}
			if strings.Join(files, " ") != strings.Join(want, " ") {
				t.Fatalf("Files = %q, want %q", files, want)
			}
			res, err := Verify(context.Background(), files...)
			if err != nil {
				t.Fatalf("Verify(%q): %v", files, err)
			}
			if res.Start != Genesis || res.Records < 8 {
				t.Errorf("Verify = %+v", res)
			}
			// The new file alone starts from the old one's last hash, not
			// from the genesis value.
			first := lines(t, path)[0]
			if rec, _ := parseRecord(first); rec == nil || rec.Prev == Genesis || rec.Seq == 1 {
				t.Errorf("the new file starts a new chain: %s", first)
			}
		})
	}
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// tamperLog writes a log of 3 requests (12 records) and returns its lines.
func tamperLog(t *testing.T) (string, [][]byte) {
	t.Helper()
	path := logPath(t)
	l := openLog(t, path, Options{})
	for i := range 3 {
		fullRequest(t, l, fmt.Sprintf("req-%d", i))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path, lines(t, path)
}

// TestVerifyTamper alters a 12-line log and checks that Verify names the
// first line that is not as written.
func TestVerifyTamper(t *testing.T) {
	// withPrev returns line with its prev replaced.
	withPrev := func(line []byte, prev string) []byte {
		i := bytes.LastIndex(line, []byte(`"prev":"`))
		return append(append([]byte{}, line[:i]...), `"prev":"`+prev+`"}`...)
	}
	tests := []struct {
		name   string
		edit   func(ls [][]byte) [][]byte
		anchor func(orig [][]byte) []string
		// wantLine is the line Verify must name (0: no error expected);
		// wantProblem a part of its message.
		wantLine    int
		wantProblem string
		// wantRecords, when no error is expected.
		wantRecords int
	}{
		{name: "untouched", edit: func(ls [][]byte) [][]byte { return ls }, wantRecords: 12},
		{name: "byte edited in line 5", edit: func(ls [][]byte) [][]byte {
			ls[5-1] = bytes.Replace(ls[5-1], []byte(`"session":"s-req-1"`), []byte(`"session":"s-req-X"`), 1)
			return ls
		}, wantLine: 5, wantProblem: "altered"},
		{name: "prev of line 5 edited", edit: func(ls [][]byte) [][]byte {
			ls[5-1] = withPrev(ls[5-1], strings.Repeat("0", 64))
			return ls
		}, wantLine: 5, wantProblem: "altered"},
		{name: "line 5 deleted", edit: func(ls [][]byte) [][]byte {
			return append(ls[:4:4], ls[5:]...)
		}, wantLine: 5, wantProblem: "1 record(s) missing before this line: seq jumps from 4 to 6"},
		{name: "lines 5-7 deleted", edit: func(ls [][]byte) [][]byte {
			return append(ls[:4:4], ls[7:]...)
		}, wantLine: 5, wantProblem: "3 record(s) missing"},
		{name: "copy of line 2 inserted after line 4", edit: func(ls [][]byte) [][]byte {
			return append(append(ls[:4:4], ls[1]), ls[4:]...)
		}, wantLine: 5, wantProblem: "inserted"},
		{name: "chained line inserted after line 4", edit: func(ls [][]byte) [][]byte {
			forged := withPrev(bytes.Replace(ls[5], []byte(`"verdict":"allowed"`), []byte(`"verdict":"denied"`), 1), LineHash(ls[3]))
			return append(append(ls[:4:4], forged), ls[4:]...)
		}, wantLine: 5, wantProblem: "inserted"},
		{name: "lines 5 and 6 swapped", edit: func(ls [][]byte) [][]byte {
			ls[4], ls[5] = ls[5], ls[4]
			return ls
		}, wantLine: 5, wantProblem: "swapped"},
		{name: "line 9 moved before line 5", edit: func(ls [][]byte) [][]byte {
			out := append([][]byte{}, ls[:4]...)
			out = append(out, ls[8])
			out = append(out, ls[4:8]...)
			return append(out, ls[9:]...)
		}, wantLine: 5, wantProblem: "out of order"},
		{name: "line 3 not JSON", edit: func(ls [][]byte) [][]byte {
			ls[2] = []byte(`{"type":"request",`)
			return ls
		}, wantLine: 3, wantProblem: "not a JSON record"},
		{name: "line 3 has no prev", edit: func(ls [][]byte) [][]byte {
			ls[2] = bytes.Replace(ls[2], []byte(`"prev":`), []byte(`"xprev":`), 1)
			return ls
		}, wantLine: 3, wantProblem: `"prev" is ""`},
		// The chain cannot see the end of the log cut off: only an anchor
		// kept elsewhere (the journal) can.
		{name: "tail truncated (2 lines), no anchor", edit: func(ls [][]byte) [][]byte {
			return ls[:10]
		}, wantRecords: 10},
		{name: "tail truncated (2 lines), journal anchor", edit: func(ls [][]byte) [][]byte {
			return ls[:10]
		}, anchor: func(orig [][]byte) []string { return []string{LineHash(orig[11])} },
			wantProblem: "is not the hash of any record: records were removed from the end of the log"},
		{name: "last line altered, no anchor", edit: func(ls [][]byte) [][]byte {
			ls[11] = bytes.Replace(ls[11], []byte(`"status":"ok"`), []byte(`"status":"error"`), 1)
			return ls
		}, wantRecords: 12},
		{name: "last line altered, journal anchor", edit: func(ls [][]byte) [][]byte {
			ls[11] = bytes.Replace(ls[11], []byte(`"status":"ok"`), []byte(`"status":"error"`), 1)
			return ls
		}, anchor: func(orig [][]byte) []string { return []string{LineHash(orig[11])} },
			wantProblem: "is not the hash of any record"},
		{name: "anchor of an intact middle line", edit: func(ls [][]byte) [][]byte { return ls },
			anchor: func(orig [][]byte) []string { return []string{LineHash(orig[5])} }, wantRecords: 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, orig := tamperLog(t)
			if len(orig) != 12 {
				t.Fatalf("%d lines", len(orig))
			}
			ls := tt.edit(append([][]byte{}, orig...))
			writeLines(t, path, ls)
			var opts VerifyOptions
			if tt.anchor != nil {
				opts.Anchors = tt.anchor(orig)
			}
			res, err := VerifyWith(context.Background(), opts, path)
			if tt.wantProblem == "" {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if res.Records != tt.wantRecords {
					t.Errorf("Verify checked %d records, want %d", res.Records, tt.wantRecords)
				}
				return
			}
			var ce *ChainError
			if !errors.As(err, &ce) {
				t.Fatalf("Verify = %+v, %v; want a *ChainError", res, err)
			}
			if ce.Line != tt.wantLine || ce.File != path || !strings.Contains(ce.Problem, tt.wantProblem) {
				t.Errorf("Verify: %v\nwant %s:%d: ...%s...", err, path, tt.wantLine, tt.wantProblem)
			}
		})
	}
}

func TestVerifyIncompleteLastLine(t *testing.T) {
	path, ls := tamperLog(t)
	data := bytes.Join(ls, []byte("\n"))
	if err := os.WriteFile(path, data[:len(data)-10], 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Verify(context.Background(), path)
	var ce *ChainError
	if !errors.As(err, &ce) || ce.Line != 12 || !strings.Contains(ce.Problem, "incomplete line") {
		t.Fatalf("Verify = %v, want line 12 incomplete", err)
	}

	// The daemon cuts the incomplete line off when it opens the log (it was
	// never reported durable) and the chain goes on from line 11.
	l := openLog(t, path, Options{})
	fullRequest(t, l, "next")
	if res, err := Verify(context.Background(), path); err != nil || res.Records != 15 {
		t.Fatalf("Verify after reopening = %+v, %v", res, err)
	}
}

func TestVerifyAcrossFiles(t *testing.T) {
	// Three files: .2.gz, .1 and the current one, 8 records each.
	build := func(t *testing.T) string {
		path := logPath(t)
		l := openLog(t, path, Options{})
		fullRequest(t, l, "a")
		fullRequest(t, l, "b")
		mustRename(t, path, path+".2")
		fullRequest(t, l, "c")
		fullRequest(t, l, "d")
		mustRename(t, path, path+".1")
		fullRequest(t, l, "e")
		fullRequest(t, l, "f")
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		gzipFile(t, path+".2", path+".2.gz")
		return path
	}
	t.Run("intact", func(t *testing.T) {
		path := build(t)
		files, _ := Files(path)
		res, err := Verify(context.Background(), files...)
		if err != nil || res.Records != 24 || res.Files != 3 || res.Start != Genesis {
			t.Fatalf("Verify = %+v, %v", res, err)
		}
	})
	t.Run("middle file missing", func(t *testing.T) {
		path := build(t)
		if err := os.Remove(path + ".1"); err != nil {
			t.Fatal(err)
		}
		files, _ := Files(path)
		_, err := Verify(context.Background(), files...)
		var ce *ChainError
		if !errors.As(err, &ce) || ce.File != path || ce.Line != 1 || !strings.Contains(ce.Problem, "8 record(s) missing between the end of "+path+".2.gz") {
			t.Fatalf("Verify = %v", err)
		}
	})
	t.Run("oldest file missing", func(t *testing.T) {
		path := build(t)
		if err := os.Remove(path + ".2.gz"); err != nil {
			t.Fatal(err)
		}
		files, _ := Files(path)
		res, err := Verify(context.Background(), files...)
		if err != nil || res.Start == Genesis || res.StartSeq != 9 || res.Records != 16 {
			t.Fatalf("Verify = %+v, %v; want a chain continuing from seq 8", res, err)
		}
	})
	t.Run("files out of order", func(t *testing.T) {
		path := build(t)
		_, err := Verify(context.Background(), path+".1", path+".2.gz", path)
		var ce *ChainError
		if !errors.As(err, &ce) || ce.File != path+".2.gz" || ce.Line != 1 {
			t.Fatalf("Verify = %v", err)
		}
	})
	t.Run("gzip corrupt", func(t *testing.T) {
		path := build(t)
		data, _ := os.ReadFile(path + ".2.gz")
		data[len(data)/2] ^= 0xff
		if err := os.WriteFile(path+".2.gz", data, 0o600); err != nil {
			t.Fatal(err)
		}
		files, _ := Files(path)
		if _, err := Verify(context.Background(), files...); err == nil {
			t.Fatal("Verify of a corrupt gzip file succeeded")
		}
	})
	t.Run("unreadable file", func(t *testing.T) {
		path := build(t)
		_, err := Verify(context.Background(), filepath.Join(filepath.Dir(path), "nope"))
		var ce *ChainError
		if err == nil || errors.As(err, &ce) {
			t.Fatalf("Verify = %v, want an I/O error", err)
		}
	})
}
