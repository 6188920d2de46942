package daemon

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestConnLimits(t *testing.T) {
	l := newConnLimits(3, 1, 2) // 3 user slots, 1 root slot, 2 per uid
	want := func(uid uint32, v admission, msg string) {
		t.Helper()
		got, m := l.admit(uid)
		if got != v || !strings.Contains(m, msg) {
			t.Fatalf("admit(%d) = %v %q, want %v %q", uid, got, m, v, msg)
		}
	}
	want(1000, admitted, "")
	want(1000, admitted, "")
	want(1000, refused, "uid 1000 already has 2 connections open or waiting (max_connections_per_user)")
	want(0, admitted, "") // root's own slot
	want(1001, admitted, "")
	// User slots are full: the next user waits; root's slot is taken too.
	want(1002, mustWait, "")
	want(0, mustWait, "")
	if l.wait(context.Background(), 0, time.Millisecond) {
		t.Fatal("root got a slot that was not freed")
	}
	// A freed user slot goes to the waiting user, never to root.
	done := make(chan bool)
	go func() { done <- l.wait(context.Background(), 1002, time.Minute) }()
	l.release(1000)
	if !<-done {
		t.Fatal("waiting user did not get the freed slot")
	}
	// 1002 holds one slot; it may open one more (waiting counts too).
	want(1002, mustWait, "")
	want(1002, refused, "max_connections_per_user")
	l.giveUpWaiting(1002)
	l.release(0)
	want(0, admitted, "")
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
		if v, _ := shared.admit(0); v != admitted {
			t.Fatalf("root: %v, want admitted", v)
		}
	}
	if v, _ := shared.admit(5); v != mustWait {
		t.Fatalf("user with every slot taken by root: %v, want mustWait", v)
	}
	shared.release(0)
	if !shared.wait(context.Background(), 5, time.Minute) {
		t.Fatal("the shared slot root gave back did not go to the waiting user")
	}
	// Waiting is bounded: with every slot and wait place taken, refused.
	full := newConnLimits(1, 1, 10)
	full.admit(7)
	for range 2 {
		if v, _ := full.admit(8); v != mustWait {
			t.Fatalf("want mustWait, got %v", v)
		}
	}
	if v, m := full.admit(9); v != refused || !strings.Contains(m, "busy: the daemon is already serving 1 connections (max_connections)") {
		t.Fatalf("admit past the wait places = %v %q", v, m)
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
