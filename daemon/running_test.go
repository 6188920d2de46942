package daemon

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

// fakeRun is a running command as the daemon registers it: it records the
// stops it gets and serves a fixed output until it has ended.
type fakeRun struct {
	mu    sync.Mutex
	stops []string
	ended bool
}

func (f *fakeRun) stop(by string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stops = append(f.stops, by)
}

func (f *fakeRun) output() (*approval.Output, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return nil, false
	}
	return &approval.Output{Stdout: []byte("out\x1b[2J\n"), Stderr: [][]byte{[]byte("err\n")}, StdoutBytes: 9, StderrBytes: []int64{4}}, true
}

func (f *fakeRun) stopped() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.stops...)
}

// start registers f with b as a run of pipeline.
func (f *fakeRun) start(b *broker, pipeline ...[]string) (string, func()) {
	id, ended := b.Started(approval.Running{Request: "req", Session: "s1", Peer: approval.PeerInfo{UID: 1000, User: "alice"},
		Pipeline: pipeline, RunAs: "root", Privileged: true, By: `rule "sleeps"`, Started: time.Unix(100, 0)},
		f.stop, f.output)
	return id, func() {
		f.mu.Lock()
		f.ended = true
		f.mu.Unlock()
		ended()
	}
}

// TestBrokerRunning: a started command is listed under a fresh id with a
// bounded pipeline; the first stop reaches its stop func with the console's
// name and shows in the listing, a second stop and a stop of an unknown or
// ended run are errors that say so, and an ended run leaves the list.
func TestBrokerRunning(t *testing.T) {
	b := newBroker(time.Hour, nil)
	f1, f2 := &fakeRun{}, &fakeRun{}
	id1, end1 := f1.start(b, []string{"sleep", "60"})
	id2, end2 := f2.start(b, []string{"echo", hugeArg(approval.MaxGrantPipeline)})
	if id1 == id2 || id1 == "" {
		t.Fatalf("ids %q and %q, want two distinct ids", id1, id2)
	}
	rs, omitted, v1 := b.Running()
	if len(rs) != 2 || omitted != 0 || rs[0].ID != id1 || rs[1].ID != id2 {
		t.Fatalf("listing %+v (%d omitted), want %s then %s", rs, omitted, id1, id2)
	}
	if rs[0].Pipeline[0][0] != "sleep" || rs[1].Pipeline != nil || rs[1].Elided == nil || rs[1].Elided.Args != 2 {
		t.Errorf("pipelines %q and %q (elided %+v), want the short one listed and the long one elided", rs[0].Pipeline, rs[1].Pipeline, rs[1].Elided)
	}

	if err := b.Stop(id1, "console A"); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got := f1.stopped(); len(got) != 1 || got[0] != "console A" {
		t.Errorf("stop func got %q, want one call by console A", got)
	}
	rs, _, v2 := b.Running()
	if rs[0].StoppedBy != "console A" || v2 <= v1 {
		t.Errorf("after the stop: %+v version %d (was %d), want stopped_by console A in a newer listing", rs[0], v2, v1)
	}
	if err := b.Stop(id1, "console B"); !errors.Is(err, approval.ErrStopping) || !strings.Contains(err.Error(), "console A") {
		t.Errorf("second Stop: %v, want ErrStopping naming console A", err)
	}
	if got := f1.stopped(); len(got) != 1 {
		t.Errorf("stop func called %d times, want once", len(got))
	}
	if err := b.Stop("run404", "console A"); !errors.Is(err, approval.ErrNoRun) || !strings.Contains(err.Error(), "run404") {
		t.Errorf("Stop of an unknown run: %v, want ErrNoRun naming it", err)
	}
	if o, err := b.Output(id2); err != nil || string(o.Stdout) != "out\x1b[2J\n" {
		t.Errorf("Output: %+v %v, want the run's output", o, err)
	}

	end1()
	end2()
	if rs, _, _ := b.Running(); len(rs) != 0 {
		t.Errorf("listing %+v after both ended, want none", rs)
	}
	if err := b.Stop(id2, "console A"); !errors.Is(err, approval.ErrNoRun) {
		t.Errorf("Stop of a finished run: %v, want ErrNoRun", err)
	}
	if _, err := b.Output(id2); !errors.Is(err, approval.ErrNoRun) {
		t.Errorf("Output of a finished run: %v, want ErrNoRun", err)
	}
	if got := f2.stopped(); len(got) != 0 {
		t.Errorf("finished run's stop func got %q, want no call", got)
	}
}

