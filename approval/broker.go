package approval

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	// ErrNoSessionGrant: allow_session for a request whose program someone
	// other than root can change; nothing was decided.
	ErrNoSessionGrant = errors.New("allow for this session refused; nothing was decided")
	// ErrNoGrant: revoke named a grant that does not exist.
	ErrNoGrant = errors.New("no such session grant")
	// ErrDuplicateID: a request with the same id is already waiting. Two
	// waiting requests never share an id, so a decision (which names the
	// id) can never be taken for the other one.
	ErrDuplicateID = errors.New("a request with this id is already waiting for approval; send a fresh id")
	// ErrNoRun: stop or output named a command that is not running (it
	// finished, or the id is wrong).
	ErrNoRun = errors.New("no such running command: it has finished, or the id is wrong")
	// ErrStopping: stop named a command that a console already stopped.
	ErrStopping = errors.New("the command is already being stopped")
)

// Broker is the Approver that puts requests to human consoles: every
// connected console sees every pending request in arrival order, the first
// decision wins, and the others see the request resolved. It also keeps the
// "allow for this session" grants.
type Broker struct {
	now func() time.Time

	mu       sync.Mutex
	grantTTL time.Duration
	pending  []*entry
	subs     map[*subscriber]struct{}
	grants   []*grant
	nextID   int
	// waiting is called with each request that starts waiting for a
	// human (SetWaitingHook); nil when unset.
	waiting func(*Shown)
	// runs are the commands running now, oldest first; runVersion counts
	// the changes to them, to order running messages (Channel.Serve).
	runs       []*run
	nextRun    int
	runVersion uint64
}

// run is a running command as the broker holds it.
type run struct {
	Running
	stop   func(by string)
	output func() (*Output, bool)
}

var _ Approver = (*Broker)(nil)

type entry struct {
	shown *Shown
	hash  string
	// announce is the pending message consoles get: the request in full,
	// or a summary when it is larger than MaxInlineRequest.
	announce Message
	// decided gets the decision exactly once; done is set under the
	// broker's lock by whichever of a decision or the end of the wait comes
	// first, so the two cannot both win.
	decided chan Decision
	done    bool
}

type grant struct {
	Grant
	shown *Shown // what was approved, for exact matching
	// listed is Grant as listings show it (pipeline elided when long).
	listed Grant
}

// subscriber is one console's event stream: a queue that a goroutine feeds
// into ch. Messages still queued are coalesced (see push), so a console
// that reads slowly gets fewer messages, not a longer backlog; one that
// still falls subscriberLimit messages behind is dropped rather than
// allowed to hold the daemon's memory.
type subscriber struct {
	ch     chan Message
	mu     sync.Mutex
	q      []Message
	wake   chan struct{} // capacity 1: something was queued
	done   chan struct{} // closed when the subscription ends
	closed bool
}

// subscriberLimit bounds a subscriber's queue. Coalescing keeps it at
// about two messages per waiting request plus one grants message, and
// waiting requests are bounded by max_connections.
const subscriberLimit = 4096

// NewBroker returns a broker whose session grants last grantTTL. now is its
// clock; nil means time.Now.
func NewBroker(grantTTL time.Duration, now func() time.Time) *Broker {
	if now == nil {
		now = time.Now
	}
	return &Broker{grantTTL: grantTTL, now: now, subs: make(map[*subscriber]struct{})}
}

// SetGrantTTL makes the session grants made from now on last ttl; grants
// already made keep their expiry. A configuration reload calls it.
func (b *Broker) SetGrantTTL(ttl time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.grantTTL = ttl
}

// SetWaitingHook makes the broker call f, from Ask's goroutine and without
// its lock held, with every request that starts waiting for a human: one
// that no session grant covers and that is now announced to the consoles.
// f must return promptly; it decides nothing. A nil f removes the hook.
func (b *Broker) SetWaitingHook(f func(*Shown)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiting = f
}

