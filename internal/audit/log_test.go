package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/proto"
)

// countingFile counts syncs.
type countingFile struct {
	logFile
	syncs *atomic.Int64
}

func (f countingFile) Sync() error {
	f.syncs.Add(1)
	return f.logFile.Sync()
}

// TestGroupCommit appends from 50 goroutines at once and checks that every
// record is in the log exactly once, the chain is valid, each caller got
// its own record's receipt, and records shared syncs.
func TestGroupCommit(t *testing.T) {
	const goroutines, each = 50, 20
	var syncs atomic.Int64
	path := logPath(t)
	l := openLog(t, path, Options{wrap: func(f logFile) logFile { return countingFile{f, &syncs} }})
	ctx := context.Background()
	type receipt struct {
		id string
		Receipt
	}
	receipts := make(chan receipt, goroutines*each)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range goroutines {
		wg.Go(func() {
			<-start
			for i := range each {
				id := fmt.Sprintf("g%d-%d", g, i)
				rc, err := l.Append(ctx, decisionRecord(id))
				if err != nil {
					t.Errorf("Append %s: %v", id, err)
					return
				}
				receipts <- receipt{id, rc}
			}
		})
	}
	close(start)
	wg.Wait()
	close(receipts)

	res, err := Verify(ctx, path)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if res.Records != goroutines*each {
		t.Errorf("%d records, want %d", res.Records, goroutines*each)
	}
	byHash := map[string]Entry{}
	seen := map[string]int{}
	for e, err := range Read(ctx, path) {
		if err != nil {
			t.Fatal(err)
		}
		seen[e.Record.ID]++
		byHash[e.Hash] = e
	}
	for g := range goroutines {
		for i := range each {
			if id := fmt.Sprintf("g%d-%d", g, i); seen[id] != 1 {
				t.Errorf("record %s is in the log %d times", id, seen[id])
			}
		}
	}
	// Each receipt names the caller's own line.
	for rc := range receipts {
		e, ok := byHash[rc.Hash]
		if !ok || e.Record.ID != rc.id || e.Record.Seq != rc.Seq {
			t.Errorf("receipt %+v of %s names %+v", rc.Receipt, rc.id, e.Record)
		}
	}
	n := syncs.Load()
	t.Logf("%d records, %d syncs (%.1f records per sync)", goroutines*each, n, float64(goroutines*each)/float64(n))
	if n >= goroutines*each {
		t.Errorf("%d syncs for %d records: no group commit", n, goroutines*each)
	}
}

