package web

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agent-sudo/agent-sudo/approval"
)

// feed is what the web approver knows of one daemon: the requests waiting,
// as the approver channel announced them, and the answers to the decisions
// it relayed. It reads the channel in one goroutine (run).
type feed struct {
	client *approval.Client

	mu      sync.Mutex
	hello   approval.Message
	pending []approval.Message
	// version counts the changes to pending, so that a page can tell it
	// is out of date.
	version uint64
	// results receives the daemon's answer to a decision, by request id:
	// one decision per request at a time is relayed (decide holds it).
	results map[string]chan approval.Message
	err     error
}

func newFeed(c *approval.Client) *feed {
	return &feed{client: c, results: make(map[string]chan approval.Message)}
}

// run reads the channel until it ends or ctx does, and returns why.
func (f *feed) run(ctx context.Context) error {
	err := f.read(ctx)
	f.mu.Lock()
	f.err = err
	f.pending = nil
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
			// A request that does not hash as announced is not shown,
			// so it cannot be decided here.
			continue
		}
		if err != nil {
			return err
		}
		f.mu.Lock()
		switch m.Type {
		case approval.MsgHello:
			f.hello = m
		case approval.MsgPending:
			f.pending = append(f.pending, m)
			f.version++
		case approval.MsgResolved:
			f.pending = slices.DeleteFunc(f.pending, func(p approval.Message) bool { return p.ID == m.ID })
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

// snapshot returns the requests waiting and the version of that list.
func (f *feed) snapshot() ([]approval.Message, uint64, approval.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pending), f.version, f.hello
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