// Ask waits for a human decision on p, unless a session grant covers it.
// It returns ctx's error when ctx ends first; consoles are then told the
// decision Unanswered makes of it.
func (b *Broker) Ask(ctx context.Context, p *Pending) (Decision, error) {
	shown := p.Shown()
	b.mu.Lock()
	if g := b.matchGrant(shown, p.Peer.UID); g != nil {
		b.mu.Unlock()
		return Decision{Verdict: Allow, By: fmt.Sprintf("session grant %s (%s)", g.ID, g.By)}, nil
	}
	if slices.ContainsFunc(b.pending, func(o *entry) bool { return o.shown.ID == shown.ID }) {
		b.mu.Unlock()
		return Decision{}, fmt.Errorf("request id %q: %w", shown.ID, ErrDuplicateID)
	}
	size, hash := shown.canonical()
	e := &entry{shown: shown, hash: hash, decided: make(chan Decision, 1)}
	e.announce = announce(shown, hash, size)
	b.pending = append(b.pending, e)
	b.broadcast(e.announce)
	hook := b.waiting
	consoles := len(b.subs)
	b.mu.Unlock()
	if hook != nil {
		hook(shown)
	}
	if p.Waiting != nil {
		p.Waiting(consoles)
	}

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
	d := Unanswered(ctx)
	b.broadcast(Message{Type: MsgResolved, ID: shown.ID, Hash: e.hash, Verdict: d.Verdict, By: d.By})
	return Decision{}, ctx.Err()
}

// Decide records a console's decision on the request id whose Shown hashed
// to hash. by names the decider for the audit log.
func (b *Broker) Decide(id, hash string, choice Choice, note, by string) error {
	return b.decide(id, hash, choice, note, Console{By: by})
}

// decide is Decide by the console who, whose Person goes with the decision.
func (b *Broker) decide(id, hash string, choice Choice, note string, who Console) error {
	by := who.By
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
	// Waiting ids are unique (Ask refuses a duplicate), so the request is
	// found by id alone and the hash then binds the decision to it.
	e := b.pending[i]
	if hash != e.hash {
		return ErrHashMismatch
	}
	if choice == AllowSession {
		if why := e.shown.GrantRefusal(); why != "" {
			return fmt.Errorf("%w: %s", ErrNoSessionGrant, why)
		}
		g := b.addGrant(e.shown, by)
		d.By = fmt.Sprintf("%s (new session grant %s)", by, g.ID)
	}
	d.Approver = who.Person
	e.done = true
	b.remove(e)
	e.decided <- d
	b.broadcast(Message{Type: MsgResolved, ID: id, Hash: hash, Verdict: d.Verdict, By: d.By})
	return nil
}

// Subscribe returns the requests waiting now, in arrival order (each as
// its pending message), and a stream of later pending, resolved and grants
// messages. The stream is closed by cancel, or by the broker if the
// subscriber falls too far behind.
func (b *Broker) Subscribe() (waiting []Message, events <-chan Message, cancel func()) {
	s := &subscriber{ch: make(chan Message), wake: make(chan struct{}, 1), done: make(chan struct{})}
	b.mu.Lock()
	for _, e := range b.pending {
		waiting = append(waiting, e.announce)
	}
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	go s.feed()
	return waiting, s.ch, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if _, ok := b.subs[s]; ok {
			delete(b.subs, s)
			s.close()
		}
	}
}

// Detail returns the full text of the waiting request id whose hash is
// hash, for a console that got only its summary.
func (b *Broker) Detail(id, hash string) (*Shown, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.IndexFunc(b.pending, func(e *entry) bool { return e.shown.ID == id })
	if i < 0 {
		return nil, ErrNotPending
	}
	if b.pending[i].hash != hash {
		return nil, ErrHashMismatch
	}
	return b.pending[i].shown, nil
}

// Grants returns the session grants that have not expired, as a listing:
// at most MaxGrantsListed of them, each pipeline longer than
// MaxGrantPipeline elided, and how many were left out.
func (b *Broker) Grants() (grants []Grant, omitted int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expireGrants()
	return b.listGrants()
}

// listGrants is Grants with b.mu held.
func (b *Broker) listGrants() ([]Grant, int) {
	n := min(len(b.grants), MaxGrantsListed)
	out := make([]Grant, n)
	for i, g := range b.grants[:n] {
		out[i] = g.listed
	}
	return out, len(b.grants) - n
}

