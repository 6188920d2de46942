package daemon

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/proto"
)

// The replay window is approval_timeout + 2 × max_clock_skew, and
// max_clock_skew is at least a second: waiting it out on the real clock
// costs seconds a test. These tests serve the real request path in process
// on a clock they advance (Options.Now, the clock of the freshness check and
// the replay cache); TestE2EReplay keeps the real clock, over the real
// daemon, for the window's smoke test.

// testClock is a clock a test sets: Options.Now.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock(t time.Time) *testClock { return &testClock{t: t} }

// now is the clock's time.
func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// advance moves the clock d forward.
func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// datedRequest is a request line with id, dated at.
func datedRequest(id string, at time.Time) string {
	return request(map[string]any{"id": id, "time": at.UTC().Format(time.RFC3339Nano)})
}

// TestServerReplayAfterReloadWidensSkew: once a request's id is forgotten,
// a reload that widens max_clock_skew makes its time fresh again; the same
// line must still be refused (issue 21: the id was gone and it ran again).
func TestServerReplayAfterReloadWidensSkew(t *testing.T) {
	t.Parallel()
	clock := newTestClock(time.Now())
	settings := "approval_timeout = \"1s\"\nmax_clock_skew = %q\n" + allowTrue
	ts := startServer(t, serverSetup{toml: strings.Replace(settings, "%q", `"1s"`, 1), opts: Options{Now: clock.now}})
	l := datedRequest("widen-1", clock.now())
	if resp := ts.send(l); resp.Status != proto.StatusOK {
		t.Fatalf("first use: %s %q", resp.Status, resp.Message)
	}
	// Past approval_timeout + 2 × max_clock_skew, when the id may be
	// forgotten; a fresh request sweeps it away.
	clock.advance(3500 * time.Millisecond)
	if resp := ts.send(datedRequest("sweeper", clock.now())); resp.Status != proto.StatusOK {
		t.Fatalf("a fresh request: %s %q", resp.Status, resp.Message)
	}
	if _, err := ts.srv.Reload(ts.config(strings.Replace(settings, "%q", `"1h"`, 1))); err != nil {
		t.Fatalf("reload widening max_clock_skew: %v", err)
	}
	if resp := ts.send(l); resp.Status != proto.StatusError || !strings.Contains(resp.Message, "may have forgotten the ids of requests dated then") {
		t.Fatalf("the same line after the reload widened max_clock_skew: %s %q", resp.Status, resp.Message)
	}
	if resp := ts.send(datedRequest("after", clock.now())); resp.Status != proto.StatusOK {
		t.Fatalf("a fresh request after the reload: %s %q", resp.Status, resp.Message)
	}
	if ran := ts.ran(); len(ran) != 3 {
		t.Errorf("%d pipelines ran, want 3 (widen-1 once, sweeper, after)", len(ran))
	}
}

// TestServerReplayWhilePending: an id cannot be used again while its first
// request still waits for approval, even after 2 × max_clock_skew has
// passed and the second copy carries a fresh time (issue 10, L6).
func TestServerReplayWhilePending(t *testing.T) {
	t.Parallel()
	clock := newTestClock(time.Now())
	broker := newBroker(time.Hour, nil)
	_, events, unsubscribe := broker.Subscribe()
	defer unsubscribe()
	ts := startServer(t, serverSetup{toml: "max_clock_skew = \"1s\"\n", opts: Options{Now: clock.now, Approver: broker}})
	first := ts.dial(datedRequest("pending-1", clock.now()))
	if m := <-events; m.Type != approval.MsgPending || m.ID != "pending-1" {
		t.Fatalf("first event %+v, want pending-1 pending", m)
	}
	// Past 2 × max_clock_skew, the old replay window.
	clock.advance(2500 * time.Millisecond)
	if resp := ts.send(datedRequest("pending-1", clock.now())); resp.Status != proto.StatusError ||
		!strings.Contains(resp.Message, `request id "pending-1" was already used by a request that can still be fresh; refusing it as a replay`) {
		t.Fatalf("second use while the first waits: %s %q", resp.Status, resp.Message)
	}
	first.Close()
	if m := <-events; m.Type != approval.MsgResolved || m.Verdict != approval.Withdrawn {
		t.Errorf("consoles were told %+v, want the first withdrawn", m)
	}
	if ran := ts.ran(); len(ran) != 0 {
		t.Errorf("%d pipelines ran, want none", len(ran))
	}
}
