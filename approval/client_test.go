package approval

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"
)

// serveClient serves the channel of b to a new Client over an in-process
// pipe, the console named by.
func serveClient(ctx context.Context, t *testing.T, b *Broker, by string) *Client {
	t.Helper()
	server, client := net.Pipe()
	ch := &Channel{Broker: b, Version: "test", Host: "box-a", Instance: "inst-1", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer server.Close()
		ch.Serve(ctx, server, Console{By: by})
	}()
	t.Cleanup(func() {
		_ = client.Close()
		<-done
	})
	return NewClient(client)
}

// recvType returns the next message of type typ, skipping others.
func recvType(t *testing.T, c *Client, typ string) Message {
	t.Helper()
	for range 100 {
		m, err := c.Recv(context.Background())
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if m.Type == typ {
			return m
		}
	}
	t.Fatalf("no %s message in the first 100", typ)
	return Message{}
}

// TestClientDecides: a Client reads the hello and a pending request, and
// its decision reaches the broker under the console's name and is
// confirmed: the whole round trip an approver written with it makes.
func TestClientDecides(t *testing.T) {
	b := NewBroker(time.Hour, nil)
	r := askAsync(context.Background(), b, pending("k1", "/usr/bin/true"))
	c := serveClient(context.Background(), t, b, "web approver")
	if h := recvType(t, c, MsgHello); h.Instance != "inst-1" || h.DaemonHost != "box-a" {
		t.Fatalf("hello %+v, want the daemon's host and instance", h)
	}
	p := recvType(t, c, MsgPending)
	if p.ID != "k1" || p.Request == nil || p.Request.Hash() != p.Hash {
		t.Fatalf("pending %+v, want k1 whose request hashes to its hash", p)
	}
	if err := c.Decide(p.ID, p.Hash, AllowOnce, ""); err != nil {
		t.Fatal(err)
	}
	if res := recvType(t, c, MsgResult); !res.OK || res.ID != "k1" {
		t.Fatalf("result %+v, want ok for k1", res)
	}
	if got := <-r; got.err != nil || got.d.Verdict != Allow || got.d.By != "web approver" {
		t.Fatalf("Ask returned %+v %v, want allowed by the web approver", got.d, got.err)
	}
}

// TestClientCheckHash: a pending message whose request was changed after
// it was hashed (a tampering relay) is refused with ErrHashMismatch; a
// summary, whose hash covers text it does not carry, passes.
func TestClientCheckHash(t *testing.T) {
	s := pending("k2", "/usr/bin/true").Shown()
	m := Message{Type: MsgPending, ID: s.ID, Hash: s.Hash(), Request: s}
	if err := CheckHash(m); err != nil {
		t.Fatalf("untouched pending: %v", err)
	}
	changed := *s
	changed.Reason = "something else"
	m.Request = &changed
	if err := CheckHash(m); !errors.Is(err, ErrHashMismatch) {
		t.Fatalf("changed pending: got %v, want ErrHashMismatch", err)
	}
	m.Summary = &Summary{Bytes: 1}
	if err := CheckHash(m); err != nil {
		t.Fatalf("summary: %v", err)
	}
}

// TestClientRecvCancel: a Recv blocked on a silent daemon returns when its
// context ends, and the client can read again afterwards.
func TestClientRecvCancel(t *testing.T) {
	server, client := net.Pipe()
	defer server.Close()
	c := NewClient(client)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := c.Recv(ctx)
		got <- err
	}()
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("Recv after cancel: %v, want context.Canceled", err)
	}
	go func() { _, _ = server.Write([]byte(`{"type":"hello","version":"v"}` + "\n")) }()
	m, err := c.Recv(context.Background())
	if err != nil || m.Type != MsgHello {
		t.Fatalf("Recv after a cancelled one: %+v %v, want the hello", m, err)
	}
}