// TestChannelWatchStopOutput: a console gets running messages only once it
// sent watch; it can then stop a run (under the name the daemon gave it)
// and read its output, and errors name the run.
func TestChannelWatchStopOutput(t *testing.T) {
	b := newBroker(time.Hour, nil)
	c := serveConsole(context.Background(), t, b, "console uid=0 tty=/dev/pts/9 pid=1")
	c.read() // hello
	c.read() // grants

	f := &fakeRun{}
	id, end := f.start(b, []string{"sleep", "60"})
	// The running event is queued before the pending one: a console that
	// did not ask to watch must get the pending first.
	r := askAsync(context.Background(), b, pending("w1"))
	if m := c.read(); m.Type != approval.MsgPending || m.ID != "w1" {
		t.Fatalf("message %+v, want w1 pending and no running message before watch", m)
	}

	c.sendMessage(approval.Message{Type: approval.MsgWatch})
	m := c.read()
	if m.Type != approval.MsgRunning || len(m.Running) != 1 || m.Running[0].ID != id || m.Running[0].Peer.UID != 1000 {
		t.Fatalf("answer to watch %+v, want the one running command %s", m, id)
	}

	c.sendMessage(approval.Message{Type: approval.MsgOutput, Run: id})
	if m := c.read(); m.Type != approval.MsgOutput || m.Run != id || m.Output == nil || string(m.Output.Stderr[0]) != "err\n" {
		t.Fatalf("answer to output %+v, want the run's output", m)
	}

	c.sendMessage(approval.Message{Type: approval.MsgStop, Run: id})
	var gotResult, gotListing bool
	for !gotResult || !gotListing {
		switch m := c.read(); m.Type {
		case approval.MsgResult:
			if !m.OK || m.Run != id {
				t.Fatalf("result %+v, want ok for %s", m, id)
			}
			gotResult = true
		case approval.MsgRunning:
			if len(m.Running) != 1 || m.Running[0].StoppedBy != "console uid=0 tty=/dev/pts/9 pid=1" {
				t.Fatalf("listing %+v, want %s stopped by the console", m, id)
			}
			gotListing = true
		default:
			t.Fatalf("unexpected %+v", m)
		}
	}
	if got := f.stopped(); len(got) != 1 || got[0] != "console uid=0 tty=/dev/pts/9 pid=1" {
		t.Errorf("stop func got %q, want the console's name", got)
	}

	for _, tt := range []struct {
		m    approval.Message
		want string
	}{
		{approval.Message{Type: approval.MsgStop, Run: id}, "already being stopped by console uid=0"},
		{approval.Message{Type: approval.MsgStop, Run: "run99"}, `no such running command: it has finished, or the id is wrong ("run99")`},
		{approval.Message{Type: approval.MsgOutput, Run: "run99"}, `("run99")`},
	} {
		c.sendMessage(tt.m)
		m := c.read()
		if m.Type != approval.MsgResult || m.OK || m.Run != tt.m.Run || !strings.Contains(m.Error, tt.want) {
			t.Errorf("%+v: answered %+v, want an error for %s containing %q", tt.m, m, tt.m.Run, tt.want)
		}
	}

	end()
	if m := c.read(); m.Type != approval.MsgRunning || len(m.Running) != 0 {
		t.Fatalf("after the run ended: %+v, want an empty listing", m)
	}
	c.sendMessage(approval.Message{Type: approval.MsgStop, Run: id})
	if m := c.read(); m.Type != approval.MsgResult || m.OK || !strings.Contains(m.Error, "no such running command") {
		t.Errorf("stop of the finished run answered %+v, want an error", m)
	}
	if err := b.Decide("w1", pendingHash(t, b, "w1"), approval.DenyOnce, "", "test"); err != nil {
		t.Fatal(err)
	}
	<-r
}

// pendingHash returns the hash of the waiting request id.
func pendingHash(t *testing.T, b *broker, id string) string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.pending {
		if e.shown.ID == id {
			return e.hash
		}
	}
	t.Fatalf("%s is not waiting", id)
	return ""
}

// TestBrokerRunningBounded: a listing holds at most MaxRunningListed
// commands, the oldest first, and counts the rest in omitted; when runs
// end, the ones left out come back into the listing.
func TestBrokerRunningBounded(t *testing.T) {
	b := newBroker(time.Hour, nil)
	const extra = 3
	ids := make([]string, 0, approval.MaxRunningListed+extra)
	ends := make([]func(), 0, approval.MaxRunningListed+extra)
	for i := range approval.MaxRunningListed + extra {
		id, end := (&fakeRun{}).start(b, []string{"sleep", fmt.Sprint(i)})
		ids, ends = append(ids, id), append(ends, end)
	}
	rs, omitted, _ := b.Running()
	if len(rs) != approval.MaxRunningListed || omitted != extra {
		t.Fatalf("listing of %d runs, %d omitted; want %d listed, %d omitted", len(rs), omitted, approval.MaxRunningListed, extra)
	}
	if rs[0].ID != ids[0] || rs[len(rs)-1].ID != ids[approval.MaxRunningListed-1] {
		t.Errorf("listing runs %s..%s, want the oldest %s..%s", rs[0].ID, rs[len(rs)-1].ID, ids[0], ids[approval.MaxRunningListed-1])
	}
	for _, end := range ends[:extra] {
		end()
	}
	rs, omitted, _ = b.Running()
	if len(rs) != approval.MaxRunningListed || omitted != 0 || rs[len(rs)-1].ID != ids[len(ids)-1] {
		t.Errorf("after %d ended: %d listed (last %s), %d omitted; want %d listed ending with %s, none omitted",
			extra, len(rs), rs[len(rs)-1].ID, omitted, approval.MaxRunningListed, ids[len(ids)-1])
	}
}

// TestBrokerCoalescesRunning: running listings a console has not read yet
// are coalesced, a newer one replacing one still queued: a console that
// reads nothing while many commands start and end is not dropped, gets at
// most the listing the feeder held in hand, and ends up with the newest.
func TestBrokerCoalescesRunning(t *testing.T) {
	b := newBroker(time.Hour, nil)
	_, events, cancel := b.Subscribe()
	defer cancel()
	ends := make([]func(), 0, subscriberLimit+10)
	for i := range subscriberLimit + 10 {
		_, end := (&fakeRun{}).start(b, []string{"sleep", fmt.Sprint(i)})
		ends = append(ends, end)
	}
	for _, end := range ends {
		end()
	}
	var got []approval.Message
	for {
		m := next(t, events)
		if m.Type != approval.MsgRunning {
			t.Fatalf("got a %s message, want only running listings", m.Type)
		}
		got = append(got, m)
		if len(m.Running) == 0 && m.RunningOmitted == 0 {
			break
		}
	}
	if len(got) > 2 {
		t.Errorf("console got %d running listings for %d changes; want them coalesced to the newest", len(got), 2*(subscriberLimit+10))
	}
}
