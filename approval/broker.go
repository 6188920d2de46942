package approval

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"
)

// ErrWithdrawn is the cause the daemon gives a request's context when the
// requesting client disconnects while it waits.
var ErrWithdrawn = errors.New("the requesting client disconnected")

// Errors a decision can get back.
var (
	// ErrNotPending: the request was already decided, timed out or was
	// withdrawn. A late decision does nothing.
	ErrNotPending = errors.New("the request is no longer waiting (already decided, timed out or withdrawn)")
	// ErrHashMismatch: the decision was made on a different rendering of
	// the request than the one waiting.
	ErrHashMismatch = errors.New("the decision is for a different request than the one waiting (hash mismatch); nothing was decided")
	// ErrBadChoice: the decision is none of allow_once, allow_session, deny.
	ErrBadChoice = errors.New("unknown decision")
	// ErrNoGrant: revoke named a grant that does not exist.
	ErrNoGrant = errors.New("no such session grant")
)

// Broker is the Approver that puts requests to human consoles: every
// connected console sees every pending request in arrival order, the first
// decision wins, and the others see the request resolved. It also keeps the
// "allow for this session" grants.
type Broker struct {
	grantTTL time.Duration
	now      func() time.Time

	mu      sync.Mutex
	pending []*entry
	subs    map[*subscriber]struct{}
	grants  []*grant
	nextID  int
}

var _ Approver = (*Broker)(nil)

type entry struct {
	shown *Shown
	hash  string
	// decided gets the decision exactly once; done is set under the
	// broker's lock by whichever of a decision or the end of the wait comes
	// first, so the two cannot both win.
	decided chan Decision
	done    bool
}

type grant struct {
	Grant
	shown *Shown // what was approved, for exact matching
}

// subscriber is one console's event stream. A console that falls
// subscriberBuffer events behind is dropped rather than allowed to stall
// the daemon.
type subscriber struct {
	ch chan Message
}

const subscriberBuffer = 256

// NewBroker returns a broker whose session grants last grantTTL. now is its
// clock; nil means time.Now.
func NewBroker(grantTTL time.Duration, now func() time.Time) *Broker {
	if now == nil {
		now = time.Now
	}
	return &Broker{grantTTL: grantTTL, now: now, subs: make(map[*subscriber]struct{})}
}

// Ask waits for a human decision on p, unless a session grant covers it.
// It returns ctx's error when ctx ends first; consoles are then told the
// request timed out or was withdrawn.
func (b *Broker) Ask(ctx context.Context, p *Pending) (Decision, error) {
	shown := p.Shown()
	b.mu.Lock()
	if g := b.matchGrant(shown, p.Peer.UID); g != nil {
		b.mu.Unlock()
		return Decision{Verdict: Allow, By: fmt.Sprintf("session grant %s (%s)", g.ID, g.By)}, nil
	}
	e := &entry{shown: shown, hash: shown.Hash(), decided: make(chan Decision, 1)}
	b.pending = append(b.pending, e)
	b.broadcast(Message{Type: MsgPending, ID: shown.ID, Hash: e.hash, Request: shown})
	b.mu.Unlock()

	select {
	case d := <-e.decided:
		return d, nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if e.done { // a decision won the race
		return <-e.decided, nil
	}
	e.done = true
	b.remove(e)
	verdict, by := Timeout, "approval_timeout"
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrWithdrawn):
		verdict, by = Withdrawn, "client disconnected"
	case !errors.Is(cause, context.DeadlineExceeded):
		verdict, by = Withdrawn, "daemon shutting down"
	}
	b.broadcast(Message{Type: MsgResolved, ID: shown.ID, Hash: e.hash, Verdict: verdict, By: by})
	return Decision{}, ctx.Err()
}

