package daemon

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestConnLimits(t *testing.T) {
	l := newConnLimits(3, 1, 2) // 3 user slots, 1 root slot, 2 per uid
	want := func(uid uint32, v admission, msg string) *waiter {
		t.Helper()
		got, w, m := l.admit(uid)
		if got != v || !strings.Contains(m, msg) || (w != nil) != (v == mustWait) {
			t.Fatalf("admit(%d) = %v %v %q, want %v %q", uid, got, w, m, v, msg)
		}
		return w
	}
	want(1000, admitted, "")
	want(1000, admitted, "")
	want(1000, refused, "uid 1000 already has 2 connections open or waiting (max_connections_per_user)")
	want(0, admitted, "") // root's own slot
	want(1001, admitted, "")
	// User slots are full: the next user waits; root's slot is taken too.
	user := want(1002, mustWait, "")
	root := want(0, mustWait, "")
	// A freed user slot goes to the oldest waiter, the user, not to root.
	l.release(1000)
	if !l.wait(context.Background(), user, time.Minute) {
		t.Fatal("waiting user did not get the freed slot")
	}
	// 1002 holds one slot; it may open one more (waiting counts too).
	second := want(1002, mustWait, "")
	want(1002, refused, "max_connections_per_user")
	if l.leave(second) {
		t.Fatal("leave reported a slot that was never handed out")
	}
	// Root's own slot goes to root, past nobody: root is the only waiter.
	l.release(0)
	if !l.wait(context.Background(), root, time.Minute) {
		t.Fatal("waiting root did not get its own freed slot")
	}
	if got := l.busyMessage(0); !strings.Contains(got, "4 connections (root_connections and max_connections)") {
		t.Errorf("root busy message %q", got)
	}
	if got := l.busyMessage(5); !strings.Contains(got, "3 connections (max_connections)") {
		t.Errorf("user busy message %q", got)
	}
	// Root uses the shared slots once its own are taken, and gives them
	// back.
	shared := newConnLimits(1, 1, 1)
	for range 2 {
		if v, _, _ := shared.admit(0); v != admitted {
			t.Fatalf("root: %v, want admitted", v)
		}
	}
	v, w, _ := shared.admit(5)
	if v != mustWait {
		t.Fatalf("user with every slot taken by root: %v, want mustWait", v)
	}
	shared.release(0)
	if !shared.wait(context.Background(), w, time.Minute) {
		t.Fatal("the shared slot root gave back did not go to the waiting user")
	}
	// Waiting is bounded: with every slot and wait place taken, refused.
	full := newConnLimits(1, 1, 100)
	full.admit(7)
	for range waitPlacesPerSlot * 2 {
		if v, _, _ := full.admit(8); v != mustWait {
			t.Fatalf("want mustWait, got %v", v)
		}
	}
	if v, _, m := full.admit(9); v != refused || !strings.Contains(m, "busy: the daemon is already serving 1 connections (max_connections)") {
		t.Fatalf("admit past the wait places = %v %q", v, m)
	}
}

// TestConnLimitsFIFO: a freed slot goes to the oldest connection waiting
// for it, never to a newcomer, and a slot of root's own only to root. The
// limiter used to wake every waiter to race for a freed slot, against new
// connections too, so under load one connection could lose every race and
// be refused while newer ones were served.
func TestConnLimitsFIFO(t *testing.T) {
	l := newConnLimits(1, 1, 8) // 1 shared slot, 1 root slot
	if v, _, _ := l.admit(1000); v != admitted {
		t.Fatalf("first connection: %v, want admitted", v)
	}
	if v, _, _ := l.admit(0); v != admitted {
		t.Fatalf("root: %v, want admitted", v)
	}
	var queued []*waiter
	for _, uid := range []uint32{1001, 1002, 0, 1003} {
		v, w, _ := l.admit(uid)
		if v != mustWait {
			t.Fatalf("admit(%d) with every slot taken: %v, want mustWait", uid, v)
		}
		queued = append(queued, w)
	}
	granted := func() []uint32 {
		var g []uint32
		for _, w := range queued {
			select {
			case <-w.ready:
				g = append(g, w.uid)
			default:
			}
		}
		return g
	}
	// check lists the waiters that hold a slot, in the order they queued.
	check := func(step string, want ...uint32) {
		t.Helper()
		if got := granted(); !slices.Equal(got, want) {
			t.Fatalf("%s: slots handed to %v, want %v", step, got, want)
		}
	}
	// A shared slot is freed: the oldest waiter has it, before any
	// newcomer can ask.
	l.release(1000)
	check("shared slot freed", 1001)
	if v, _, _ := l.admit(1004); v != mustWait {
		t.Fatalf("a newcomer took a slot while older connections waited: %v, want mustWait", v)
	}
	// Root's own slot is freed: only root may take it, so it goes to the
	// root waiter, past the older user.
	l.release(0)
	check("root's slot freed", 1001, 0)
	l.release(1001)
	check("shared slot freed again", 1001, 1002, 0)
	l.release(1002)
	check("and again", 1001, 1002, 0, 1003)
	for _, w := range queued {
		if !l.wait(context.Background(), w, time.Minute) {
			t.Fatalf("uid %d: wait false after its slot was handed to it", w.uid)
		}
	}
}

