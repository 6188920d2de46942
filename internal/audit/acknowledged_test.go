package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// fillUp writes filler until the file system holding it is full.
func fillUp(t *testing.T, filler string) *os.File {
	t.Helper()
	f, err := os.OpenFile(filler, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	page := make([]byte, 4096)
	for {
		if _, err := f.Write(page); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the file system: %v", err)
			}
			return f
		}
	}
}

// freePage gives one page of the filler back to the file system.
func freePage(t *testing.T, f *os.File) {
	t.Helper()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(max(0, fi.Size()/4096*4096-4096)); err != nil {
		t.Fatal(err)
	}
}

// TestAcknowledgedRecordsSurviveDiskFull: with the disk full and space
// coming back a page at a time, a record reported written without waiting
// for its sync (a result record, the decision of a denied request) stays in
// the log when a later write fails for want of space: a failed write cuts
// back only its own partial bytes, never records already acknowledged.
// Nothing is reported lost, and the chain verifies.
func TestAcknowledgedRecordsSurviveDiskFull(t *testing.T) {
	dir := testenv.Tmpfs(t, 128<<10)
	path := filepath.Join(dir, "audit.jsonl")
	var logged bytes.Buffer
	j := &fakeJournal{}
	// The timer does not sync the lazy records between the writes: the
	// next write comes first, as under load.
	l := openLog(t, path, Options{Journal: j, syncDelay: time.Hour, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	ctx := context.Background()
	filler := fillUp(t, filepath.Join(dir, "filler"))

	type kind struct {
		name  string
		write func(id string) error
	}
	// A result record and a denied request's decision record are written
	// lazily; the records after them are synced (an exec record) or lazy
	// (the next request's request record).
	kinds := []kind{
		{"result", func(id string) error {
			resp, res := testResponse(id)
			resp.Message = strings.Repeat("m", 700)
			tr := &Trail{log: l, hdr: Record{ID: id, Session: "s", Host: "h", Ref: Genesis, Peer: &Peer{UID: 1000, PID: 1}}}
			return tr.Finished(ctx, resp, res)
		}},
		{"denied", func(id string) error {
			tr := &Trail{log: l, hdr: Record{ID: id, Session: "s", Host: "h", Ref: Genesis, Peer: &Peer{UID: 1000, PID: 1}}}
			return tr.Decided(ctx, approval.Decision{Verdict: approval.Deny, By: "rule no rm", Message: strings.Repeat("m", 700)})
		}},
	}
	big := func(id string) *Record {
		r := decisionRecord(id)
		r.Decision.Message = strings.Repeat("x", 3000)
		return r
	}
	acked := map[string]bool{}
	failed := 0
	for i := range 40 {
		freePage(t, filler)
		k := kinds[i%len(kinds)]
		id := fmt.Sprintf("%s-%d", k.name, i)
		if err := k.write(id); err == nil {
			acked[id] = true
		} else {
			failed++
		}
		// A synced record, larger than a page: it fails for want of space
		// more often than not.
		sid := fmt.Sprintf("synced-%d", i)
		if _, err := l.Append(ctx, big(sid)); err == nil {
			acked[sid] = true
		} else if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Append %s: %v; want ENOSPC", sid, err)
		} else {
			failed++
		}
	}
	if failed == 0 || len(acked) < 10 {
		t.Fatalf("%d writes acknowledged and %d failed: the test did not fill the disk as it should", len(acked), failed)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(ctx, path); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	for e, err := range Read(ctx, path) {
		if err != nil {
			t.Fatal(err)
		}
		delete(acked, e.Record.ID)
	}
	if len(acked) > 0 {
		t.Errorf("%d records reported written are not in the log: %v", len(acked), acked)
	}
	if strings.Contains(logged.String(), "lost") {
		t.Errorf("records reported lost although no sync failed:\n%s", logged.String())
	}
	for _, e := range j.sent() {
		if typ := e.fields["AGENT_SUDO_AUDIT_TYPE"]; typ == "lost" || typ == "cut" {
			t.Errorf("journal entry %q although no sync failed: %s", typ, e.msg)
		}
	}
	t.Logf("%d writes failed for want of space", failed)
}

// TestFailedSyncReportsEveryLostRecord: a failed sync may cut records that
// were reported written without waiting for it; each one is then logged
// (seq, hash, type, id) and sent to the journal as "lost", followed by a
// "cut" entry naming the head of the chain that holds from then on, which
// is the last line of the file.
func TestFailedSyncReportsEveryLostRecord(t *testing.T) {
	var failWrite, failSync bool
	path := logPath(t)
	var logged bytes.Buffer
	j := &fakeJournal{}
	l := openLog(t, path, Options{Journal: j, syncDelay: time.Hour, Logger: slog.New(slog.NewTextHandler(&logged, nil)),
		wrap: func(f logFile) logFile { return faultyFile{logFile: f, failWrite: &failWrite, failSync: &failSync} }})
	ctx := context.Background()
	fullRequest(t, l, "kept")
	head, err := l.Append(ctx, decisionRecord("kept-synced"))
	if err != nil {
		t.Fatal(err)
	}
	lost := []string{"lazy-1", "lazy-2"}
	var hashes []string
	for _, id := range lost {
		rcpt, _, err := l.write(ctx, decisionRecord(id), true, false, 0)
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, rcpt.Hash)
	}
	failSync = true
	if _, err := l.Append(ctx, decisionRecord("not-written")); err == nil || !strings.Contains(err.Error(), "sync:") {
		t.Fatalf("Append with a failing sync = %v", err)
	}
	failSync = false
	for i, id := range lost {
		if !strings.Contains(logged.String(), "id="+id) || !strings.Contains(logged.String(), "hash="+hashes[i]) {
			t.Errorf("the lost record %s (hash %s) is not logged:\n%s", id, hashes[i], logged.String())
		}
	}
	var gotLost []string
	var cut map[string]string
	for _, e := range j.sent() {
		switch e.fields["AGENT_SUDO_AUDIT_TYPE"] {
		case "lost":
			gotLost = append(gotLost, e.fields["AGENT_SUDO_ID"]+" "+e.fields["AGENT_SUDO_LOST_HASH"])
		case "cut":
			cut = e.fields
		}
	}
	if want := []string{lost[0] + " " + hashes[0], lost[1] + " " + hashes[1]}; strings.Join(gotLost, ",") != strings.Join(want, ",") {
		t.Errorf("journal's lost entries: %q, want %q", gotLost, want)
	}
	if cut["AGENT_SUDO_RECORD_HASH"] != head.Hash || cut["AGENT_SUDO_RECORD_SEQ"] != fmt.Sprint(head.Seq) {
		t.Errorf("journal's cut entry: %v, want the head %+v", cut, head)
	}
	if _, err := l.Append(ctx, decisionRecord("after")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := VerifyWith(ctx, VerifyOptions{Anchors: []string{head.Hash}}, path)
	if err != nil {
		t.Fatalf("Verify with the cut's anchor: %v", err)
	}
	if _, err := VerifyWith(ctx, VerifyOptions{Anchors: hashes[:1]}, path); err == nil {
		t.Error("Verify with a lost record's hash as anchor passed")
	}
	if res.Records != 6 {
		t.Errorf("%d records, want the 4 of kept, kept-synced and after", res.Records)
	}
}

// TestReopenKeepsTheLock: a Reopen (SIGHUP) while the path still names the
// open file keeps the file and its lock, even while another descriptor of
// the same open file description exists, as in a child the daemon is
// starting between its fork and its exec; the log goes on being written.
// Once the file is renamed away, Reopen opens a new one.
func TestReopenKeepsTheLock(t *testing.T) {
	path := logPath(t)
	var held []int
	l := openLog(t, path, Options{wrap: func(f logFile) logFile {
		// The child's copy of the descriptor: same open file description.
		fd, err := unix.FcntlInt(f.(*os.File).Fd(), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, fd)
		return f
	}})
	t.Cleanup(func() {
		for _, fd := range held {
			_ = unix.Close(fd)
		}
	})
	ctx := context.Background()
	for i := range 3 {
		if err := l.Reopen(ctx); err != nil {
			t.Fatalf("Reopen %d of the same file: %v", i, err)
		}
		if _, err := l.Append(ctx, decisionRecord(fmt.Sprintf("r%d", i))); err != nil {
			t.Fatalf("Append after Reopen %d: %v", i, err)
		}
	}
	if len(held) != 1 {
		t.Errorf("the file was opened %d times, want once: a Reopen of the same file must keep it", len(held))
	}
	must(t, os.Rename(path, path+".1"))
	if err := l.Reopen(ctx); err != nil {
		t.Fatalf("Reopen after a rename: %v", err)
	}
	if _, err := l.Append(ctx, decisionRecord("new-file")); err != nil {
		t.Fatal(err)
	}
	must(t, l.Close())
	if len(held) != 2 {
		t.Errorf("the file was opened %d times, want twice (once after the rename)", len(held))
	}
	verifyIDs(t, path, []string{"new-file"})
	if _, err := Verify(ctx, path+".1"); err != nil {
		t.Error(err)
	}
}

// TestLockHolderNamed: a log whose writers' lock another process holds is
// refused naming that process, not guessing; a second writer in the same
// process is told the lock is its own.
func TestLockHolderNamed(t *testing.T) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock (util-linux) not installed")
	}
	path := logPath(t)
	l := openLog(t, path, Options{})
	if l2, err := Open(path, Options{}); err == nil {
		_ = l2.Close()
		t.Fatal("a second writer in the same process could open the log")
	} else if !strings.Contains(err.Error(), "this daemon's earlier descriptor of this log holds its writers' lock") {
		t.Errorf("second Open in the same process: %v", err)
	}
	must(t, l.Close())

	// flock(1) takes the lock, then runs cat, which echoes a line once the
	// lock is held.
	cmd := exec.Command(flock, "--exclusive", path, "cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	must(t, cmd.Start())
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	if _, err := stdin.Write([]byte("locked\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := stdout.Read(make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, Options{})
	exe, rerr := filepath.EvalSymlinks(flock)
	if rerr != nil {
		t.Fatal(rerr)
	}
	want := fmt.Sprintf("process %d (%s) holds the writers' lock on this log; two writers would break its hash chain", cmd.Process.Pid, exe)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Open while flock holds the lock: %v\nwant %q", err, want)
	}
}

// TestLogDescriptorsCloseOnExec: every descriptor the log holds is
// close-on-exec, so that no program the daemon starts keeps the log, or its
// writers' lock, past its exec.
func TestLogDescriptorsCloseOnExec(t *testing.T) {
	path := logPath(t)
	l := openLog(t, path, Options{})
	if _, err := l.Append(context.Background(), decisionRecord("r")); err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, e := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || !strings.HasPrefix(target, filepath.Dir(path)) {
			continue
		}
		found++
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var flags int
		for line := range strings.Lines(string(info)) {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				if _, err := fmt.Sscanf(strings.TrimSpace(v), "%o", &flags); err != nil {
					t.Fatal(err)
				}
			}
		}
		if flags&unix.O_CLOEXEC == 0 {
			t.Errorf("descriptor %s of %s is not close-on-exec (flags %o)", e.Name(), target, flags)
		}
	}
	if found == 0 {
		t.Fatal("no descriptor of the log found")
	}
}