// Decide records a console's decision on the request id whose Shown hashed
// to hash. by names the decider for the audit log.
func (b *Broker) Decide(id, hash string, choice Choice, note, by string) error {
	var d Decision
	switch choice {
	case AllowOnce, AllowSession:
		d = Decision{Verdict: Allow, By: by}
	case DenyOnce:
		d = Decision{Verdict: Deny, By: by, Message: "denied by " + by}
		if note != "" {
			d.Message += ": " + note
		}
	default:
		return fmt.Errorf("%w %q: want %q, %q or %q", ErrBadChoice, choice, AllowOnce, AllowSession, DenyOnce)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.IndexFunc(b.pending, func(e *entry) bool { return e.shown.ID == id })
	if i < 0 {
		return ErrNotPending
	}
	e := b.pending[i]
	if hash != e.hash {
		return ErrHashMismatch
	}
	if choice == AllowSession {
		g := b.addGrant(e.shown, by)
		d.By = fmt.Sprintf("%s (new session grant %s)", by, g.ID)
	}
	e.done = true
	b.remove(e)
	e.decided <- d
	b.broadcast(Message{Type: MsgResolved, ID: id, Hash: hash, Verdict: d.Verdict, By: d.By})
	return nil
}

// Subscribe returns the requests waiting now, in arrival order, and a
// stream of later pending, resolved and grants messages. The stream is
// closed by cancel, or by the broker if the subscriber falls too far behind.
func (b *Broker) Subscribe() (waiting []Message, events <-chan Message, cancel func()) {
	s := &subscriber{ch: make(chan Message, subscriberBuffer)}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.pending {
		waiting = append(waiting, Message{Type: MsgPending, ID: e.shown.ID, Hash: e.hash, Request: e.shown})
	}
	b.subs[s] = struct{}{}
	return waiting, s.ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[s]; ok {
			delete(b.subs, s)
			close(s.ch)
		}
	}
}

// Grants returns the session grants that have not expired.
func (b *Broker) Grants() []Grant {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expireGrants()
	out := make([]Grant, len(b.grants))
	for i, g := range b.grants {
		out[i] = g.Grant
	}
	return out
}

// Revoke removes the session grant id.
func (b *Broker) Revoke(id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.IndexFunc(b.grants, func(g *grant) bool { return g.ID == id })
	if i < 0 {
		return fmt.Errorf("%w %q", ErrNoGrant, id)
	}
	b.grants = slices.Delete(b.grants, i, i+1)
	b.broadcastGrants()
	return nil
}

// Waiting returns how many requests wait for a decision.
func (b *Broker) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

func (b *Broker) remove(e *entry) {
	if i := slices.Index(b.pending, e); i >= 0 {
		b.pending = slices.Delete(b.pending, i, i+1)
	}
}

// broadcast sends m to every subscriber; the caller holds b.mu.
func (b *Broker) broadcast(m Message) {
	for s := range b.subs {
		select {
		case s.ch <- m:
		default:
			delete(b.subs, s)
			close(s.ch)
		}
	}
}

func (b *Broker) broadcastGrants() {
	gs := make([]Grant, len(b.grants))
	for i, g := range b.grants {
		gs[i] = g.Grant
	}
	b.broadcast(Message{Type: MsgGrants, Grants: gs})
}

func (b *Broker) addGrant(s *Shown, by string) *grant {
	b.nextID++
	now := b.now()
	g := &grant{
		Grant: Grant{
			ID: "g" + strconv.Itoa(b.nextID), Session: s.Session, UID: s.Peer.UID,
			Pipeline: s.Pipeline, EnvKeys: slices.Sorted(maps.Keys(s.Env)), Privileged: s.Privileged,
			Cwd: s.Cwd, By: by, Created: now, Expires: now.Add(b.grantTTL),
		},
		shown: s,
	}
	b.grants = append(b.grants, g)
	b.broadcastGrants()
	return g
}

func (b *Broker) expireGrants() {
	now := b.now()
	n := len(b.grants)
	b.grants = slices.DeleteFunc(b.grants, func(g *grant) bool { return !now.Before(g.Expires) })
	if len(b.grants) != n {
		b.broadcastGrants()
	}
}

// matchGrant finds a live grant covering s from uid. A grant covers only the
// exact same request: every argument, program path, env value, cwd,
// privilege, target user, agent forwarding, session and uid.
func (b *Broker) matchGrant(s *Shown, uid uint32) *grant {
	b.expireGrants()
	for _, g := range b.grants {
		a := g.shown
		if a.Session == s.Session && g.UID == uid && a.Peer.UID == s.Peer.UID &&
			a.Privileged == s.Privileged && a.RunAs == s.RunAs && a.ForwardAgent == s.ForwardAgent &&
			a.Cwd == s.Cwd && slices.Equal(a.Programs, s.Programs) && maps.Equal(a.Env, s.Env) &&
			slices.EqualFunc(a.Pipeline, s.Pipeline, slices.Equal) {
			return g
		}
	}
	return nil
}
