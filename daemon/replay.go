package daemon

import (
	"sync"
	"time"
)

// replayCache remembers request ids for as long as their time would still
// pass the freshness check, so a captured request cannot be sent again. Past
// that window the freshness check refuses it instead, so entries can go.
type replayCache struct {
	mu     sync.Mutex
	window time.Duration
	seen   map[string]time.Time // id -> when it may be forgotten
	// swept is when expired ids were last dropped; sweeping at most once a
	// second keeps each request's cost constant however many ids are kept.
	swept time.Time
}

func newReplayCache(window time.Duration) *replayCache {
	return &replayCache{window: window, seen: make(map[string]time.Time)}
}

// firstUse records id and reports whether it had not been seen within the
// window.
func (c *replayCache) firstUse(id string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Sub(c.swept) >= time.Second {
		for k, until := range c.seen {
			if now.After(until) {
				delete(c.seen, k)
			}
		}
		c.swept = now
	}
	if until, ok := c.seen[id]; ok && !now.After(until) {
		return false
	}
	c.seen[id] = now.Add(c.window)
	return true
}
