package audit

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestUnfinishedRequests: the requests a log shows allowed and never
// finished are found, each with whether it started and the pid of the
// daemon that took it; finished, denied and refused ones are not. Once
// Abandoned has written their result records they are finished: the
// Joiner no longer lists them running, and the log verifies.
func TestUnfinishedRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := logPath(t)
	l := openLog(t, path, Options{})
	allow := approval.Decision{Verdict: approval.Allow, By: "rule"}
	step := func(id string, pid int, decision *approval.Decision, start, finish bool) {
		t.Helper()
		if pid != 0 {
			d := daemonEvent(DaemonStarted, "")
			d.PID = pid
			if _, err := l.Daemon(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		tr, err := l.Received(ctx, testRequest(id), testPeer)
		must(t, err)
		if decision == nil {
			return
		}
		must(t, tr.Decided(ctx, *decision))
		if start {
			must(t, tr.Started(ctx, testSpec()))
		}
		if finish {
			must(t, tr.Finished(ctx, &proto.Response{ID: id, Status: proto.StatusOK}, nil))
		}
	}
	step("finished", 100, &allow, true, true)
	step("ran", 0, &allow, true, false)
	step("pending", 0, nil, false, false)
	step("denied", 0, &approval.Decision{Verdict: approval.Deny, By: "rule"}, false, false)
	step("allowed", 200, &allow, false, false)

	got, err := UnfinishedRequests(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	// The daemon's one pass at start finds the same requests, and the
	// same recent ones as RecentRequests.
	recent, again, err := StartScan(ctx, path, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if wantRecent, err := RecentRequests(path, time.Time{}); err != nil || !reflect.DeepEqual(recent, wantRecent) || len(recent) != 5 {
		t.Errorf("StartScan's recent requests %+v; RecentRequests %+v (%v), 5 requests written", recent, wantRecent, err)
	}
	if !reflect.DeepEqual(again, got) {
		t.Errorf("StartScan's unfinished requests %+v; UnfinishedRequests %+v", again, got)
	}
	want := []struct {
		id      string
		started bool
		pid     int
	}{{"ran", true, 100}, {"allowed", false, 200}}
	if len(got) != len(want) {
		t.Fatalf("unfinished: %+v; want %+v", got, want)
	}
	for i, w := range want {
		if g := got[i]; g.ID != w.id || g.Started != w.started || g.DaemonPID != w.pid || len(g.Ref) != 64 {
			t.Errorf("unfinished[%d] = %+v; want %+v", i, g, w)
		}
	}

	// The same requests as Joiner lists running.
	running := NewJoiner()
	var joined []string
	for e, err := range Read(ctx, path) {
		must(t, err)
		running.Add(e)
	}
	for _, s := range running.open {
		if s.Status == StatusRunning {
			joined = append(joined, s.ID)
		}
	}
	if len(joined) != len(got) {
		t.Errorf("Joiner lists %v running; UnfinishedRequests %+v", joined, got)
	}

	for _, u := range got {
		must(t, l.Abandoned(ctx, u, "abandoned: test", []runner.Survivor{{PID: 7, Exe: "/usr/bin/sleep"}}, ""))
	}
	if again, err := UnfinishedRequests(ctx, path); err != nil || len(again) != 0 {
		t.Errorf("after Abandoned: unfinished %+v, err %v; want none", again, err)
	}
	j := NewJoiner()
	status := map[string]string{}
	for e, err := range Read(ctx, path) {
		must(t, err)
		if s, _, _ := j.Add(e); s != nil {
			status[s.ID] = s.Status
		}
	}
	for _, id := range []string{"ran", "allowed"} {
		if status[id] != string(proto.StatusError) {
			t.Errorf("%s: status %q; want error", id, status[id])
		}
	}
	if _, err := Verify(ctx, path); err != nil {
		t.Errorf("the log with abandoned records does not verify: %v", err)
	}
}
