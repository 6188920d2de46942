package daemon

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

// serveClient serves the channel of b to a new Client over an in-process
// pipe, the console named by.
func serveClient(ctx context.Context, t *testing.T, b *broker, by string) *approval.Client {
	t.Helper()
	server, client := net.Pipe()
	ch := &approverChannel{Broker: b, Version: "test", Host: "box-a", Instance: "inst-1", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer server.Close()
		ch.Serve(ctx, server, approverConsole{By: by})
	}()
	t.Cleanup(func() {
		_ = client.Close()
		<-done
	})
	return approval.NewClient(client)
}

// recvType returns the next message of type typ, skipping others.
func recvType(t *testing.T, c *approval.Client, typ string) approval.Message {
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
	return approval.Message{}
}

// TestClientDecides: a Client reads the hello and a pending request, and
// its decision reaches the broker under the console's name and is
// confirmed: the whole round trip an approver written with it makes.
func TestClientDecides(t *testing.T) {
	b := newBroker(time.Hour, nil)
	r := askAsync(context.Background(), b, pending("k1", "/usr/bin/true"))
	c := serveClient(context.Background(), t, b, "web approver")
	if h := recvType(t, c, approval.MsgHello); h.Instance != "inst-1" || h.DaemonHost != "box-a" {
		t.Fatalf("hello %+v, want the daemon's host and instance", h)
	}
	p := recvType(t, c, approval.MsgPending)
	if p.ID != "k1" || p.Request == nil || p.Request.Hash() != p.Hash {
		t.Fatalf("pending %+v, want k1 whose request hashes to its hash", p)
	}
	if err := c.Decide(p.ID, p.Hash, approval.AllowOnce, ""); err != nil {
		t.Fatal(err)
	}
	if res := recvType(t, c, approval.MsgResult); !res.OK || res.ID != "k1" {
		t.Fatalf("result %+v, want ok for k1", res)
	}
	if got := <-r; got.err != nil || got.d.Verdict != approval.Allow || got.d.By != "web approver" {
		t.Fatalf("Ask returned %+v %v, want allowed by the web approver", got.d, got.err)
	}
}
