package audit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLogFile feeds arbitrary file contents to everything that reads a log:
// Read, Verify, the Joiner, and the writer, which must either refuse the
// file or continue its chain so that Verify accepts what it appended.
func FuzzLogFile(f *testing.F) {
	dir := f.TempDir()
	seed := filepath.Join(dir, "seed", "audit.jsonl")
	l, err := Open(seed, Options{Now: fixedClock()})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := l.Daemon(context.Background(), daemonEvent(DaemonStarted, "")); err != nil {
		f.Fatal(err)
	}
	fullRequest(f, l, "seed")
	if _, err := l.Daemon(context.Background(), daemonEvent(DaemonStopped, "terminated signal received")); err != nil {
		f.Fatal(err)
	}
	if err := l.Close(); err != nil {
		f.Fatal(err)
	}
	data, err := os.ReadFile(seed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)-7])
	f.Add(bytes.ReplaceAll(data, []byte(`"seq":2`), []byte(`"seq":-2`)))
	f.Add([]byte("{}\n{\"type\":\"result\",\"seq\":1,\"prev\":\"" + Genesis + "\",\"result\":null}\n"))
	f.Add([]byte("{\"type\":\"daemon\",\"seq\":1,\"prev\":\"" + Genesis + "\",\"daemon\":null}\n"))
	f.Add([]byte("\x1f\x8b\x08\x00garbage"))
	f.Add([]byte("\n\n\n"))
	f.Fuzz(func(t *testing.T, content []byte) {
		dir := filepath.Join(t.TempDir(), "log")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "audit.jsonl")
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		j := NewJoiner()
		for e, err := range Read(ctx, path) {
			var le *LineError
			if err != nil && !errors.As(err, &le) {
				break
			}
			j.Add(e)
		}
		_, verr := Verify(ctx, path)

		l, err := Open(path, Options{Now: fixedClock()})
		if err != nil {
			return // refusing a file it cannot continue is fine
		}
		_, appendErr := l.Append(ctx, decisionRecord("new"))
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if appendErr != nil {
			t.Fatalf("Append: %v", appendErr)
		}
		// A file that verified before still verifies with the new record.
		if verr == nil {
			if _, err := Verify(ctx, path); err != nil {
				t.Fatalf("the file verified, but not after an append: %v", err)
			}
		}
	})
}
