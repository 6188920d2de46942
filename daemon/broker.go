package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

// broker is the Approver that puts requests to human consoles: every
// connected console sees every pending request in arrival order, the first
// decision wins, and the others see the request resolved. It also keeps the
// "allow for this session" grants.
type broker struct {
	now func() time.Time

	mu       sync.Mutex
	grantTTL time.Duration
	pending  []*entry
	subs     map[*subscriber]struct{}
	grants   []*grant
	nextID   int
	// waiting is called with each request that starts waiting for a
	// human (SetWaitingHook); nil when unset.
	waiting func(*approval.Shown)
	// runs are the commands running now, oldest first; runVersion counts
	// the changes to them, to order running messages (approverChannel.Serve).
	runs       []*run
	nextRun    int
	runVersion uint64
}

var _ approval.Approver = (*broker)(nil)

type entry struct {
	shown *approval.Shown
	hash  string
	// record is the audit request record's hash (Pending.Record).
	record string
	// given are the allows so far of a request that needs more than one
	// person (twoperson.go).
	given []approval.Approval
	// announce is the pending message consoles get: the request in full,
	// or a summary when it is larger than MaxInlineRequest.
	announce approval.Message
	// decided gets the decision exactly once; done is set under the
	// broker's lock by whichever of a decision or the end of the wait comes
	// first, so the two cannot both win.
	decided chan approval.Decision
	done    bool
	// recount is woken (capacity 1) when the approvers connected change,
	// so that Ask tells the waiting client (Pending.Waiting).
	recount chan struct{}
}

// newBroker returns a broker whose session grants last grantTTL. now is its
// clock; nil means time.Now.
func newBroker(grantTTL time.Duration, now func() time.Time) *broker {
	if now == nil {
		now = time.Now
	}
	return &broker{grantTTL: grantTTL, now: now, subs: make(map[*subscriber]struct{})}
}

// SetWaitingHook makes the broker call f, from Ask's goroutine and without
// its lock held, with every request that starts waiting for a human: one
// that no session grant covers and that is now announced to the consoles.
// f must return promptly; it decides nothing. A nil f removes the hook.
func (b *broker) SetWaitingHook(f func(*approval.Shown)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiting = f
}

