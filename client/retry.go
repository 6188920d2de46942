package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/agent-sudo/agent-sudo/proto"
	"github.com/google/uuid"
)

// BusyRetry says how a [Client] retries a request that the daemon refused
// as busy (see the package documentation, "Busy daemon"). Each zero field
// takes its default ([DefaultBusyRetries], [DefaultBusyBackoff],
// [DefaultBusyMaxBackoff]); BusyRetry{Retries: -1} turns the retry off.
type BusyRetry struct {
	// Retries is how many times a refused request is sent again, so at most
	// Retries+1 connections are made. Negative: never retry, return the
	// busy answer at once.
	Retries int
	// Backoff is the nominal wait before the first retry; it doubles before
	// each later one, up to MaxBackoff. Each actual wait is drawn at random
	// between half the nominal wait and all of it, so that clients refused
	// together do not come back together.
	Backoff, MaxBackoff time.Duration
	// OnRetry, when set, is called before each wait with the busy answer,
	// the number of the retry about to be made (1 for the first) and the
	// wait, for example to count retries or to tell a human. It is called
	// from the goroutine that called Run and must not block.
	OnRetry func(busy *proto.Response, retry int, wait time.Duration)
}

// The retry a Client whose Busy field is zero makes: up to 30 retries,
// waiting about 50 ms, then 100 ms, doubling up to 2 s, at most about 50 s
// of waiting in all (and each refused attempt may itself have waited in the
// daemon's queue first). A context deadline ends the retries
// sooner. With 10 retries (about 11 s), 200 clients of a daemon serving 30
// requests a second on a loaded 2-core machine had 3.4 % of their requests
// still refused at the end (docs/performance.md).
const (
	DefaultBusyRetries    = 30
	DefaultBusyBackoff    = 50 * time.Millisecond
	DefaultBusyMaxBackoff = 2 * time.Second
)

// withDefaults is b with each zero field set to its default.
func (b BusyRetry) withDefaults() BusyRetry {
	if b.Retries == 0 {
		b.Retries = DefaultBusyRetries
	}
	if b.Backoff <= 0 {
		b.Backoff = DefaultBusyBackoff
	}
	if b.MaxBackoff <= 0 {
		b.MaxBackoff = DefaultBusyMaxBackoff
	}
	b.MaxBackoff = max(b.MaxBackoff, b.Backoff)
	return b
}

// wait is how long to wait before retry number n (1 for the first): the
// nominal wait Backoff·2^(n-1), capped at MaxBackoff, less a random part of
// up to half of it.
func (b BusyRetry) wait(n int) time.Duration {
	d := b.Backoff
	for i := 1; i < n && d < b.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, b.MaxBackoff)
	return d - rand.N(d/2+1)
}

// IsBusy reports whether resp is the daemon's busy refusal: an error
// answer without a request id (the daemon had not read the request) whose
// message starts with "busy:". Nothing ran and nothing was recorded, so
// the same request may be sent again.
func IsBusy(resp *proto.Response) bool {
	return resp != nil && resp.Status == proto.StatusError && resp.ID == "" && strings.HasPrefix(resp.Message, "busy:")
}

// send is Run and RunRaw: it fills in the request's id once, so that every
// attempt carries the same one, and its time at each attempt when the
// caller left it zero, and sends it again after a busy answer as c.Busy
// says.
func (c *Client) send(ctx context.Context, req *proto.Request, keepRaw bool) (*proto.Response, []byte, error) {
	if req == nil {
		return nil, nil, fmt.Errorf("encode request: %w", &proto.RequestError{Kind: proto.ErrInvalid, Detail: "the request is nil"})
	}
	r := *req
	if r.ID == "" {
		r.ID = uuid.NewString()
	}
	if c.Progress != nil {
		r.Progress = true
	}
	stamp := r.Time.IsZero()
	policy := c.Busy.withDefaults()
	for retry := 1; ; retry++ {
		if stamp {
			r.Time = time.Now()
		}
		resp, raw, err := c.exchange(ctx, &r, keepRaw)
		if err != nil || !IsBusy(resp) || policy.Retries < 0 || retry > policy.Retries {
			return resp, raw, err
		}
		wait := policy.wait(retry)
		if policy.OnRetry != nil {
			policy.OnRetry(resp, retry, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			// Nothing ran: every attempt so far was refused unread.
			return nil, nil, fmt.Errorf("agent-sudod was busy (%q; nothing ran) and the wait to retry ended: %w", resp.Message, ctx.Err())
		}
	}
}
