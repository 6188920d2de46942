package daemon

import (
	"strings"
	"testing"
	"time"
)

// TestReplayCache: an id is remembered at least for approval_timeout + 2 ×
// max_clock_skew after its receipt (while its request may still wait), and
// forgotten after that once its request can no longer be fresh.
func TestReplayCache(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newReplayCache()
	const skew, approval = 30 * time.Second, time.Minute
	steps := []struct {
		id   string
		at   time.Duration // after t0, when it is received; dated as received
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
		at := t0.Add(s.at)
		if got := c.firstUse(s.id, at, at, skew, approval) == ""; got != s.want {
			t.Errorf("firstUse(%q) at +%s = %v, want %v", s.id, s.at, got, s.want)
		}
	}
}

// TestReplayCacheKeepsUntilTimePlusSkew: an id is remembered at least
// until its request's own time plus max_clock_skew, the last instant that
// request is fresh, even when approval_timeout + 2 × max_clock_skew from
// its receipt overflows a time.Duration (which once made the window
// negative and every id forgotten at once; issue 21).
func TestReplayCacheKeepsUntilTimePlusSkew(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, skew := range []time.Duration{time.Second, time.Hour, 2000000 * time.Hour, time.Duration(1<<63 - 1)} {
		for _, dated := range []time.Time{t0.Add(skew), t0, t0.Add(-skew).Add(time.Nanosecond)} {
			c := newReplayCache()
			if why := c.firstUse("x", dated, t0, skew, time.Duration(1<<63-1)); why != "" {
				t.Fatalf("skew %s: first use refused: %s", skew, why)
			}
			for _, now := range []time.Time{t0.Add(time.Second), dated.Add(skew)} {
				if now.Before(t0) {
					continue
				}
				if why := c.firstUse("x", dated, now, skew, time.Duration(1<<63-1)); !strings.Contains(why, "already used") {
					t.Errorf("skew %s, dated %s: replayed at %s: %q, want refused as already used", skew, dated, now, why)
				}
			}
		}
	}
}

// TestReplayCacheAcrossReloads: a reload that widens max_clock_skew cannot
// make fresh again a request whose id was already forgotten, and one that
// shrinks it does not shorten how long an id is kept.
func TestReplayCacheAcrossReloads(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const approval = time.Second
	t.Run("widened", func(t *testing.T) {
		c := newReplayCache()
		if why := c.firstUse("old", t0, t0, 3*time.Second, approval); why != "" {
			t.Fatal(why)
		}
		// Later, another request sweeps: "old" is forgotten (its time plus
		// the skew and the receipt window have passed).
		now := t0.Add(10 * time.Second)
		if why := c.firstUse("other", now, now, 3*time.Second, approval); why != "" {
			t.Fatal(why)
		}
		// A reload widens the skew to an hour: the old request's time is
		// within it again, but the id is gone, so it must be refused.
		now = now.Add(2 * time.Second)
		why := c.firstUse("old", t0, now, time.Hour, approval)
		if !strings.Contains(why, "may have forgotten the ids of requests dated then") {
			t.Fatalf("replay after the skew was widened: %q, want refused", why)
		}
		// A request with the current time is not affected.
		if why := c.firstUse("new", now, now, time.Hour, approval); why != "" {
			t.Fatalf("a fresh request after the reload: %s", why)
		}
	})
	t.Run("shrunk", func(t *testing.T) {
		c := newReplayCache()
		dated := t0.Add(time.Hour)
		if why := c.firstUse("x", dated, t0, time.Hour, approval); why != "" {
			t.Fatal(why)
		}
		// The skew shrinks to a second; later a reload widens it again. At
		// no point may the id be forgotten while its time is fresh.
		for _, s := range []struct {
			after, skew time.Duration
		}{{time.Minute, time.Second}, {30 * time.Minute, time.Second}, {90 * time.Minute, time.Hour}} {
			if why := c.firstUse("x", dated, t0.Add(s.after), s.skew, approval); why == "" {
				t.Errorf("replayed at +%s under skew %s", s.after, s.skew)
			}
		}
	})
}

// TestReplayCacheSweepRace: a request whose freshness was checked at an
// instant before another request swept its id away is still refused.
func TestReplayCacheSweepRace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const skew, approval = 3 * time.Second, time.Second
	c := newReplayCache()
	if why := c.firstUse("x", t0, t0, skew, approval); why != "" {
		t.Fatal(why)
	}
	late := t0.Add(approval + 2*skew + time.Second)
	if why := c.firstUse("sweeper", late, late, skew, approval); why != "" {
		t.Fatal(why)
	}
	// A copy of x checked fresh at t0+skew (its last fresh instant)
	// reaches the cache only now.
	if why := c.firstUse("x", t0, t0.Add(skew), skew, approval); why == "" {
		t.Error("a copy checked before the sweep was accepted")
	}
}