// TestJournal checks the journal entries of each record kind: the
// structured fields, and a message that reads on its own (who, what, the
// decision, the exit).
func TestJournal(t *testing.T) {
	j := &fakeJournal{}
	path := logPath(t)
	l := openLog(t, path, Options{Journal: j})
	ctx := context.Background()
	fullRequest(t, l, "r1")
	tr, err := l.Received(ctx, testRequest("r2"), testPeer)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Decided(ctx, approval.Decision{Verdict: approval.Timeout, By: "approval_timeout"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Refused(ctx, Refusal{ID: "r3", Peer: &testPeer, Reason: "replay"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var hashes []string
	for e, err := range Read(ctx, path) {
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, e.Hash)
	}
	// Lines: r1 request, decision, exec, result; r2 request, decision; r3.
	common := func(id, session string) map[string]string {
		return map[string]string{"AGENT_SUDO_ID": id, "AGENT_SUDO_SESSION": session, "AGENT_SUDO_HOST": "build-1",
			"SYSLOG_IDENTIFIER": "agent-sudod", "AGENT_SUDO_AUDIT_LOG": path, "AGENT_SUDO_PEER_UID": "1000"}
	}
	with := func(m map[string]string, kv ...string) map[string]string {
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	want := []struct {
		pri    journal.Priority
		msg    string
		fields map[string]string
	}{
		{journal.PriInfo, "audit: log " + path + " opened at record 0 (hash " + Genesis + ")", map[string]string{"AGENT_SUDO_AUDIT_TYPE": "opened", "AGENT_SUDO_RECORD_HASH": Genesis}},
		{journal.PriInfo, "audit: request r1 by uid 1000 (session s-r1) allowed by apt installs: apt-get install -y nginx | tee /tmp/out", with(common("r1", "s-r1"), "AGENT_SUDO_AUDIT_TYPE", "decision",
			"AGENT_SUDO_VERDICT", "allowed", "AGENT_SUDO_DECIDED_BY", "apt installs", "AGENT_SUDO_RECORD_HASH", hashes[1], "AGENT_SUDO_RECORD_SEQ", "2")},
		{journal.PriInfo, "audit: request r1 by uid 1000 (session s-r1) finished ok (exit 0,0 after 2.5s, allowed by apt installs): apt-get install -y nginx | tee /tmp/out", with(common("r1", "s-r1"), "AGENT_SUDO_AUDIT_TYPE", "result",
			"AGENT_SUDO_STATUS", "ok", "AGENT_SUDO_EXIT_CODES", "0,0", "AGENT_SUDO_DECIDED_BY", "apt installs",
			"AGENT_SUDO_RECORD_HASH", hashes[3], "AGENT_SUDO_DURATION_NS", "2500000000")},
		{journal.PriNotice, "audit: request r2 by uid 1000 (session s-r2) timeout by approval_timeout: apt-get install -y nginx | tee /tmp/out", with(common("r2", "s-r2"),
			"AGENT_SUDO_VERDICT", "timeout", "AGENT_SUDO_RECORD_HASH", hashes[5])},
		{journal.PriNotice, "audit: request r3 by uid 1000 refused (replay): (no request decoded)", map[string]string{"AGENT_SUDO_ID": "r3", "AGENT_SUDO_STATUS": "error",
			"AGENT_SUDO_REASON": "replay", "AGENT_SUDO_AUDIT_TYPE": "request", "AGENT_SUDO_RECORD_HASH": hashes[6]}},
		{journal.PriInfo, "audit: log " + path + " closed at record 7 (hash " + hashes[6] + ")", map[string]string{"AGENT_SUDO_AUDIT_TYPE": "closed",
			"AGENT_SUDO_RECORD_HASH": hashes[6], "AGENT_SUDO_RECORD_SEQ": "7"}},
	}
	got := j.sent()
	if len(got) != len(want) {
		t.Fatalf("%d journal entries, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.pri != w.pri || g.msg != w.msg {
			t.Errorf("entry %d: %d %q, want %d %q", i, g.pri, g.msg, w.pri, w.msg)
		}
		for k, v := range w.fields {
			if g.fields[k] != v {
				t.Errorf("entry %d (%s): %s = %q, want %q", i, g.msg, k, g.fields[k], v)
			}
		}
	}
}

// TestJournalWhenAppendFails: the entry still goes out, marked, without a
// hash.
func TestJournalWhenAppendFails(t *testing.T) {
	j := &fakeJournal{}
	var failWrite, failSync bool
	l := openLog(t, logPath(t), Options{Journal: j, wrap: func(f logFile) logFile {
		return faultyFile{logFile: f, failWrite: &failWrite, failSync: &failSync}
	}})
	ctx := context.Background()
	tr, err := l.Received(ctx, testRequest("r1"), testPeer)
	if err != nil {
		t.Fatal(err)
	}
	// Decided and Received do not wait for a sync: a failed write fails
	// them. Started waits for its sync.
	failWrite = true
	checkLast := func(what, typ string) {
		t.Helper()
		got := j.sent()
		last := got[len(got)-1]
		if last.pri != journal.PriErr || last.fields["AGENT_SUDO_AUDIT_ERROR"] == "" || last.fields["AGENT_SUDO_RECORD_HASH"] != "" ||
			last.fields["AGENT_SUDO_AUDIT_TYPE"] != typ || !strings.Contains(last.msg, "NOT in the audit log") {
			t.Errorf("journal entry after a failed %s: %+v", what, last)
		}
	}
	if err := tr.Decided(ctx, approval.Decision{Verdict: approval.Allow, By: "rule"}); err == nil {
		t.Fatal("Decided succeeded although the write failed")
	}
	checkLast("Decided", "decision")
	failWrite, failSync = false, true
	tr, err = l.Received(ctx, testRequest("r1b"), testPeer)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Started(ctx, testSpec()); err == nil {
		t.Fatal("Started succeeded although the sync failed")
	}
	checkLast("Started", "exec")
	failWrite, failSync = true, false
	if _, err := l.Received(ctx, testRequest("r2"), testPeer); err == nil {
		t.Fatal("Received succeeded although the write failed")
	}
	checkLast("Received", "request")
	n := len(j.sent())
	failWrite = false
	if _, err := l.Received(ctx, testRequest("r3"), testPeer); err != nil {
		t.Fatal(err)
	}
	if len(j.sent()) != n {
		t.Error("a successful Received sent a journal entry")
	}
}

// TestJoiner checks the status of a request from its records.
func TestJoiner(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		write func(t *testing.T, l *Log)
		want  Summary // only the compared fields
	}{
		{"ok", func(t *testing.T, l *Log) { fullRequest(t, l, "a") },
			Summary{ID: "a", Status: "ok", Verdict: "allowed", DecidedBy: "apt installs", ExitCodes: []int{0, 0}}},
		{"denied", func(t *testing.T, l *Log) {
			tr, _ := l.Received(ctx, testRequest("a"), testPeer)
			must(t, tr.Decided(ctx, approval.Decision{Verdict: approval.Deny, By: "no rm", Message: "never"}))
		}, Summary{ID: "a", Status: "denied", Verdict: "denied", DecidedBy: "no rm", Message: "never"}},
		{"timeout", func(t *testing.T, l *Log) {
			tr, _ := l.Received(ctx, testRequest("a"), testPeer)
			must(t, tr.Decided(ctx, approval.Decision{Verdict: approval.Timeout, By: "approval_timeout"}))
		}, Summary{ID: "a", Status: "timeout", Verdict: "timeout", DecidedBy: "approval_timeout"}},
		{"withdrawn", func(t *testing.T, l *Log) {
			tr, _ := l.Received(ctx, testRequest("a"), testPeer)
			must(t, tr.Decided(ctx, approval.Decision{Verdict: approval.Withdrawn, By: approval.ByClient}))
		}, Summary{ID: "a", Status: "withdrawn", Verdict: "withdrawn", DecidedBy: "client"}},
		{"shutdown before a decision", func(t *testing.T, l *Log) {
			tr, _ := l.Received(ctx, testRequest("a"), testPeer)
			must(t, tr.Decided(ctx, approval.Decision{Verdict: approval.Failed, By: approval.ByShutdown, Message: "the daemon is shutting down"}))
		}, Summary{ID: "a", Status: "error", Verdict: "error", DecidedBy: "daemon shutting down", Message: "the daemon is shutting down"}},
		{"error decision of an older log, without by", func(t *testing.T, l *Log) {
			tr, _ := l.Received(ctx, testRequest("a"), testPeer)
			must(t, tr.Decided(ctx, approval.Decision{Verdict: "error", Message: "the daemon is shutting down"}))
		}, Summary{ID: "a", Status: "error", Verdict: "error", Message: "the daemon is shutting down"}},
		{"refused", func(t *testing.T, l *Log) {
			must(t, l.Refused(ctx, Refusal{ID: "a", Reason: "replay"}))
		}, Summary{ID: "a", Status: "error", Message: "replay"}},
		{"pending", func(t *testing.T, l *Log) {
			_, err := l.Received(ctx, testRequest("a"), testPeer)
			must(t, err)
		}, Summary{ID: "a", Status: "pending"}},
		{"running", func(t *testing.T, l *Log) {
			tr, _ := l.Received(ctx, testRequest("a"), testPeer)
			must(t, tr.Decided(ctx, approval.Decision{Verdict: approval.Allow, By: "r"}))
			must(t, tr.Started(ctx, testSpec()))
		}, Summary{ID: "a", Status: "running", Verdict: "allowed", DecidedBy: "r"}},
		{"timed out while running", func(t *testing.T, l *Log) {
			tr, _ := l.Received(ctx, testRequest("a"), testPeer)
			must(t, tr.Decided(ctx, approval.Decision{Verdict: approval.Allow, By: "r"}))
			must(t, tr.Started(ctx, testSpec()))
			must(t, tr.Finished(ctx, &proto.Response{Status: proto.StatusTimeout, Message: "command_timeout",
				Stages: []proto.Stage{{ExitCode: 143}}}, nil))
		}, Summary{ID: "a", Status: "timeout", Verdict: "allowed", DecidedBy: "r", ExitCodes: []int{143}, Message: "command_timeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := logPath(t)
			l := openLog(t, path, Options{})
			tt.write(t, l)
			j := NewJoiner()
			var got []*Summary
			for e, err := range Read(ctx, path) {
				must(t, err)
				if s, created, _ := j.Add(e); created {
					got = append(got, s)
				}
			}
			if len(got) != 1 {
				t.Fatalf("%d summaries", len(got))
			}
			g := got[0]
			if g.ID != tt.want.ID || g.Status != tt.want.Status || g.Verdict != tt.want.Verdict || g.DecidedBy != tt.want.DecidedBy ||
				fmt.Sprint(g.ExitCodes) != fmt.Sprint(tt.want.ExitCodes) || g.Message != tt.want.Message {
				t.Errorf("summary %+v\nwant %+v", *g, tt.want)
			}
		})
	}
}

// TestJoinerReusedID: a replay refused while the original waits must not
// take the original's decision.
func TestJoinerReusedID(t *testing.T) {
	ctx := context.Background()
	path := logPath(t)
	l := openLog(t, path, Options{})
	tr, err := l.Received(ctx, testRequest("same"), testPeer)
	must(t, err)
	must(t, l.Refused(ctx, Refusal{ID: "same", Reason: "replay"}))
	tr2, err := l.Received(ctx, testRequest("same"), testPeer) // a later reuse
	must(t, err)
	must(t, tr.Decided(ctx, approval.Decision{Verdict: approval.Deny, By: "human"}))
	must(t, tr2.Decided(ctx, approval.Decision{Verdict: approval.Timeout, By: "approval_timeout"}))
	j := NewJoiner()
	var got []string
	var all []*Summary
	for e, err := range Read(ctx, path) {
		must(t, err)
		if s, created, _ := j.Add(e); created {
			all = append(all, s)
		}
	}
	for _, s := range all {
		got = append(got, s.Status)
	}
	if strings.Join(got, " ") != "denied error timeout" {
		t.Errorf("statuses %q, want denied error timeout", got)
	}
}

func BenchmarkAppend(b *testing.B) {
	rec := func() *Record {
		return &Record{Type: TypeDecision, ID: "0e8a9a57-4d59-4c4b-9a4e-1f0c3f8b9d21", Session: "bench", Host: "build-1",
			Peer: &Peer{UID: 1000, PID: 4242, Exe: "/usr/bin/agent"}, Ref: Genesis,
			Decision: &DecisionSection{Verdict: "allowed", By: `rule "apt installs"`}}
	}
	b.Run("sequential", func(b *testing.B) {
		l := openLog(b, logPath(b), Options{})
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := l.Append(ctx, rec()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		var syncs atomic.Int64
		l := openLog(b, logPath(b), Options{wrap: func(f logFile) logFile { return countingFile{f, &syncs} }})
		ctx := context.Background()
		b.SetParallelism(16) // 16 goroutines per GOMAXPROCS: requests wait on I/O, not CPU
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := l.Append(ctx, rec()); err != nil {
					b.Error(err)
					return
				}
			}
		})
		if n := syncs.Load(); n > 0 {
			b.ReportMetric(float64(b.N)/float64(n), "records/sync")
		}
	})
}

// TestCloseDuringAppends: every Append racing with Close either succeeds,
// and its record is in the log, or fails with ErrClosed; none hangs.
func TestCloseDuringAppends(t *testing.T) {
	path := logPath(t)
	l := openLog(t, path, Options{})
	ctx := context.Background()
	var mu sync.Mutex
	ok := map[string]bool{}
	var wg, appending sync.WaitGroup
	const writers = 20
	appending.Add(writers)
	for g := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("g%d-%d", g, i)
				_, err := l.Append(ctx, decisionRecord(id))
				if i == 0 {
					appending.Done()
				}
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("Append %s: %v", id, err)
					return
				}
				mu.Lock()
				ok[id] = true
				mu.Unlock()
			}
		})
	}
	// Close once every writer has appended, while they go on appending.
	appending.Wait()
	must(t, l.Close())
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Appends still blocked 10s after Close")
	}
	n := 0
	for e, err := range Read(ctx, path) {
		must(t, err)
		if !ok[e.Record.ID] {
			t.Errorf("record %s is in the log but its Append did not succeed", e.Record.ID)
		}
		n++
	}
	if n != len(ok) {
		t.Errorf("%d records in the log, %d Appends succeeded", n, len(ok))
	}
	if _, err := Verify(ctx, path); err != nil {
		t.Error(err)
	}
}
