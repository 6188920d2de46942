package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

// console is the test's end of an approver channel served in-process.
type console struct {
	t    *testing.T
	conn net.Conn
	sc   *bufio.Scanner
	done chan struct{} // closed when Serve returns
}

// serveConsole serves the channel of b to a new in-process console named by.
func serveConsole(ctx context.Context, t *testing.T, b *broker, by string) *console {
	t.Helper()
	server, client := net.Pipe()
	c := &approverChannel{Broker: b, Version: "test", Host: "box-a", Instance: "inst-1", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer server.Close()
		c.Serve(ctx, server, approverConsole{By: by})
	}()
	t.Cleanup(func() {
		_ = client.Close()
		<-done
	})
	sc := bufio.NewScanner(client)
	sc.Buffer(nil, approval.MaxLine)
	return &console{t: t, conn: client, sc: sc, done: done}
}

// read returns the next message the channel sends.
func (c *console) read() approval.Message {
	c.t.Helper()
	if !c.sc.Scan() {
		c.t.Fatalf("channel closed: %v", c.sc.Err())
	}
	var m approval.Message
	if err := json.Unmarshal(c.sc.Bytes(), &m); err != nil {
		c.t.Fatalf("channel sent %q: %v", c.sc.Text(), err)
	}
	return m
}

// send writes one raw line.
func (c *console) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, line+"\n"); err != nil {
		c.t.Fatalf("send %q: %v", line, err)
	}
}

// sendMessage writes m as one line.
func (c *console) sendMessage(m approval.Message) {
	c.t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	c.send(string(b))
}

// TestChannelGreetingThenDecide: a console first gets the hello, the grants
// and what already waits, in that order; its decision reaches the broker
// under the name the daemon gave the console, and is confirmed.
func TestChannelGreetingThenDecide(t *testing.T) {
	b := newBroker(time.Hour, nil)
	_, events, unsubscribe := b.Subscribe()
	defer unsubscribe()
	r := askAsync(context.Background(), b, pending("c1"))
	next(t, events) // c1 waits before the console connects

	c := serveConsole(context.Background(), t, b, "console uid=0 tty=/dev/pts/9 pid=1")
	if m := c.read(); m.Type != approval.MsgHello || m.Version != "test" || m.DaemonHost != "box-a" || m.Instance != "inst-1" {
		t.Fatalf("first message %+v, want the hello with the daemon's host and instance", m)
	}
	if m := c.read(); m.Type != approval.MsgGrants {
		t.Fatalf("second message %+v, want the grants", m)
	}
	p := c.read()
	if p.Type != approval.MsgPending || p.ID != "c1" || p.Hash == "" {
		t.Fatalf("third message %+v, want c1 pending", p)
	}
	c.sendMessage(approval.Message{Type: approval.MsgDecide, ID: "c1", Hash: p.Hash, Decision: approval.AllowOnce})
	var result approval.Message
	for result.Type != approval.MsgResult { // the resolved event may come first
		result = c.read()
	}
	if !result.OK || result.ID != "c1" || result.Error != "" {
		t.Fatalf("result %+v, want ok for c1", result)
	}
	got := <-r
	if got.err != nil || got.d.Verdict != approval.Allow || got.d.By != "console uid=0 tty=/dev/pts/9 pid=1" {
		t.Fatalf("Ask returned %+v %v, want allowed by the console", got.d, got.err)
	}
}

