package daemon

import (
	"testing"
	"time"
)

func TestReplayCache(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newReplayCache(2 * time.Minute)
	steps := []struct {
		id   string
		at   time.Duration
		want bool
	}{
		{"a", 0, true},
		{"a", time.Second, false},
		{"b", time.Second, true},
		{"a", 2 * time.Minute, false},
		{"a", 2*time.Minute + time.Millisecond, true},  // forgotten after the window, then new again
		{"b", 2*time.Minute + time.Millisecond, false}, // b was seen at +1s, so it is kept until +2m1s
		{"b", 2*time.Minute + time.Second + time.Millisecond, true},
		{"a", 3 * time.Minute, false},
	}
	for _, s := range steps {
		if got := c.firstUse(s.id, t0.Add(s.at), 2*time.Minute); got != s.want {
			t.Errorf("firstUse(%q) at +%s = %v, want %v", s.id, s.at, got, s.want)
		}
	}
}

// TestReplayCacheWidens: after a reload widens the replay window, an id
// seen under the narrower one is remembered for the wider one; a later
// narrower window does not shorten it.
func TestReplayCacheWidens(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newReplayCache(time.Minute)
	if !c.firstUse("a", t0, time.Minute) {
		t.Fatal("first use refused")
	}
	if c.firstUse("a", t0.Add(3*time.Minute), 5*time.Minute) {
		t.Error("id forgotten after 3m although the window is now 5m")
	}
	if c.firstUse("a", t0.Add(4*time.Minute), time.Minute) {
		t.Error("a narrower window shortened the widest one")
	}
}
