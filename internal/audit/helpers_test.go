package audit

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
)

// t0 is the tests' clock.
var t0 = time.Date(2026, 11, 20, 9, 30, 0, 0, time.UTC)

// fixedClock returns a clock that advances one second per call.
func fixedClock() func() time.Time {
	var mu sync.Mutex
	n := 0
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		n++
		return t0.Add(time.Duration(n) * time.Second)
	}
}

// logPath returns a log path in a fresh private directory.
func logPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "log", "audit.jsonl")
}

// openLog opens a log at path and closes it at the end of the test.
func openLog(t testing.TB, path string, opts Options) *Log {
	t.Helper()
	if opts.Now == nil {
		opts.Now = fixedClock()
	}
	l, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

var testPeer = peercred.Creds{UID: 1000, GID: 1000, PID: 4242, Exe: "/usr/bin/agent"}

// testRequest returns a valid request with id.
func testRequest(id string) *proto.Request {
	return &proto.Request{
		ID: id, Action: proto.ActionExecute, Host: "build-1", Session: "s-" + id,
		Time:     t0,
		Pipeline: [][]string{{"apt-get", "install", "-y", "nginx"}, {"tee", "/tmp/out"}},
		Env:      map[string]string{"LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"},
		Reason:   "install the web server", Privileged: true,
	}
}

func testSpec() runner.Spec {
	return runner.Spec{
		Stages: []runner.Command{
			{Path: "/usr/bin/apt-get", Link: "/usr/bin/apt-get", Args: []string{"apt-get", "install", "-y", "nginx"}},
			{Path: "/usr/bin/tee", Link: "/bin/tee", Args: []string{"tee", "/tmp/out"}},
		},
		Env: []string{"PATH=/usr/sbin:/usr/bin", "HOME=/root", "LANG=C.UTF-8"},
		Dir: "/", Mode: runner.ModeSudo, SudoPath: "/usr/bin/sudo",
		Target:  runner.Target{Name: "root", UID: 0, GID: 0, Home: "/root"},
		Timeout: time.Minute, MaxOutput: proto.MaxOutputBytes,
	}
}

func testResponse(id string) (*proto.Response, *runner.Result) {
	resp := &proto.Response{ID: id, Status: proto.StatusOK,
		Stages: []proto.Stage{{ExitCode: 0, Stderr: []byte("warning\n")}, {ExitCode: 0}},
		Stdout: []byte("done\n")}
	res := &runner.Result{Started: t0.Add(10 * time.Second), Ended: t0.Add(12*time.Second + 500*time.Millisecond)}
	return resp, res
}

// fullRequest writes the four records of an allowed request that ran.
func fullRequest(t testing.TB, l *Log, id string) {
	t.Helper()
	ctx := context.Background()
	tr, err := l.Received(ctx, testRequest(id), testPeer)
	if err != nil {
		t.Fatalf("Received: %v", err)
	}
	if err := tr.Decided(ctx, approval.Decision{Verdict: approval.Allow, By: "apt installs"}); err != nil {
		t.Fatalf("Decided: %v", err)
	}
	if err := tr.Started(ctx, testSpec()); err != nil {
		t.Fatalf("Started: %v", err)
	}
	resp, res := testResponse(id)
	if err := tr.Finished(ctx, resp, res); err != nil {
		t.Fatalf("Finished: %v", err)
	}
}

// lines returns the lines of a plain file, without newlines.
func lines(t testing.TB, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		return nil
	}
	if data[len(data)-1] != '\n' {
		t.Fatalf("%s does not end with a newline", path)
	}
	return bytes.Split(data[:len(data)-1], []byte("\n"))
}

// writeLines writes lines to path, each with a newline.
func writeLines(t testing.TB, path string, ls [][]byte) {
	t.Helper()
	var b bytes.Buffer
	for _, l := range ls {
		b.Write(l)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fakeJournal records what was sent.
type fakeJournal struct {
	mu      sync.Mutex
	entries []journalEntry
	err     error
}

type journalEntry struct {
	msg    string
	pri    journal.Priority
	fields map[string]string
}

func (f *fakeJournal) Send(msg string, pri journal.Priority, fields map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.entries = append(f.entries, journalEntry{msg, pri, fields})
	return f.err
}

func (f *fakeJournal) sent() []journalEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]journalEntry(nil), f.entries...)
}