// TestConnLimitsWaitGivesUp: a waiter gives up only after a whole wait
// period in which no slot was handed to anyone, or when its context ends;
// a slot handed to it as it gives up is still its own.
func TestConnLimitsWaitGivesUp(t *testing.T) {
	l := newConnLimits(1, 1, 8)
	l.admit(1000)
	_, w, _ := l.admit(1001)
	if l.wait(context.Background(), w, time.Millisecond) {
		t.Fatal("got a slot that was never freed")
	}
	if len(l.queue) != 0 || l.byUID[1001] != 0 {
		t.Fatalf("the waiter that gave up is still counted: queue %d, uid 1001 %d", len(l.queue), l.byUID[1001])
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, w, _ = l.admit(1001)
	if l.wait(ctx, w, time.Minute) {
		t.Fatal("got a slot that was never freed, with its context ended")
	}
	// Handed a slot, then leaving: the slot is its own.
	_, w, _ = l.admit(1001)
	l.release(1000)
	if !l.leave(w) {
		t.Fatal("a waiter leaving after its slot was handed to it lost the slot")
	}
	if l.users != 1 {
		t.Fatalf("%d shared slots held, want 1", l.users)
	}
}

func TestRateLimits(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := newRateLimits(60) // one a second, bursts of 60
	for i := range 60 {
		if ok, _ := r.allow(1000, t0); !ok {
			t.Fatalf("request %d of the burst refused", i+1)
		}
	}
	ok, after := r.allow(1000, t0)
	if ok || after != time.Second {
		t.Fatalf("61st request in the same instant: %v, retry after %s; want refused, 1s", ok, after)
	}
	if ok, _ := r.allow(1001, t0); !ok {
		t.Fatal("another uid was limited by the first one's requests")
	}
	for range 1000 {
		if ok, _ := r.allow(0, t0); !ok {
			t.Fatal("root was rate limited")
		}
	}
	if ok, _ := r.allow(1000, t0.Add(time.Second)); !ok {
		t.Fatal("no token after a second")
	}
	if ok, _ := r.allow(1000, t0.Add(time.Second)); ok {
		t.Fatal("two tokens after a second")
	}
	// Full buckets are forgotten, so the map does not grow with every uid
	// ever seen.
	r.allow(1000, t0.Add(2*time.Minute))
	if len(r.buckets) != 1 {
		t.Errorf("%d buckets kept, want 1", len(r.buckets))
	}
}

func TestLogLimiter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLogLimiter(10 * time.Second)
	steps := []struct {
		key  string
		at   time.Duration
		ok   bool
		held int
	}{
		{"busy/1", 0, true, 0},
		{"busy/1", time.Second, false, 0},
		{"busy/1", 2 * time.Second, false, 0},
		{"busy/2", 2 * time.Second, true, 0},
		{"busy/1", 10 * time.Second, true, 2},
		{"busy/1", 11 * time.Second, false, 0},
		{"busy/1", 30 * time.Second, true, 1},
	}
	for _, s := range steps {
		ok, held := l.allow(s.key, t0.Add(s.at))
		if ok != s.ok || held != s.held {
			t.Errorf("allow(%q) at +%s = %v, %d; want %v, %d", s.key, s.at, ok, held, s.ok, s.held)
		}
	}
}