// TestChannelAnswersBadLines: a line that is not a message, an unknown type,
// a decision on another hash, an unknown grant, a repeated key, a lone
// surrogate escape and a line over the limit each get an error result
// saying what was wrong, and the channel stays open.
func TestChannelAnswersBadLines(t *testing.T) {
	b := newBroker(time.Hour, nil)
	r := askAsync(context.Background(), b, pending("c2"))
	c := serveConsole(context.Background(), t, b, "console")
	c.read() // hello
	c.read() // grants
	var p approval.Message
	for p.Type != approval.MsgPending {
		p = c.read()
	}
	for _, tt := range []struct {
		line, want string
	}{
		{`not json`, "invalid message"},
		{`{"type":"approve","id":"c2"}`, `unknown message type "approve"`},
		{`{"type":"decide","id":"c2","hash":"00","decision":"allow_once"}`, "hash mismatch"},
		{`{"type":"revoke","grant":"g404"}`, "g404"},
		{`{"type":"detail","id":"nope","hash":"00"}`, "no longer waiting"},
		// A repeated key is refused as the agent socket refuses it: a
		// reader that takes the first "decision" would record a deny.
		{`{"type":"decide","id":"c2","hash":"` + p.Hash + `","decision":"deny","decision":"allow_once"}`, `invalid message: key "decision" appears more than once`},
		{`{"type":"decide","id":"c2","hash":"` + p.Hash + `","decision":"deny","note":"x\ud800"}`, `invalid message: the escape \ud800 at byte 128 of the line is half of a UTF-16 surrogate pair`},
		{`{"type":"decide"} {}`, "invalid message: unexpected data after the JSON object at offset 17"},
		{``, "invalid message: the line is empty"},
		// A line over the limit is answered too, not taken for a crash.
		{`{"type":"detail","note":"` + strings.Repeat("a", maxConsoleLine) + `"}`, fmt.Sprintf("invalid message: the line is %d bytes long; a console's line may be at most %d bytes", maxConsoleLine+28, maxConsoleLine)},
	} {
		c.send(tt.line)
		m := c.read()
		if m.Type != approval.MsgResult || m.OK || !strings.Contains(m.Error, tt.want) {
			t.Errorf("%s: answered %+v, want an error containing %q", tt.line, m, tt.want)
		}
	}
	if b.Waiting() != 1 {
		t.Fatalf("%d waiting after the bad lines, want c2 still waiting", b.Waiting())
	}
	c.sendMessage(approval.Message{Type: approval.MsgDecide, ID: "c2", Hash: p.Hash, Decision: approval.DenyOnce, Note: "no"})
	if got := <-r; got.err != nil || got.d.Verdict != approval.Deny || !strings.HasSuffix(got.d.Message, ": no") {
		t.Fatalf("Ask returned %+v %v, want denied with the note", got.d, got.err)
	}
}

// TestChannelEnds: Serve returns when the console hangs up and when its
// context ends.
func TestChannelEnds(t *testing.T) {
	b := newBroker(time.Hour, nil)
	c := serveConsole(context.Background(), t, b, "console")
	c.read()
	_ = c.conn.Close()
	<-c.done

	ctx, cancel := context.WithCancel(context.Background())
	c = serveConsole(ctx, t, b, "console")
	c.read() // hello
	c.read() // grants: the greeting is written, Serve waits on events and lines
	cancel()
	<-c.done
}

// stuckConn is a connection whose writes block, deadline or not, until it
// is closed: a console that stopped reading, at its worst.
type stuckConn struct {
	net.Conn
	closed  chan struct{}
	writing chan struct{} // closed at the first write
	once    sync.Once
}

func (c *stuckConn) Write([]byte) (int, error) {
	c.once.Do(func() { close(c.writing) })
	<-c.closed
	return 0, net.ErrClosed
}

func (c *stuckConn) Close() error {
	close(c.closed)
	return c.Conn.Close()
}

// TestChannelEndsWhileGreeting: ctx's end stops Serve even while it is
// blocked writing the greeting to a console that does not read.
func TestChannelEndsWhileGreeting(t *testing.T) {
	b := newBroker(time.Hour, nil)
	server, client := net.Pipe()
	defer client.Close()
	conn := &stuckConn{Conn: server, closed: make(chan struct{}), writing: make(chan struct{})}
	defer conn.Close()
	c := &approverChannel{Broker: b, Version: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Serve(ctx, conn, approverConsole{By: "console"})
	}()
	<-conn.writing
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Serve did not return after its context ended: it is still writing the greeting")
	}
}
