package daemon

import (
	"sync"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/config"
)

// replayWindow is how long a request id is remembered: approval_timeout
// plus twice max_clock_skew. A request whose time is at the edge of the skew
// can wait for approval for approval_timeout, so an id remembered for only
// 2×max_clock_skew could be used again, with a fresh time, while its first
// request still waits.
func replayWindow(cfg *config.Config) time.Duration {
	return cfg.ApprovalTimeout.Duration + 2*cfg.MaxClockSkew.Duration
}

// replayCache remembers request ids for the replay window (replayWindow):
// as long as a request with that id could still pass the freshness check or
// still wait for approval, so a captured request cannot be sent again and an
// id cannot be reused while its first request is pending. Past that window
// the freshness check refuses a replay instead, so entries can go. A reload
// can change the window; the cache keeps the widest it has been given, so an
// id is remembered as long as any policy since the start needs.
type replayCache struct {
	mu     sync.Mutex
	window time.Duration
	seen   map[string]time.Time // id -> when it was first used
	// swept is when expired ids were last dropped; sweeping at most once a
	// second keeps each request's cost constant however many ids are kept.
	swept time.Time
}

func newReplayCache(window time.Duration) *replayCache {
	return &replayCache{window: window, seen: make(map[string]time.Time)}
}

// firstUse records id and reports whether it had not been seen within the
// window, widened to window if that is wider.
func (c *replayCache) firstUse(id string, now time.Time, window time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.window = max(c.window, window)
	if now.Sub(c.swept) >= time.Second {
		for k, first := range c.seen {
			if now.Sub(first) > c.window {
				delete(c.seen, k)
			}
		}
		c.swept = now
	}
	if first, ok := c.seen[id]; ok && now.Sub(first) <= c.window {
		return false
	}
	c.seen[id] = now
	return true
}
