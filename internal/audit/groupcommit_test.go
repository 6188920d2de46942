package audit

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
)

// notifyingFile counts syncs and signals each on a channel.
type notifyingFile struct {
	logFile
	syncs  *atomic.Int64
	synced chan<- struct{}
}

func (f notifyingFile) Sync() error {
	err := f.logFile.Sync()
	f.syncs.Add(1)
	select {
	case f.synced <- struct{}{}:
	default:
	}
	return err
}

// okResult is the answer and runner result of a pipeline that ran.
func okResult() (*proto.Response, *runner.Result) {
	now := time.Now()
	return &proto.Response{Status: proto.StatusOK, Stages: []proto.Stage{{}, {}}},
		&runner.Result{Started: now, Ended: now, Stages: make([]runner.StageResult, 2)}
}

// countRecords returns how many records the file at path holds.
func countRecords(t *testing.T, path string) int {
	t.Helper()
	n := 0
	for _, err := range Read(context.Background(), path) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// TestOneSyncPerRequest counts syncs through the file seam: an allowed
// request's request, decision and exec records are synced by one sync,
// when the exec record is written, before Started returns; its result
// record is written without a sync and is synced by the next request's
// group, or by Close.
func TestOneSyncPerRequest(t *testing.T) {
	var syncs atomic.Int64
	path := logPath(t)
	// No timer sync during the test: every sync counted is a group's.
	l := openLog(t, path, Options{syncDelay: time.Hour, wrap: func(f logFile) logFile {
		return notifyingFile{logFile: f, syncs: &syncs}
	}})
	ctx := context.Background()
	const n = 10
	for i := range n {
		before := syncs.Load()
		tr, err := l.Received(ctx, testRequest("r"), testPeer)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Decided(ctx, approval.Decision{Verdict: approval.Allow, By: "rule"}); err != nil {
			t.Fatal(err)
		}
		if got := syncs.Load() - before; got != 0 {
			t.Fatalf("request %d: %d syncs before the exec record, want 0", i, got)
		}
		if err := tr.Started(ctx, testSpec()); err != nil {
			t.Fatal(err)
		}
		if got := syncs.Load() - before; got != 1 {
			t.Fatalf("request %d: %d syncs up to the exec record, want exactly 1", i, got)
		}
		// The group holds this request's three records and the previous
		// request's result.
		if got, want := countRecords(t, path), 4*i+3; got != want {
			t.Fatalf("request %d: %d records in the file after its exec record, want %d", i, got, want)
		}
		resp, res := okResult()
		if err := tr.Finished(ctx, resp, res); err != nil {
			t.Fatal(err)
		}
		if got := syncs.Load() - before; got != 1 {
			t.Fatalf("request %d: the result record waited for a sync (%d syncs in all)", i, got)
		}
	}
	before := syncs.Load()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := syncs.Load() - before; got != 1 {
		t.Errorf("Close made %d syncs, want 1 for the last result record", got)
	}
	res, err := Verify(ctx, path)
	if err != nil || res.Records != 4*n {
		t.Fatalf("Verify = %+v, %v; want %d records", res, err, 4*n)
	}
}

// TestLazyRecordsSyncedByTimer: records written without a sync (a denied
// request's, a result) are synced within syncDelay without any further
// request.
func TestLazyRecordsSyncedByTimer(t *testing.T) {
	var syncs atomic.Int64
	synced := make(chan struct{}, 1)
	l := openLog(t, logPath(t), Options{syncDelay: time.Millisecond, wrap: func(f logFile) logFile {
		return notifyingFile{logFile: f, syncs: &syncs, synced: synced}
	}})
	ctx := context.Background()
	tr, err := l.Received(ctx, testRequest("r"), testPeer)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Decided(ctx, approval.Decision{Verdict: approval.Deny, By: "rule"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-synced:
	case <-time.After(time.Minute):
		t.Fatal("the lazily written records were not synced")
	}
}

// TestLostLazyRecordsStopTheRequest: when a failed sync cuts off records
// that were written without a sync, the request they belong to goes no
// further: its decision and exec records are refused, so it cannot run
// without its request record on disk. Later requests run, and the chain
// verifies.
func TestLostLazyRecordsStopTheRequest(t *testing.T) {
	var failWrite, failSync bool
	path := logPath(t)
	l := openLog(t, path, Options{syncDelay: time.Hour, wrap: func(f logFile) logFile {
		return faultyFile{logFile: f, failWrite: &failWrite, failSync: &failSync}
	}})
	ctx := context.Background()
	waiting, err := l.Received(ctx, testRequest("waiting"), testPeer)
	if err != nil {
		t.Fatal(err)
	}
	failSync = true
	other, err := l.Received(ctx, testRequest("other"), testPeer)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Started(ctx, testSpec()); err == nil {
		t.Fatal("Started succeeded although the sync failed")
	}
	failSync = false
	if err := waiting.Decided(ctx, approval.Decision{Verdict: approval.Allow, By: "rule"}); err == nil {
		t.Error("Decided succeeded although the request record was lost")
	}
	if err := waiting.Started(ctx, testSpec()); err == nil {
		t.Error("Started succeeded although the request record was lost")
	}
	after, err := l.Received(ctx, testRequest("after"), testPeer)
	if err != nil {
		t.Fatal(err)
	}
	if err := after.Decided(ctx, approval.Decision{Verdict: approval.Allow, By: "rule"}); err != nil {
		t.Fatal(err)
	}
	if err := after.Started(ctx, testSpec()); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for e, err := range Read(ctx, path) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.Record.ID)
	}
	if len(ids) != 3 || ids[0] != "after" {
		t.Errorf("the log holds records of %q, want only the three of \"after\"", ids)
	}
	if _, err := Verify(ctx, path); err != nil {
		t.Error(err)
	}
}
