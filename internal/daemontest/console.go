package daemontest

import (
	"bufio"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

// Console is a bare approver-channel client speaking the JSON lines of
// docs/approver-protocol.md. Its methods fail the test on any error.
type Console struct {
	t    testing.TB
	conn net.Conn
	in   *bufio.Scanner
	// LastSize is the length in bytes of the last line Next read.
	LastSize int
	// Timeout is how long Next waits for a line; zero means 30s.
	Timeout time.Duration
	// Hello is the daemon's greeting.
	Hello approval.Message
}

// Dial connects to the approver socket at socket, reads the hello and the
// grants that open the channel, and closes the connection when the test
// ends.
func Dial(t testing.TB, socket string) *Console {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatalf("dial the approver socket: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	sc := bufio.NewScanner(conn)
	sc.Buffer(nil, approval.MaxLine)
	c := &Console{t: t, conn: conn, in: sc}
	if c.Hello = c.Next(); c.Hello.Type != approval.MsgHello || c.Hello.Version == "" {
		t.Fatalf("first message %+v, want hello", c.Hello)
	}
	if m := c.Next(); m.Type != approval.MsgGrants {
		t.Fatalf("second message %+v, want grants", m)
	}
	return c
}

// Next returns the next message, waiting up to 30s.
func (c *Console) Next() approval.Message {
	c.t.Helper()
	wait := c.Timeout
	if wait == 0 {
		wait = 30 * time.Second
	}
	_ = c.conn.SetReadDeadline(time.Now().Add(wait))
	if !c.in.Scan() {
		c.t.Fatalf("approver channel: closed or no message within %s: %v", wait, c.in.Err())
	}
	c.LastSize = len(c.in.Bytes()) + 1
	var m approval.Message
	if err := json.Unmarshal(c.in.Bytes(), &m); err != nil {
		c.t.Fatalf("approver channel: bad line %q: %v", c.in.Bytes(), err)
	}
	return m
}

// NextOf skips messages until one of type typ.
func (c *Console) NextOf(typ string) approval.Message {
	c.t.Helper()
	for {
		if m := c.Next(); m.Type == typ {
			return m
		}
	}
}

// Pending skips messages until the pending message for request id.
func (c *Console) Pending(id string) approval.Message {
	c.t.Helper()
	for {
		if m := c.Next(); m.Type == approval.MsgPending && m.ID == id {
			return m
		}
	}
}

// Result skips messages until the result for the request or grant id.
func (c *Console) Result(id string) approval.Message {
	c.t.Helper()
	for {
		if m := c.Next(); m.Type == approval.MsgResult && (m.ID == id || m.Grant == id) {
			return m
		}
	}
}

// Close closes the connection, as a console that quits does.
func (c *Console) Close() {
	_ = c.conn.Close()
}

// Send writes m as one line.
func (c *Console) Send(m approval.Message) {
	c.t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

// SendLine writes line, a raw line without its newline, as a console that
// spells its JSON by hand would.
func (c *Console) SendLine(line string) {
	c.t.Helper()
	if _, err := c.conn.Write([]byte(line + "\n")); err != nil {
		c.t.Fatal(err)
	}
}
