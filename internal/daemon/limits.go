package daemon

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// connLimits shares the connection slots between peers (see doc.go,
// "Connection limits"): non-root peers share max_connections slots, each
// uid holding at most perUID of them (counting connections that wait for a
// slot); root has rootMax slots of its own, which no other user can take,
// and when those are taken it may use the shared ones too.
type connLimits struct {
	max, rootMax, perUID int

	mu      sync.Mutex
	users   int            // slots held by non-root peers
	root    int            // root's own slots held
	rootIn  int            // shared slots held by root
	waiting int            // connections waiting for a slot
	byUID   map[uint32]int // non-root connections per uid, held or waiting
	freed   chan struct{}  // closed and replaced whenever a slot is freed
}

func newConnLimits(max, rootMax, perUID int) *connLimits {
	return &connLimits{max: max, rootMax: rootMax, perUID: perUID,
		byUID: make(map[uint32]int), freed: make(chan struct{})}
}

// admission is what connLimits.admit decided for a new connection.
type admission int

const (
	admitted admission = iota // it holds a slot; release it when done
	mustWait                  // it may wait for a slot: call wait
	refused                   // refused; the string says why
)

// admit decides at once for a connection from uid: admitted (it holds a
// slot), mustWait (call wait), or refused with the message for the peer.
func (l *connLimits) admit(uid uint32) (admission, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if uid != 0 && l.byUID[uid] >= l.perUID {
		return refused, fmt.Sprintf("busy: uid %d already has %d connections open or waiting (max_connections_per_user); close some and try again",
			uid, l.perUID)
	}
	if l.takeLocked(uid) {
		return admitted, ""
	}
	if l.waiting >= l.max+l.rootMax {
		return refused, l.busyMessage(uid)
	}
	l.waiting++
	if uid != 0 {
		l.byUID[uid]++
	}
	return mustWait, ""
}

// takeLocked takes a slot for uid if one is free; a non-root uid's count
// is raised only when it did not already count as waiting (the caller
// handles that).
func (l *connLimits) takeLocked(uid uint32) bool {
	if uid == 0 {
		switch {
		case l.root < l.rootMax:
			l.root++
		case l.users < l.max:
			l.users++
			l.rootIn++
		default:
			return false
		}
		return true
	}
	if l.users < l.max {
		l.users++
		l.byUID[uid]++
		return true
	}
	return false
}

// wait waits up to d (or until ctx ends) for a slot after admit said
// mustWait. True: the connection holds a slot; false: it must be refused
// with busyMessage.
func (l *connLimits) wait(ctx context.Context, uid uint32, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		l.mu.Lock()
		// The waiting connection already counts in byUID: take the slot
		// without counting it twice.
		if uid != 0 {
			l.byUID[uid]--
		}
		if l.takeLocked(uid) {
			l.waiting--
			l.mu.Unlock()
			return true
		}
		if uid != 0 {
			l.byUID[uid]++
		}
		freed := l.freed
		l.mu.Unlock()
		select {
		case <-freed:
		case <-t.C:
			l.giveUpWaiting(uid)
			return false
		case <-ctx.Done():
			l.giveUpWaiting(uid)
			return false
		}
	}
}

func (l *connLimits) giveUpWaiting(uid uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waiting--
	l.dropLocked(uid)
}

func (l *connLimits) dropLocked(uid uint32) {
	if uid == 0 {
		return
	}
	if l.byUID[uid]--; l.byUID[uid] <= 0 {
		delete(l.byUID, uid)
	}
}

// release frees the slot of a connection from uid that admit or wait let in.
func (l *connLimits) release(uid uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case uid == 0 && l.rootIn > 0:
		l.rootIn--
		l.users--
	case uid == 0:
		l.root--
	default:
		l.users--
		l.dropLocked(uid)
	}
	close(l.freed)
	l.freed = make(chan struct{})
}

// busyMessage is the refusal for a connection that found no free slot.
func (l *connLimits) busyMessage(uid uint32) string {
	if uid == 0 {
		return fmt.Sprintf("busy: the daemon is already serving %d connections (root_connections and max_connections); try again shortly", l.rootMax+l.max)
	}
	return fmt.Sprintf("busy: the daemon is already serving %d connections (max_connections); try again shortly", l.max)
}

// rateLimits is a token bucket per non-root uid: each connection takes a
// token; a bucket holds at most perMinute tokens and refills at perMinute
// per minute. Root is never limited.
type rateLimits struct {
	perMinute int

	mu      sync.Mutex
	buckets map[uint32]*bucket
	swept   time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newRateLimits(perMinute int) *rateLimits {
	return &rateLimits{perMinute: perMinute, buckets: make(map[uint32]*bucket)}
}

// allow takes a token for uid at now. When none is left it returns false
// and how long until one is.
func (r *rateLimits) allow(uid uint32, now time.Time) (bool, time.Duration) {
	if uid == 0 {
		return true, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rate := float64(r.perMinute) / float64(time.Minute) // tokens per nanosecond
	full := float64(r.perMinute)
	// A full bucket is the same as no bucket: drop those, at most once a
	// minute, so the map holds only uids seen within the last minute.
	if now.Sub(r.swept) >= time.Minute {
		for k, b := range r.buckets {
			if b.tokens+float64(now.Sub(b.at))*rate >= full {
				delete(r.buckets, k)
			}
		}
		r.swept = now
	}
	b, ok := r.buckets[uid]
	if !ok {
		b = &bucket{tokens: full, at: now}
		r.buckets[uid] = b
	}
	if now.After(b.at) {
		b.tokens = min(full, b.tokens+float64(now.Sub(b.at))*rate)
		b.at = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration(math.Ceil((1 - b.tokens) / rate))
}

// logLimiter lets through at most one log line per key per interval, and
// counts the ones it holds back, so that a flood of refusals (busy, rate
// limited, idle) cannot flood the daemon's log.
type logLimiter struct {
	every time.Duration

	mu    sync.Mutex
	keys  map[string]*logKey
	swept time.Time
}

type logKey struct {
	last       time.Time
	suppressed int
}

func newLogLimiter(every time.Duration) *logLimiter {
	return &logLimiter{every: every, keys: make(map[string]*logKey)}
}

// allow reports whether a line for key may be written at now, and how many
// lines for key were held back since the last one written.
func (l *logLimiter) allow(key string, now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) >= l.every {
		for k, v := range l.keys {
			if now.Sub(v.last) >= l.every && v.suppressed == 0 {
				delete(l.keys, k)
			}
		}
		l.swept = now
	}
	k, ok := l.keys[key]
	if !ok {
		l.keys[key] = &logKey{last: now}
		return true, 0
	}
	if now.Sub(k.last) < l.every {
		k.suppressed++
		return false, 0
	}
	n := k.suppressed
	k.last, k.suppressed = now, 0
	return true, n
}
