package daemon_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/proto"
)

// console is a bare approver-channel client speaking the JSON lines of
// docs/approver-protocol.md.
type console struct {
	t    *testing.T
	conn net.Conn
	in   *bufio.Scanner
}

func dialConsole(t *testing.T, d *testDaemon) *console {
	t.Helper()
	conn, err := net.Dial("unix", filepath.Join(d.dir, "run", "approver.sock"))
	if err != nil {
		t.Fatalf("dial approver socket: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	sc := bufio.NewScanner(conn)
	sc.Buffer(nil, 4<<20)
	c := &console{t: t, conn: conn, in: sc}
	if m := c.next(); m.Type != approval.MsgHello || m.Version == "" {
		t.Fatalf("first message %+v, want hello", m)
	}
	if m := c.next(); m.Type != approval.MsgGrants {
		t.Fatalf("second message %+v, want grants", m)
	}
	return c
}

func (c *console) next() approval.Message {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if !c.in.Scan() {
		c.t.Fatalf("approver channel closed: %v", c.in.Err())
	}
	var m approval.Message
	if err := json.Unmarshal(c.in.Bytes(), &m); err != nil {
		c.t.Fatalf("bad line %q: %v", c.in.Bytes(), err)
	}
	return m
}

// nextOf skips messages until one of type typ.
func (c *console) nextOf(typ string) approval.Message {
	c.t.Helper()
	for {
		if m := c.next(); m.Type == typ {
			return m
		}
	}
}

// result skips messages until the result for the request or grant id.
func (c *console) result(id string) approval.Message {
	c.t.Helper()
	for {
		if m := c.next(); m.Type == approval.MsgResult && (m.ID == id || m.Grant == id) {
			return m
		}
	}
}

// pending skips messages until the pending message for request id.
func (c *console) pending(id string) approval.Message {
	c.t.Helper()
	for {
		if m := c.next(); m.Type == approval.MsgPending && m.ID == id {
			return m
		}
	}
}

func (c *console) send(m approval.Message) {
	c.t.Helper()
	b, _ := json.Marshal(m)
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

func runAsync(d *testDaemon, req *proto.Request) <-chan *proto.Response {
	ch := make(chan *proto.Response, 1)
	go func() {
		req.Time = time.Now()
		resp, err := client.New(d.socket).Run(context.Background(), req)
		if err != nil {
			resp = &proto.Response{Status: "client-error", Message: err.Error()}
		}
		ch <- resp
	}()
	return ch
}

func TestE2EApproverChannel(t *testing.T) {
	d := startDaemon(t, daemonConfig{approvalTimeout: "20s"})
	fi, err := os.Stat(filepath.Join(d.dir, "run", "approver.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("approver socket mode %v, want 0600", fi.Mode().Perm())
	}
	c1 := dialConsole(t, d)
	c2 := dialConsole(t, d)
	marker := filepath.Join(d.dir, "denied-ran")

	t.Run("allow once runs the command", func(t *testing.T) {
		done := runAsync(d, &proto.Request{ID: "appr-1", Pipeline: [][]string{{"echo", "approved"}}, Privileged: true,
			Session: "s1", Reason: "test"})
		p1, p2 := c1.pending("appr-1"), c2.pending("appr-1")
		if p1.ID != "appr-1" || p2.ID != "appr-1" || p1.Hash != p2.Hash || p1.Request.Reason != "test" ||
			p1.Request.Programs[0] != "/usr/bin/echo" || p1.Request.RunAs != "root" || p1.Request.Peer.UID != 0 {
			t.Fatalf("pending: %+v / %+v", p1, p1.Request)
		}
		// A decision bound to another rendering is refused.
		c1.send(approval.Message{Type: approval.MsgDecide, ID: "appr-1", Hash: strings.Repeat("0", 64), Decision: approval.AllowOnce})
		if r := c1.result("appr-1"); r.OK || !strings.Contains(r.Error, "hash mismatch") {
			t.Fatalf("wrong-hash decision: %+v", r)
		}
		c1.send(approval.Message{Type: approval.MsgDecide, ID: "appr-1", Hash: p1.Hash, Decision: approval.AllowOnce})
		if r := c1.result("appr-1"); !r.OK {
			t.Fatalf("decision refused: %+v", r)
		}
		resp := <-done
		if resp.Status != proto.StatusOK || string(resp.Stdout) != "approved\n" {
			t.Fatalf("response %+v", resp)
		}
		// The other console sees it resolved, and its late decision does nothing.
		if r := c2.nextOf(approval.MsgResolved); r.ID != "appr-1" || r.Verdict != approval.Allow || !strings.HasPrefix(r.By, "console uid=0") {
			t.Fatalf("resolved on the other console: %+v", r)
		}
		c2.send(approval.Message{Type: approval.MsgDecide, ID: "appr-1", Hash: p1.Hash, Decision: approval.DenyOnce})
		if r := c2.result("appr-1"); r.OK || !strings.Contains(r.Error, "no longer waiting") {
			t.Fatalf("late decision: %+v", r)
		}
	})

	t.Run("deny with a note", func(t *testing.T) {
		done := runAsync(d, &proto.Request{ID: "appr-2", Pipeline: [][]string{{"touch", marker}}, Privileged: true})
		p := c2.pending("appr-2")
		c2.send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.DenyOnce, Note: "use the staging box"})
		resp := <-done
		if resp.Status != proto.StatusDenied || !strings.Contains(resp.Message, "use the staging box") {
			t.Fatalf("response %+v", resp)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("a denied request ran")
		}
	})

	t.Run("allow for session", func(t *testing.T) {
		req := func(id string) *proto.Request {
			return &proto.Request{ID: id, Pipeline: [][]string{{"echo", "again"}}, Privileged: true, Session: "s-grant"}
		}
		done := runAsync(d, req("appr-3"))
		p := c1.pending("appr-3")
		c1.send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowSession})
		if resp := <-done; resp.Status != proto.StatusOK {
			t.Fatalf("first: %+v", resp)
		}
		g := c1.nextOf(approval.MsgGrants)
		if len(g.Grants) != 1 || g.Grants[0].Session != "s-grant" {
			t.Fatalf("grants %+v", g)
		}
		// The same request again runs without a console decision.
		if resp := <-runAsync(d, req("appr-4")); resp.Status != proto.StatusOK || string(resp.Stdout) != "again\n" {
			t.Fatalf("granted repeat: %+v", resp)
		}
		// After revoking, it asks again.
		c1.send(approval.Message{Type: approval.MsgRevoke, Grant: g.Grants[0].ID})
		if r := c1.result(g.Grants[0].ID); !r.OK {
			t.Fatalf("revoke: %+v", r)
		}
		done = runAsync(d, req("appr-5"))
		p = c1.pending("appr-5")
		c1.send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.DenyOnce})
		if resp := <-done; resp.Status != proto.StatusDenied {
			t.Fatalf("after revoke: %+v", resp)
		}
	})

	t.Run("late console sees what waits; withdrawal resolves it", func(t *testing.T) {
		conn, err := net.Dial("unix", d.socket)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write([]byte(line(map[string]any{"id": "appr-6", "pipeline": [][]string{{"touch", marker}}}) + "\n"))
		c1.pending("appr-6")
		late := dialConsole(t, d)
		if p := late.next(); p.Type != approval.MsgPending || p.ID != "appr-6" {
			t.Fatalf("late console saw %+v first", p)
		}
		conn.Close()
		if r := late.nextOf(approval.MsgResolved); r.ID != "appr-6" || r.Verdict != approval.Withdrawn {
			t.Fatalf("after disconnect: %+v", r)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("a withdrawn request ran")
		}
	})
}

func TestE2EApproverChannelRootOnly(t *testing.T) {
	d := startDaemon(t, daemonConfig{})
	sock := filepath.Join(d.dir, "run", "approver.sock")
	// The file mode keeps other users out...
	out := d.sendAsPath(t, "nobody", sock, `{"type":"decide"}`)
	if !strings.Contains(out, "permission denied") {
		t.Fatalf("nobody reached the 0600 approver socket: %s", out)
	}
	// ...and with the mode loosened the daemon's own uid check still does.
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(sock), 0o755); err != nil {
		t.Fatal(err)
	}
	out = d.sendAsPath(t, "nobody", sock, `{"type":"decide"}`)
	if !strings.Contains(out, "not allowed: the approver channel is for root only, and uid 65534 is not root") {
		t.Fatalf("non-root console was not refused: %s", out)
	}
}
