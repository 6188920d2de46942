package client_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/clienttest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// busyMessage is the daemon's refusal of a connection over max_connections.
const busyMessage = "busy: the daemon is already serving 64 connections (max_connections); try again shortly"

// busyThen is a fake daemon that refuses its first n connections as the
// real one does (an error without an id) and answers the others with ok.
// It reads each request anyway, so that the test sees every attempt.
type busyThen struct {
	n    int
	refu proto.Response // the refusal; busyMessage without an id by default

	mu    sync.Mutex
	conns int
}

func (b *busyThen) handler(c *clienttest.Conn) {
	req, err := c.ReadRequest()
	if err != nil {
		return
	}
	b.mu.Lock()
	b.conns++
	refuse := b.conns <= b.n
	b.mu.Unlock()
	resp := &proto.Response{ID: req.ID, Status: proto.StatusOK, Stages: []proto.Stage{{}}}
	if refuse {
		r := b.refu
		if r.Status == "" {
			r = proto.Response{Status: proto.StatusError, Message: busyMessage}
		}
		resp = &r
	}
	proto.WriteResponse(c, resp) // the client may be gone
}

func (b *busyThen) connections() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.conns
}

// TestRunRetriesBusy: a busy refusal is retried, by default, with the same
// id and a fresh time each attempt, after waits that grow and stay within
// the bounds, until an answer comes.
func TestRunRetriesBusy(t *testing.T) {
	b := &busyThen{n: 4}
	srv := clienttest.NewServer(t, b.handler)
	var waits []time.Duration
	c := &client.Client{Socket: srv.Socket, Busy: client.BusyRetry{Backoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond,
		OnRetry: func(busy *proto.Response, retry int, wait time.Duration) {
			if busy.Message != busyMessage || retry != len(waits)+1 {
				t.Errorf("OnRetry(%q, %d), want the busy answer and retry %d", busy.Message, retry, len(waits)+1)
			}
			waits = append(waits, wait)
		}}}
	req := &proto.Request{Pipeline: [][]string{{"true"}}}
	resp, err := c.Run(context.Background(), req)
	if err != nil || resp.Status != proto.StatusOK {
		t.Fatalf("Run = %+v, %v; want ok after the retries", resp, err)
	}
	if got := b.connections(); got != 5 {
		t.Errorf("%d connections, want 5 (4 refused, 1 answered)", got)
	}
	if req.ID != "" || !req.Time.IsZero() {
		t.Errorf("Run modified the request: %+v", req)
	}
	reqs := srv.Requests()
	for i, r := range reqs {
		if r.ID != resp.ID {
			t.Errorf("attempt %d sent id %q, want the same id %q every time", i, r.ID, resp.ID)
		}
		if i > 0 && r.Time.Before(reqs[i-1].Time) {
			t.Errorf("attempt %d has time %v, before the previous attempt's %v", i, r.Time, reqs[i-1].Time)
		}
	}
	// Nominal waits 1, 2, 4, 4 ms; each is drawn from its upper half.
	nominal := []time.Duration{1, 2, 4, 4}
	if len(waits) != len(nominal) {
		t.Fatalf("waits %v, want %d", waits, len(nominal))
	}
	for i, w := range waits {
		if hi := nominal[i] * time.Millisecond; w < hi/2 || w > hi {
			t.Errorf("wait %d is %v, want between %v and %v", i+1, w, hi/2, hi)
		}
	}
}

// TestRunBusyRetriesBounded: when every attempt is refused, Run makes
// Retries+1 attempts and returns the last busy answer with a nil error;
// Retries: -1 makes one.
func TestRunBusyRetriesBounded(t *testing.T) {
	for _, tt := range []struct {
		retries, want int
	}{{2, 3}, {-1, 1}} {
		b := &busyThen{n: 1 << 30}
		srv := clienttest.NewServer(t, b.handler)
		c := &client.Client{Socket: srv.Socket, Busy: client.BusyRetry{Retries: tt.retries, Backoff: time.Microsecond}}
		resp, err := c.Run(context.Background(), &proto.Request{Pipeline: [][]string{{"true"}}})
		if err != nil || !client.IsBusy(resp) {
			t.Errorf("Retries %d: Run = %+v, %v; want the busy answer and no error", tt.retries, resp, err)
		}
		if got := b.connections(); got != tt.want {
			t.Errorf("Retries %d: %d connections, want %d", tt.retries, got, tt.want)
		}
	}
}

// TestRunRetriesOnlyBusy: only a busy refusal of an unread request is
// retried. A refusal that carries the request's id (the daemon read it, so
// it may have acted), a rate limit, or any other error is returned at once.
func TestRunRetriesOnlyBusy(t *testing.T) {
	for name, refusal := range map[string]proto.Response{
		"busy with the id": {ID: "req-1", Status: proto.StatusError, Message: busyMessage},
		"rate limited": {Status: proto.StatusError,
			Message: "rate limited: uid 1000 opened more than 300 connections in the last minute (max_requests_per_minute); try again in 1s"},
		"other error": {Status: proto.StatusError, Message: "bad request: not json"},
		"denied":      {ID: "req-1", Status: proto.StatusDenied, Message: "busy: no"},
	} {
		t.Run(name, func(t *testing.T) {
			b := &busyThen{n: 1, refu: refusal}
			srv := clienttest.NewServer(t, b.handler)
			resp, err := client.New(srv.Socket).Run(context.Background(), newRequest([]string{"true"}))
			if err != nil || resp.Message != refusal.Message {
				t.Errorf("Run = %+v, %v; want the refusal", resp, err)
			}
			if got := b.connections(); got != 1 {
				t.Errorf("%d connections, want 1: it was retried", got)
			}
		})
	}
}

// TestRunBusyWaitEndsWithContext: cancelling ctx during the wait before a
// retry ends Run at once with an error that wraps ctx's and says nothing ran.
func TestRunBusyWaitEndsWithContext(t *testing.T) {
	b := &busyThen{n: 1 << 30}
	srv := clienttest.NewServer(t, b.handler)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &client.Client{Socket: srv.Socket, Busy: client.BusyRetry{Backoff: time.Hour,
		OnRetry: func(*proto.Response, int, time.Duration) { cancel() }}}
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(ctx, &proto.Request{Pipeline: [][]string{{"true"}}})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "busy") || !strings.Contains(err.Error(), "nothing ran") {
			t.Errorf("Run = %v, want context.Canceled saying the daemon was busy and nothing ran", err)
		}
	case <-time.After(promptly):
		t.Fatal("Run still waits to retry after its context was cancelled")
	}
	if got := b.connections(); got != 1 {
		t.Errorf("%d connections, want 1", got)
	}
}
