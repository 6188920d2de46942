package daemon

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// connLimits shares the connection slots between peers: non-root peers
// share max slots, each user (the uid the accept loop passes:
// peercred.Creds.Controller) holding at most perUID of them (counting
// connections that wait for a slot); root has rootMax slots of its own, which
// no other user can take, and when those are taken it may use the shared
// ones too. Connections that find no slot they may take wait in one queue,
// in the order admit saw them, and a freed slot is handed to the oldest
// waiter that may take it. docs/daemon.md ("Connection limits") says why.
type connLimits struct {
	max, rootMax, perUID int
	// waitMax is how many connections may wait at once.
	waitMax int

	mu     sync.Mutex
	users  int            // slots held by non-root peers
	root   int            // root's own slots held
	rootIn int            // shared slots held by root
	queue  []*waiter      // connections waiting for a slot, oldest first
	byUID  map[uint32]int // non-root connections per uid, held or waiting
	// handoffs counts the slots handed to waiters: a waiter gives up only
	// after a whole wait period in which it did not change.
	handoffs uint64
}

// waitPlacesPerSlot is how many connections may wait for a slot, per slot
// (max_connections plus root_connections); docs/daemon.md says why four.
const waitPlacesPerSlot = 4

func newConnLimits(max, rootMax, perUID int) *connLimits {
	return &connLimits{max: max, rootMax: rootMax, perUID: perUID,
		waitMax: waitPlacesPerSlot * (max + rootMax), byUID: make(map[uint32]int)}
}

// waiter is a connection in connLimits' queue.
type waiter struct {
	uid uint32
	// granted is set, under connLimits.mu, when a slot is handed to the
	// waiter; ready is closed then.
	granted bool
	ready   chan struct{}
}

// admission is what connLimits.admit decided for a new connection.
type admission int

const (
	admitted admission = iota // it holds a slot; release it when done
	mustWait                  // it is queued for a slot: call wait
	refused                   // refused; the string says why
)

// admit decides at once for a connection from uid: admitted (it holds a
// slot), mustWait (it is queued: call wait with the waiter, which is nil
// otherwise), or refused with the message for the peer. A connection is
// admitted only when no older one waits for a slot it could take.
func (l *connLimits) admit(uid uint32) (admission, *waiter, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if uid != 0 && l.byUID[uid] >= l.perUID {
		return refused, nil, fmt.Sprintf("busy: uid %d already has %d connections open or waiting (max_connections_per_user); close some and try again",
			uid, l.perUID)
	}
	// Every release hands its slot to the oldest waiter that may take it,
	// so a free slot is one no waiter may take: taking it jumps nobody.
	if l.takeLocked(uid) {
		if uid != 0 {
			l.byUID[uid]++
		}
		return admitted, nil, ""
	}
	if len(l.queue) >= l.waitMax {
		return refused, nil, l.busyMessage(uid)
	}
	w := &waiter{uid: uid, ready: make(chan struct{})}
	l.queue = append(l.queue, w)
	if uid != 0 {
		l.byUID[uid]++
	}
	return mustWait, w, ""
}

// takeLocked takes a slot for uid if one is free. It does not count the
// connection in byUID (the caller does, once).
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
		return true
	}
	return false
}

// wait waits for the slot w was queued for after admit said mustWait,
// until ctx ends or until d passes in which no slot was handed to any
// waiter (the daemon is not serving its queue, for example because every
// slot holds a request waiting for approval). True: the connection holds a
// slot (release it when done); false: it is out of the queue and must be
// refused with busyMessage.
func (l *connLimits) wait(ctx context.Context, w *waiter, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	l.mu.Lock()
	seen := l.handoffs
	l.mu.Unlock()
	for {
		select {
		case <-w.ready:
			return true
		case <-t.C:
			l.mu.Lock()
			moved := l.handoffs != seen
			seen = l.handoffs
			l.mu.Unlock()
			if moved {
				t.Reset(d)
				continue
			}
		case <-ctx.Done():
		}
		// A slot handed to it as it gave up is its own.
		return l.leave(w)
	}
}

// leave takes w out of the queue, unless a slot was already handed to it:
// then it reports true, and the connection holds that slot.
func (l *connLimits) leave(w *waiter) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.granted {
		return true
	}
	if i := slices.Index(l.queue, w); i >= 0 {
		l.queue = slices.Delete(l.queue, i, i+1)
	}
	l.dropLocked(w.uid)
	return false
}

func (l *connLimits) dropLocked(uid uint32) {
	if uid == 0 {
		return
	}
	if l.byUID[uid]--; l.byUID[uid] <= 0 {
		delete(l.byUID, uid)
	}
}

// release frees the slot of a connection from uid that admit or wait let
// in, and hands it to the oldest waiter that may take it (a slot of
// root's own only to root).
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
	for i, w := range l.queue {
		if l.takeLocked(w.uid) {
			l.queue = slices.Delete(l.queue, i, i+1)
			w.granted = true
			close(w.ready)
			l.handoffs++
			return
		}
	}
}

// busyMessage is the refusal for a connection that found no free slot.
func (l *connLimits) busyMessage(uid uint32) string {
	if uid == 0 {
		return fmt.Sprintf("busy: the daemon is already serving %d connections (root_connections and max_connections); try again shortly", l.rootMax+l.max)
	}
	return fmt.Sprintf("busy: the daemon is already serving %d connections (max_connections); try again shortly", l.max)
}

// rateLimits is a token bucket per non-root uid (golang.org/x/time/rate):
// each connection takes a token; a bucket holds at most perMinute tokens
// and refills at perMinute per minute. Root is never limited.
type rateLimits struct {
	perMinute int

	mu      sync.Mutex
	buckets map[uint32]*rate.Limiter
	swept   time.Time
}

func newRateLimits(perMinute int) *rateLimits {
	return &rateLimits{perMinute: perMinute, buckets: make(map[uint32]*rate.Limiter)}
}

// allow takes a token for uid at now. When none is left it returns false
// and how long until one is.
func (r *rateLimits) allow(uid uint32, now time.Time) (bool, time.Duration) {
	if uid == 0 {
		return true, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	full := float64(r.perMinute)
	// A full bucket is the same as no bucket: drop those, at most once a
	// minute, so the map holds only uids seen within the last minute.
	if now.Sub(r.swept) >= time.Minute {
		for k, b := range r.buckets {
			if b.TokensAt(now) >= full {
				delete(r.buckets, k)
			}
		}
		r.swept = now
	}
	b, ok := r.buckets[uid]
	if !ok {
		b = rate.NewLimiter(rate.Limit(full/time.Minute.Seconds()), r.perMinute)
		r.buckets[uid] = b
	}
	res := b.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
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
