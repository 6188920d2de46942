package daemon

import (
	"slices"
	"sync"

	"github.com/agent-sudo/agent-sudo/approval"
)

// subscriber is one console's event stream: a queue that a goroutine feeds
// into ch. Messages still queued are coalesced (see push), so a console
// that reads slowly gets fewer messages, not a longer backlog; one that
// still falls subscriberLimit messages behind is dropped rather than
// allowed to hold the daemon's memory.
type subscriber struct {
	ch     chan event
	mu     sync.Mutex
	q      []event
	wake   chan struct{} // capacity 1: something was queued
	done   chan struct{} // closed when the subscription ends
	closed bool
	// web is set, under the broker's lock, once the connection sent
	// signed_only: it counts as a web approver (Approvers).
	web bool
}

// subscriberLimit bounds a subscriber's queue. Coalescing keeps it at
// about two messages per waiting request plus one grants message, and
// waiting requests are bounded by max_connections.
const subscriberLimit = 4096

// Subscribe returns the requests waiting now, in arrival order (each as
// its pending message, followed by its approved message when some of the
// people it needs have allowed it), and a stream of later pending,
// approved, resolved and grants messages. The stream is closed by cancel, or by the broker if the
// subscriber falls too far behind.
func (b *broker) Subscribe() (waiting []event, events <-chan event, cancel func()) {
	waiting, events, cancel, _ = b.subscribe()
	return waiting, events, cancel
}

// subscribe is Subscribe, which also returns the subscription for
// markWeb.
func (b *broker) subscribe() (waiting []event, events <-chan event, cancel func(), s *subscriber) {
	s = &subscriber{ch: make(chan event), wake: make(chan struct{}, 1), done: make(chan struct{})}
	b.mu.Lock()
	for _, e := range b.pending {
		waiting = append(waiting, event{Message: e.announce})
		if len(e.given) > 0 {
			waiting = append(waiting, event{Message: e.approvedMsg()})
		}
	}
	b.subs[s] = struct{}{}
	b.approversChanged()
	b.mu.Unlock()
	go s.feed()
	return waiting, s.ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[s]; ok {
			delete(b.subs, s)
			s.close()
			b.approversChanged()
		}
	}, s
}

// markWeb counts s as a web approver from now on (it sent signed_only).
func (b *broker) markWeb(s *subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; ok && !s.web {
		s.web = true
		b.approversChanged()
	}
}

// feed passes the queued messages to ch until the subscription ends, then
// closes ch.
func (s *subscriber) feed() {
	defer close(s.ch)
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		for {
			m, ok := s.pop()
			if !ok {
				break
			}
			select {
			case s.ch <- m:
			case <-s.done:
				return
			}
		}
	}
}

func (s *subscriber) pop() (event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.q) == 0 {
		return event{}, false
	}
	m := s.q[0]
	s.q[0] = event{}
	s.q = s.q[1:]
	return m, true
}

// push queues m, coalescing with what is still queued: a request resolved
// before its pending message left the queue is dropped with its resolved
// message (the console never learns of it); a resolved message drops the
// request's queued approved message, which it makes moot; an approved
// message replaces a queued one for the same request (it lists everyone
// who allowed so far) and goes to the end of the queue; a grants message
// replaces a queued one, as does a running message. It reports false when
// the queue is over subscriberLimit.
func (s *subscriber) push(m event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return true
	}
	switch m.Type {
	case approval.MsgResolved:
		s.q = slices.DeleteFunc(s.q, func(o event) bool { return o.Type == approval.MsgApproved && o.ID == m.ID })
		if i := slices.IndexFunc(s.q, func(o event) bool {
			return o.Type == approval.MsgPending && o.ID == m.ID && o.Hash == m.Hash
		}); i >= 0 {
			s.q = slices.Delete(s.q, i, i+1)
			return true
		}
	case approval.MsgGrants, approval.MsgRunning:
		s.q = slices.DeleteFunc(s.q, func(o event) bool { return o.Type == m.Type })
	case approval.MsgApproved:
		s.q = slices.DeleteFunc(s.q, func(o event) bool { return o.Type == m.Type && o.ID == m.ID })
	}
	if len(s.q) >= subscriberLimit {
		return false
	}
	s.q = append(s.q, m)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

func (s *subscriber) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.q = nil
		close(s.done)
	}
}

// broadcast queues m for every subscriber; the caller holds b.mu.
func (b *broker) broadcast(m approval.Message) { b.broadcastEvent(event{Message: m}) }

// broadcastEvent queues ev for every subscriber; the caller holds b.mu.
func (b *broker) broadcastEvent(m event) {
	for s := range b.subs {
		if !s.push(m) {
			delete(b.subs, s)
			s.close()
			b.approversChanged()
		}
	}
}

// event is a message for the consoles with, for a running message, its
// listing's version, which orders running messages (see approverChannel.Serve);
// the version is never sent.
type event struct {
	approval.Message
	version uint64
}