// announce is the pending message for s, whose canonical JSON is size bytes
// long and hashes to hash: s in full when it fits MaxInlineRequest, else a
// summary.
func announce(s *Shown, hash string, size int) Message {
	m := Message{Type: MsgPending, ID: s.ID, Hash: hash, Request: s}
	if size <= MaxInlineRequest {
		return m
	}
	sum := &Summary{Bytes: size, Stages: len(s.Pipeline), EnvVars: len(s.Env)}
	if s.Stdin != nil {
		sum.StdinBytes = s.Stdin.Size
	}
	for _, st := range s.Pipeline {
		sum.Args += len(st)
	}
	// Only fields whose size the wire format bounds are copied; anything
	// else waits for the detail.
	m.Request = &Shown{
		ID: s.ID, Session: s.Session, Host: s.Host, Reason: s.Reason, Time: s.Time, Cwd: s.Cwd,
		Privileged: s.Privileged, RunAs: s.RunAs, ForwardAgent: s.ForwardAgent, Peer: s.Peer,
		Received: s.Received, Deadline: s.Deadline, DaemonHost: s.DaemonHost,
	}
	m.Summary = sum
	return m
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

func (s *subscriber) pop() (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.q) == 0 {
		return Message{}, false
	}
	m := s.q[0]
	s.q[0] = Message{}
	s.q = s.q[1:]
	return m, true
}

// push queues m, coalescing with what is still queued: a request resolved
// before its pending message left the queue is dropped with its resolved
// message (the console never learns of it), and a grants message replaces
// a queued one, as does a running message. It reports false when the
// queue is over subscriberLimit.
func (s *subscriber) push(m Message) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return true
	}
	switch m.Type {
	case MsgResolved:
		if i := slices.IndexFunc(s.q, func(o Message) bool {
			return o.Type == MsgPending && o.ID == m.ID && o.Hash == m.Hash
		}); i >= 0 {
			s.q = slices.Delete(s.q, i, i+1)
			return true
		}
	case MsgGrants, MsgRunning:
		s.q = slices.DeleteFunc(s.q, func(o Message) bool { return o.Type == m.Type })
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

// Started lists a command the daemon has started, and returns the id it is
// listed under and the func that removes it from the list once it has
// ended. r's ID is assigned here and its pipeline bounded as a grant's is
// (MaxGrantPipeline). stop is called at most once, by the first Stop, with
// the console that stopped it; it must return at once (the daemon cancels
// the command's context). output returns the end of the command's output
// so far, or false once the command has ended; it is called without the
// broker's lock held.
func (b *Broker) Started(r Running, stop func(by string), output func() (*Output, bool)) (id string, ended func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextRun++
	r.ID = "run" + strconv.Itoa(b.nextRun)
	r.StoppedBy = ""
	g := listing(Grant{Pipeline: r.Pipeline})
	r.Pipeline, r.Elided = g.Pipeline, g.Elided
	e := &run{Running: r, stop: stop, output: output}
	b.runs = append(b.runs, e)
	b.broadcastRunning()
	return r.ID, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		if i := slices.Index(b.runs, e); i >= 0 {
			b.runs = slices.Delete(b.runs, i, i+1)
			b.broadcastRunning()
		}
	}
}

// Running returns the commands running now, as a listing: at most
// MaxRunningListed of them, oldest first, how many were left out, and the
// listing's version (a later listing has a higher one).
func (b *Broker) Running() (running []Running, omitted int, version uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	running, omitted = b.listRunning()
	return running, omitted, b.runVersion
}

// listRunning is Running's listing with b.mu held.
func (b *Broker) listRunning() ([]Running, int) {
	n := min(len(b.runs), MaxRunningListed)
	out := make([]Running, n)
	for i, r := range b.runs[:n] {
		out[i] = r.Running
	}
	return out, len(b.runs) - n
}

// broadcastRunning tells the subscribers the running commands changed;
// the caller holds b.mu.
func (b *Broker) broadcastRunning() {
	b.runVersion++
	rs, omitted := b.listRunning()
	b.broadcast(Message{Type: MsgRunning, Running: rs, RunningOmitted: omitted, version: b.runVersion})
}