// Ask waits for a human decision on p, unless a session grant covers it.
// It returns ctx's error when ctx ends first; consoles are then told the
// decision Unanswered makes of it.
func (b *broker) Ask(ctx context.Context, p *approval.Pending) (approval.Decision, error) {
	shown := p.Shown()
	b.mu.Lock()
	if g := b.matchGrant(shown, p.Peer.UID); g != nil {
		b.mu.Unlock()
		return approval.Decision{Verdict: approval.Allow, By: fmt.Sprintf("session grant %s (%s)", g.ID, g.By)}, nil
	}
	if slices.ContainsFunc(b.pending, func(o *entry) bool { return o.shown.ID == shown.ID }) {
		b.mu.Unlock()
		return approval.Decision{}, fmt.Errorf("request id %q: %w", shown.ID, approval.ErrDuplicateID)
	}
	size, hash, err := shown.Canonical()
	if err != nil {
		b.mu.Unlock()
		return approval.Decision{}, fmt.Errorf("request id %q: %w", shown.ID, err)
	}
	// Counted under the same lock as the request joins pending: an
	// approver that subscribes after this sees it (Subscribe lists
	// pending), so a non-interactive request is refused only when nobody
	// could have seen it.
	seen := b.approversLocked()
	if p.NonInteractive && seen.Consoles+seen.Web == 0 {
		b.mu.Unlock()
		return approval.Decision{}, fmt.Errorf("request id %q: %w", shown.ID, approval.ErrNoApprover)
	}
	e := &entry{shown: shown, hash: hash, decided: make(chan approval.Decision, 1), recount: make(chan struct{}, 1)}
	e.announce = announce(shown, hash, size)
	e.record, e.announce.Record = p.Record, p.Record
	b.pending = append(b.pending, e)
	b.broadcast(e.announce)
	hook := b.waiting
	b.mu.Unlock()
	if hook != nil {
		hook(shown)
	}
	if p.Waiting != nil {
		p.Waiting(seen)
	}

wait:
	for {
		select {
		case d := <-e.decided:
			return d, nil
		case <-ctx.Done():
			break wait
		case <-e.recount:
			b.mu.Lock()
			now := b.approversLocked()
			b.mu.Unlock()
			if now != seen && p.Waiting != nil {
				p.Waiting(now)
			}
			seen = now
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if e.done { // a decision won the race
		return <-e.decided, nil
	}
	e.done = true
	b.remove(e)
	d := approval.Unanswered(ctx)
	b.broadcast(approval.Message{Type: approval.MsgResolved, ID: shown.ID, Hash: e.hash, Verdict: d.Verdict, By: d.By})
	return approval.Decision{}, ctx.Err()
}

// Approvers returns the approvers connected now.
func (b *broker) Approvers() approval.Approvers {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.approversLocked()
}

// approversLocked counts the subscribers; b.mu is held.
func (b *broker) approversLocked() approval.Approvers {
	var a approval.Approvers
	for s := range b.subs {
		if s.web {
			a.Web++
		} else {
			a.Consoles++
		}
	}
	return a
}

// approversChanged wakes every waiting request to recount the approvers;
// b.mu is held.
func (b *broker) approversChanged() {
	for _, e := range b.pending {
		select {
		case e.recount <- struct{}{}:
		default:
		}
	}
}

// Decide records a console's decision on the request id whose Shown hashed
// to hash. by names the decider for the audit log.
func (b *broker) Decide(id, hash string, choice approval.Choice, note, by string) error {
	return b.decide(id, hash, choice, note, approverConsole{By: by})
}

// decide is Decide by the console who, whose Person goes with the decision.
func (b *broker) decide(id, hash string, choice approval.Choice, note string, who approverConsole) error {
	_, err := b.decideNote(id, hash, choice, note, who)
	return err
}

// decideNote is decide, which also returns a note for the console: set
// when the allow was recorded but the request waits for another person.
func (b *broker) decideNote(id, hash string, choice approval.Choice, note string, who approverConsole) (string, error) {
	by := who.By
	var d approval.Decision
	switch choice {
	case approval.AllowOnce, approval.AllowSession:
		d = approval.Decision{Verdict: approval.Allow, By: by}
	case approval.DenyOnce:
		d = approval.Decision{Verdict: approval.Deny, By: by, Message: "denied by " + by}
		if note != "" {
			d.Message += ": " + note
		}
	default:
		return "", fmt.Errorf("%w %q: want %q, %q or %q", approval.ErrBadChoice, choice, approval.AllowOnce, approval.AllowSession, approval.DenyOnce)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.IndexFunc(b.pending, func(e *entry) bool { return e.shown.ID == id })
	if i < 0 {
		return "", approval.ErrNotPending
	}
	// Waiting ids are unique (Ask refuses a duplicate), so the request is
	// found by id alone and the hash then binds the decision to it.
	e := b.pending[i]
	if hash != e.hash {
		return "", approval.ErrHashMismatch
	}
	if who.Signed != nil && (e.record == "" || who.Signed.Statement.Record != e.record) {
		return "", errors.New("signed decision refused: the statement names another audit record than the request's")
	}
	if choice == approval.AllowSession {
		if why := e.shown.GrantRefusal(); why != "" {
			return "", fmt.Errorf("%w: %s", approval.ErrNoSessionGrant, why)
		}
	}
	if choice != approval.DenyOnce && e.shown.Approvals > 1 {
		earlier, done, partial, err := e.approve(choice, who)
		if !done {
			if err == nil {
				b.broadcast(e.approvedMsg())
			}
			return partial, err
		}
		d.Approvals = earlier
	} else if choice == approval.DenyOnce {
		d.Approvals = e.given
	}
	if choice == approval.AllowSession {
		g := b.addGrant(e.shown, by)
		d.By = fmt.Sprintf("%s (new session grant %s)", by, g.ID)
	}
	d.Approver, d.Signed = who.Person, who.Signed
	e.done = true
	b.remove(e)
	e.decided <- d
	b.broadcast(approval.Message{Type: approval.MsgResolved, ID: id, Hash: hash, Verdict: d.Verdict, By: d.By})
	return "", nil
}

// Detail returns the full text of the waiting request id whose hash is
// hash, for a console that got only its summary.
func (b *broker) Detail(id, hash string) (*approval.Shown, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.IndexFunc(b.pending, func(e *entry) bool { return e.shown.ID == id })
	if i < 0 {
		return nil, approval.ErrNotPending
	}
	if b.pending[i].hash != hash {
		return nil, approval.ErrHashMismatch
	}
	return b.pending[i].shown, nil
}

// announce is the pending message for s, whose canonical JSON is size bytes
// long and hashes to hash: s in full when it fits MaxInlineRequest, else a
// summary.
func announce(s *approval.Shown, hash string, size int) approval.Message {
	m := approval.Message{Type: approval.MsgPending, ID: s.ID, Hash: hash, Request: s}
	if size <= approval.MaxInlineRequest {
		return m
	}
	sum := &approval.Summary{Bytes: size, Stages: len(s.Pipeline), EnvVars: len(s.Env)}
	if s.Stdin != nil {
		sum.StdinBytes = s.Stdin.Size
	}
	for _, st := range s.Pipeline {
		sum.Args += len(st)
	}
	// Only fields whose size the wire format bounds are copied; anything
	// else waits for the detail.
	m.Request = &approval.Shown{
		ID: s.ID, Session: s.Session, Host: s.Host, Reason: s.Reason, Time: s.Time, Cwd: s.Cwd,
		Privileged: s.Privileged, RunAs: s.RunAs, ForwardAgent: s.ForwardAgent, Peer: s.Peer,
		Received: s.Received, Deadline: s.Deadline, DaemonHost: s.DaemonHost, Approvals: s.Approvals,
	}
	m.Summary = sum
	return m
}

// Waiting returns how many requests wait for a decision.
func (b *broker) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

func (b *broker) remove(e *entry) {
	if i := slices.Index(b.pending, e); i >= 0 {
		b.pending = slices.Delete(b.pending, i, i+1)
	}
}
