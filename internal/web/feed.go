package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/agent-sudo/agent-sudo/approval"
)

// feed is what the web approver knows of one daemon: the requests waiting,
// as the approver channel announced them, the passkeys the daemon last
// sent, and the answers to the decisions it relayed. It reads the channel
// in one goroutine (run). Once the channel ends the feed is down for good:
// the web approver has dropped root and cannot dial again
// (docs/approving.md#several-daemons).
type feed struct {
	client *approval.Client

	mu sync.Mutex
	// feedState is what the pages show of the daemon, guarded by mu
	// (its name never changes).
	feedState
	// results receives the daemon's answer to a decision, by request id:
	// one decision per request at a time is relayed (decide holds it).
	results map[string]chan approval.Message
	// relayed are the ids of the latest requests this web approver
	// relayed a decision on (decide), at most maxResolved: only their
	// resolved messages are kept for the receipts, so that requests an
	// agent asks and withdraws, each resolved, cannot push those out.
	relayed []string
}

func newFeed(name string, c *approval.Client) *feed {
	return &feed{client: c, feedState: feedState{name: name, approved: make(map[string]approval.Message)},
		results: make(map[string]chan approval.Message)}
}

// run reads the channel until it ends or ctx does, and returns why.
func (f *feed) run(ctx context.Context) error {
	err := f.read(ctx)
	f.mu.Lock()
	f.err = err
	f.pending, f.keys, f.refused, f.resolved, f.finished = nil, nil, nil, nil, nil
	clear(f.approved)
	f.version++
	for id, ch := range f.results {
		close(ch)
		delete(f.results, id)
	}
	f.mu.Unlock()
	return err
}

func (f *feed) read(ctx context.Context) error {
	for {
		m, err := f.client.Recv(ctx)
		if errors.Is(err, approval.ErrHashMismatch) {
			f.refuse(m.ID, err)
			continue
		}
		if err != nil {
			return err
		}
		f.mu.Lock()
		switch m.Type {
		case approval.MsgHello:
			f.hello = m
			f.version++
		case approval.MsgPending:
			// A request announced again replaces its earlier version, so
			// that only the latest can be shown or decided, and who
			// allowed an earlier version no longer counts for it.
			f.pending = slices.DeleteFunc(f.pending, func(p approval.Message) bool { return p.ID == m.ID })
			f.pending = append(f.pending, m)
			f.refused = slices.DeleteFunc(f.refused, func(r refusal) bool { return r.id == m.ID })
			if a, ok := f.approved[m.ID]; ok && a.Hash != m.Hash {
				delete(f.approved, m.ID)
			}
			f.version++
		case approval.MsgApproved:
			// Kept only for the version of the request it names.
			if slices.ContainsFunc(f.pending, func(p approval.Message) bool { return p.ID == m.ID && p.Hash == m.Hash }) {
				f.approved[m.ID] = m
				f.version++
			}
		case approval.MsgResolved:
			if slices.Contains(f.relayed, m.ID) {
				f.resolved = keepLatest(f.resolved, ended{seq: f.version + 1, Message: m})
			}
			f.pending = slices.DeleteFunc(f.pending, func(p approval.Message) bool { return p.ID == m.ID })
			delete(f.approved, m.ID)
			f.refused = slices.DeleteFunc(f.refused, func(r refusal) bool { return r.id == m.ID })
			f.version++
		case approval.MsgFinished:
			f.version++
			f.finished = keepLatest(f.finished, ended{seq: f.version, Message: m})
		case approval.MsgPasskeys:
			f.keys, f.keysErr, f.keysSeen = m.Passkeys, m.Error, true
			f.version++
		case approval.MsgResult:
			if ch, ok := f.results[m.ID]; ok && m.ID != "" {
				ch <- m
				delete(f.results, m.ID)
			}
		}
		f.mu.Unlock()
	}
}

// maxRefused bounds the refusals a feed keeps: the latest are shown.
const maxRefused = 32

// maxResolved bounds the resolved messages a feed keeps for the pages'
// receipts (the latest, of the requests it relayed a decision on), the
// finished ones, and the ids of those requests.
const maxResolved = 32

// ended is a resolved or finished message, with the feed's version when
// it came (seq), which only grows: a page tells by it the messages that
// came after its decision from those of an earlier request with the same
// id.
type ended struct {
	seq uint64
	approval.Message
}

// keepLatest appends e to l and keeps the latest maxResolved.
func keepLatest(l []ended, e ended) []ended {
	l = append(l, e)
	if len(l) > maxResolved {
		l = slices.Delete(l, 0, len(l)-maxResolved)
	}
	return l
}

// refusal is a request the daemon sent that does not hash to its
// announced hash (approval.ErrHashMismatch), and why.
type refusal struct {
	id, err string
}

