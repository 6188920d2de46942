package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/procinfo"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestAncestryReadOnceTheRequestLineIsRead: the requester's ancestry is read
// from /proc once its request line was read, and not for a ping or a
// connection that sends nothing (docs/audit.md, docs/security.md): those
// are not recorded, so they must not pay for the walk.
//
// The server reads peers from a /proc of the test's, in which the first
// file a walk opens, the peer's stat, is a named pipe. A walk blocks
// opening it until a writer comes, and a process blocked so is a reader of
// the pipe: opening it for writing without blocking succeeds then, and
// fails with ENXIO when no walk is under way.
func TestAncestryReadOnceTheRequestLineIsRead(t *testing.T) {
	proc := t.TempDir()
	stat := filepath.Join(proc, strconv.Itoa(os.Getpid()), "stat")
	if err := os.MkdirAll(filepath.Dir(stat), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(stat, 0o600); err != nil {
		t.Fatal(err)
	}
	// walking reports whether a walk is blocked opening stat; when one
	// is, opening and closing the pipe lets it go on (it reads nothing).
	walking := func() bool {
		t.Helper()
		fd, err := syscall.Open(stat, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if errors.Is(err, syscall.ENXIO) {
			return false
		}
		if err != nil {
			t.Fatalf("opening the pipe: %v", err)
		}
		syscall.Close(fd)
		return true
	}
	t.Cleanup(func() {
		for walking() { // free any walk left blocked by a failure
		}
	})
	ts := startServer(t, serverSetup{procDir: proc, toml: `first_byte_timeout = "50ms"` + allowTrue})

	// A ping is answered, and no walk was started for it (one would be
	// blocked on the pipe still: it has no writer).
	if resp := ts.send(request(map[string]any{"action": "ping", "pipeline": nil})); resp.Status != proto.StatusOK {
		t.Fatalf("ping: %+v", resp)
	}
	if walking() {
		t.Error("the server read the ancestry of a ping")
	}

	// A connection that sends nothing is closed after first_byte_timeout,
	// and no walk was started for it.
	if resp := ts.read(ts.dial("")); resp.Status != proto.StatusError {
		t.Fatalf("a silent connection: %+v", resp)
	}
	if walking() {
		t.Error("the server read the ancestry of a connection that sent nothing")
	}

	// A request: the walk starts once the line is read. The test opens
	// the pipe as its writer, which returns once the walk opened it.
	c := ts.dial(request(nil))
	opened := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(stat, os.O_WRONLY, 0)
		if err == nil {
			err = f.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the server did not read the ancestry of a request within a minute")
	}
	if resp := ts.read(c); resp.Status != proto.StatusOK {
		t.Fatalf("request: %+v", resp)
	}
	recs := ts.records()
	if len(recs) == 0 || recs[0].Peer == nil || recs[0].Peer.Ancestry == nil {
		t.Fatalf("the request record has no ancestry: %+v", recs)
	}
	if a := recs[0].Peer.Ancestry; len(a.Hops) != 0 || a.End == procinfo.EndBusy || a.End == procinfo.EndTimeout {
		t.Errorf("ancestry %+v: want the walk to have ended on the empty stat", a)
	}
}
