package daemon

import (
	"fmt"
	"sync"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/audit"
)

// replayCache remembers the ids of accepted requests so that a captured
// request cannot be sent again (docs/security.md, "The wire decoder and the
// audit log"). An id is kept until no request dated as its own request was
// can pass the freshness check any more (request time + max_clock_skew, on
// the daemon's clock), and at least until approval_timeout + 2 ×
// max_clock_skew after its receipt, so that an id cannot be reused with a
// fresh time while its first request still waits for approval.
//
// A reload can widen max_clock_skew, which could make fresh again a request
// whose id was already forgotten. The cache therefore keeps a floor: every
// id it forgot belonged to a request dated at or before the floor, and it
// refuses any request dated at or before the floor. Under an unchanged skew
// such a request is refused by the freshness check first, so the floor only
// decides for the requests that a widened skew would otherwise let through,
// and for a request whose freshness was checked just before a sweep dropped
// its id. All times are compared with Before and After, never through a
// time.Duration, which saturates about 292 years away.
//
// The cache lives in memory, and a new daemon fills it from the end of the
// audit log (remember), so that a restart does not forget the ids of
// requests that can still be fresh.
type replayCache struct {
	mu   sync.Mutex
	seen map[string]replayEntry
	// floor: every id forgotten so far belonged to a request dated at or
	// before it.
	floor time.Time
	// swept is when expired ids were last dropped; sweeping at most once a
	// second keeps each request's cost constant however many ids are kept.
	swept time.Time
}

type replayEntry struct {
	at    time.Time // the request's own time
	until time.Time // kept at least until then
}

func newReplayCache() *replayCache {
	return &replayCache{seen: make(map[string]replayEntry)}
}

// firstUse records the id of a request dated at, received at now under a
// policy with the given max_clock_skew and approval_timeout, and returns ""
// if the request may go on, or why it is refused as a possible replay. now
// must be the instant the request's freshness was checked against.
func (c *replayCache) firstUse(id string, at, now time.Time, skew, approvalTimeout time.Duration) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Sub(c.swept) >= time.Second || now.Before(c.swept) {
		for k, e := range c.seen {
			if now.After(e.until) {
				c.forget(k, e)
			}
		}
		c.swept = now
	}
	if e, ok := c.seen[id]; ok && now.After(e.until) {
		c.forget(id, e)
	}
	if _, ok := c.seen[id]; ok {
		return fmt.Sprintf("request id %q was already used by a request that can still be fresh; refusing it as a replay (send a fresh id, or omit it)", id)
	}
	if !at.After(c.floor) {
		return fmt.Sprintf("request %q is dated %s, not after %s: the daemon may have forgotten the ids of requests dated then (a reload may have widened max_clock_skew since), so it cannot tell this one from a replay; send the current time",
			id, at.Format(time.RFC3339Nano), c.floor.Format(time.RFC3339Nano))
	}
	until := at.Add(skew)
	if held := now.Add(approvalTimeout).Add(skew).Add(skew); held.After(until) {
		until = held
	}
	c.seen[id] = replayEntry{at: at, until: until}
	return ""
}

// forget drops id, whose entry is e, and raises the floor to its time.
func (c *replayCache) forget(id string, e replayEntry) {
	if e.at.After(c.floor) {
		c.floor = e.at
	}
	delete(c.seen, id)
}

// rememberMargin widens what remember reads back: a margin over the
// window, for the moments between a request's receipt and its record's
// time. The read-back does not depend on the records' order
// (audit.RecentRequests), so a clock step between records loses none.
const rememberMargin = time.Minute

// rememberSince is how far back, at the start of a daemon at now, the
// audit log holds the ids that the previous daemon could still have had to
// refuse as replays: approval_timeout + 2 × max_clock_skew, the longest
// the cache keeps an id after its receipt, and rememberMargin.
func rememberSince(now time.Time, skew, approvalTimeout time.Duration) time.Time {
	return now.Add(-approvalTimeout).Add(-skew).Add(-skew).Add(-rememberMargin)
}

// remember fills the cache with recent, the request records of the audit
// log (and its rotated predecessor) received since rememberSince: each is
// kept as if it had been received then, under this policy.
func (c *replayCache) remember(recent []audit.Recent, skew, approvalTimeout time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range recent {
		if r.RequestTime.IsZero() {
			continue
		}
		until := r.RequestTime.Add(skew)
		if held := r.Received.Add(approvalTimeout).Add(skew).Add(skew); held.After(until) {
			until = held
		}
		if e, ok := c.seen[r.ID]; !ok || until.After(e.until) {
			c.seen[r.ID] = replayEntry{at: r.RequestTime, until: until}
		}
	}
}