// refuse drops request id from the list, the version the daemon
// announced before included, so that nothing of it is shown or can be
// decided here, and keeps why, for the page to say so; until the daemon
// resolves it or announces a version that hashes.
func (f *feed) refuse(id string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = slices.DeleteFunc(f.pending, func(p approval.Message) bool { return p.ID == id })
	delete(f.approved, id)
	f.refused = slices.DeleteFunc(f.refused, func(r refusal) bool { return r.id == id })
	f.refused = append(f.refused, refusal{id: id, err: err.Error()})
	if len(f.refused) > maxRefused {
		f.refused = slices.Delete(f.refused, 0, len(f.refused)-maxRefused)
	}
	f.version++
}

// feedState is what a feed knows of its daemon; state returns a copy for
// one page.
type feedState struct {
	// name is how the human named the daemon on the command line.
	name  string
	hello approval.Message
	// pending are the requests waiting, as announced: one entry per id,
	// its latest version.
	pending []approval.Message
	// approved is, by request id, the daemon's latest approved message
	// for a waiting request that needs more than one person: who allowed
	// it so far. It names the pending it was sent for by its hash.
	approved map[string]approval.Message
	// refused are the requests whose latest message did not hash as
	// announced, oldest first, at most maxRefused.
	refused []refusal
	// resolved are the daemon's latest resolved messages of the requests
	// this web approver relayed a decision on (feed.relayed), oldest
	// first, at most maxResolved: how the requests decided on a page
	// ended, for its receipts.
	resolved []ended
	// finished are the daemon's latest finished messages (how an allowed
	// request ended: its status and exit codes), oldest first, at most
	// maxResolved, for the same receipts.
	finished []ended
	// keys are the passkeys of the daemon's latest passkeys message, and
	// keysErr the error it carried; keysSeen is set once one came.
	keys     []approval.PublicKey
	keysErr  string
	keysSeen bool
	// version counts the changes to what the page shows of this daemon,
	// so that a page can tell it is out of date.
	version uint64
	// err is why the channel ended; nil while it is open.
	err error
}

// state returns a copy of what f knows.
func (f *feed) state() feedState {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.feedState
	st.pending, st.approved, st.refused, st.keys = slices.Clone(f.pending), maps.Clone(f.approved), slices.Clone(f.refused), slices.Clone(f.keys)
	st.resolved, st.finished = slices.Clone(f.resolved), slices.Clone(f.finished)
	return st
}

// knows reports whether the daemon's channel is open and its latest
// passkeys include k: the same credential id with the same public key.
func (st feedState) knows(k approval.PublicKey) bool {
	return st.err == nil && slices.ContainsFunc(st.keys, func(e approval.PublicKey) bool { return sameKey(e, k) })
}

// identity returns the person k is on this daemon for the two-person rule
// (approval.PublicKey.Identity, as the daemon sent it), or "" when the
// daemon does not know k or sent no identity (an older daemon).
func (st feedState) identity(k approval.PublicKey) string {
	if i := slices.IndexFunc(st.keys, func(e approval.PublicKey) bool { return sameKey(e, k) }); i >= 0 {
		return st.keys[i].Identity
	}
	return ""
}

// sameKey reports whether a and b are one credential: the same id and the
// same public key.
func sameKey(a, b approval.PublicKey) bool {
	return bytes.Equal(a.CredentialID, b.CredentialID) && bytes.Equal(a.PublicKey, b.PublicKey)
}

// find returns the pending message of request id.
func (f *feed) find(id string) (approval.Message, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.pending, func(p approval.Message) bool { return p.ID == id })
	if i < 0 {
		return approval.Message{}, false
	}
	return f.pending[i], true
}

// decide relays a signed decision and returns the daemon's answer: its
// note (set when the allow counted but another person must allow too), or
// its error.
func (f *feed) decide(ctx context.Context, m approval.Message) (string, error) {
	ch := make(chan approval.Message, 1)
	f.mu.Lock()
	if f.err != nil {
		f.mu.Unlock()
		return "", fmt.Errorf("the daemon's channel is closed: %w", f.err)
	}
	if _, busy := f.results[m.ID]; busy {
		f.mu.Unlock()
		return "", errors.New("a decision on this request is already on its way")
	}
	f.results[m.ID] = ch
	// Before it is sent: the daemon's resolved may come before its answer.
	if !slices.Contains(f.relayed, m.ID) {
		f.relayed = append(f.relayed, m.ID)
		if len(f.relayed) > maxResolved {
			f.relayed = slices.Delete(f.relayed, 0, len(f.relayed)-maxResolved)
		}
	}
	f.mu.Unlock()
	if err := f.client.Send(m); err != nil {
		f.mu.Lock()
		delete(f.results, m.ID)
		f.mu.Unlock()
		return "", err
	}
	select {
	case res, ok := <-ch:
		if !ok {
			return "", errors.New("the daemon's channel closed before it answered")
		}
		if !res.OK {
			return "", errors.New(res.Error)
		}
		return res.Note, nil
	case <-ctx.Done():
		f.mu.Lock()
		delete(f.results, m.ID)
		f.mu.Unlock()
		return "", ctx.Err()
	}
}