// Stop stops the running command id on behalf of the console by: the
// command's stop func is called (the daemon then sends SIGTERM and, after
// kill_grace, SIGKILL) and the listing shows who stopped it until it is
// gone. It fails with ErrNoRun when no command id is running, and with
// ErrStopping when a console already stopped it.
func (b *Broker) Stop(id, by string) error {
	b.mu.Lock()
	i := slices.IndexFunc(b.runs, func(r *run) bool { return r.ID == id })
	if i < 0 {
		b.mu.Unlock()
		return fmt.Errorf("%w (%q)", ErrNoRun, id)
	}
	r := b.runs[i]
	if r.StoppedBy != "" {
		b.mu.Unlock()
		return fmt.Errorf("%s: %w by %s", id, ErrStopping, r.StoppedBy)
	}
	r.StoppedBy = by
	b.broadcastRunning()
	b.mu.Unlock()
	r.stop(by)
	return nil
}

// Output returns the end of the output of the running command id so far,
// or ErrNoRun when it is not running.
func (b *Broker) Output(id string) (*Output, error) {
	b.mu.Lock()
	i := slices.IndexFunc(b.runs, func(r *run) bool { return r.ID == id })
	var r *run
	if i >= 0 {
		r = b.runs[i]
	}
	b.mu.Unlock()
	if r == nil {
		return nil, fmt.Errorf("%w (%q)", ErrNoRun, id)
	}
	out, ok := r.output()
	if !ok {
		return nil, fmt.Errorf("%w (%q)", ErrNoRun, id)
	}
	return out, nil
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

// broadcast queues m for every subscriber; the caller holds b.mu.
func (b *Broker) broadcast(m Message) {
	for s := range b.subs {
		if !s.push(m) {
			delete(b.subs, s)
			s.close()
		}
	}
}

func (b *Broker) broadcastGrants() {
	gs, omitted := b.listGrants()
	b.broadcast(Message{Type: MsgGrants, Grants: gs, GrantsOmitted: omitted})
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
	if s.Stdin != nil {
		g.StdinSHA256 = s.Stdin.SHA256
	}
	g.listed = listing(g.Grant)
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

// sameProgram reports whether a and b are the same file reached the same
// way: chain, device, inode and content hash.
func sameProgram(a, b Program) bool {
	return slices.Equal(a.Chain, b.Chain) && a.Dev == b.Dev && a.Ino == b.Ino && a.SHA256 == b.SHA256 &&
		len(a.Writable) == 0 && len(b.Writable) == 0
}

// matchGrant finds a live grant covering s from uid. A grant covers only the
// exact same request: every argument, program (symlink chain, device, inode
// and content hash; never a program someone other than root can change),
// env value, resolved cwd, stdin byte, privilege, target user, agent
// forwarding, session and uid.
func (b *Broker) matchGrant(s *Shown, uid uint32) *grant {
	b.expireGrants()
	for _, g := range b.grants {
		a := g.shown
		if a.Session == s.Session && g.UID == uid && a.Peer.UID == s.Peer.UID &&
			a.Privileged == s.Privileged && a.RunAs == s.RunAs && a.ForwardAgent == s.ForwardAgent &&
			a.Cwd == s.Cwd && slices.EqualFunc(a.Programs, s.Programs, sameProgram) && maps.Equal(a.Env, s.Env) &&
			sameStdin(a.Stdin, s.Stdin) &&
			slices.EqualFunc(a.Pipeline, s.Pipeline, slices.Equal) {
			return g
		}
	}
	return nil
}

// listing returns g as a grants listing shows it: with its pipeline
// replaced by its size and SHA-256 when the pipeline's JSON is longer than
// MaxGrantPipeline.
func listing(g Grant) Grant {
	b, err := json.Marshal(g.Pipeline)
	if err == nil && len(b) <= MaxGrantPipeline {
		return g
	}
	sum := sha256.Sum256(b)
	e := &Elided{Bytes: len(b), SHA256: hex.EncodeToString(sum[:]), Stages: len(g.Pipeline)}
	for _, st := range g.Pipeline {
		e.Args += len(st)
	}
	g.Pipeline, g.Elided = nil, e
	return g
}

// sameStdin reports whether two requests feed exactly the same input.
func sameStdin(a, b *StdinShown) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return bytes.Equal(a.Data, b.Data)
}
