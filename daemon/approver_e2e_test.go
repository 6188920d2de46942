package daemon_test

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

func TestE2EApproverChannel(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "20s"})
	fi, err := os.Stat(d.ApproverSocket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("approver socket mode %v, want 0600", fi.Mode().Perm())
	}
	c1 := daemontest.Dial(t, d.ApproverSocket)
	c2 := daemontest.Dial(t, d.ApproverSocket)
	marker := filepath.Join(d.Dir, "denied-ran")

	t.Run("allow once runs the command", func(t *testing.T) {
		done := d.Ask(t, &proto.Request{ID: "appr-1", Pipeline: [][]string{{"echo", "approved"}}, Privileged: true,
			Session: "s1", Reason: "test"}).Done
		p1, p2 := c1.Pending("appr-1"), c2.Pending("appr-1")
		if p1.ID != "appr-1" || p2.ID != "appr-1" || p1.Hash != p2.Hash || p1.Request.Reason != "test" ||
			!slices.Equal(p1.Request.Programs[0].Chain, []string{"/usr/bin/echo"}) || p1.Request.RunAs != "root" || p1.Request.Peer.UID != 0 {
			t.Fatalf("pending: %+v / %+v", p1, p1.Request)
		}
		// A decision bound to another rendering is refused.
		c1.Send(approval.Message{Type: approval.MsgDecide, ID: "appr-1", Hash: strings.Repeat("0", 64), Decision: approval.AllowOnce})
		if r := c1.Result("appr-1"); r.OK || !strings.Contains(r.Error, "hash mismatch") {
			t.Fatalf("wrong-hash decision: %+v", r)
		}
		c1.Send(approval.Message{Type: approval.MsgDecide, ID: "appr-1", Hash: p1.Hash, Decision: approval.AllowOnce})
		if r := c1.Result("appr-1"); !r.OK {
			t.Fatalf("decision refused: %+v", r)
		}
		resp := <-done
		if resp.Status != proto.StatusOK || string(resp.Stdout) != "approved\n" {
			t.Fatalf("response %+v", resp)
		}
		// The other console sees it resolved, and its late decision does nothing.
		if r := c2.NextOf(approval.MsgResolved); r.ID != "appr-1" || r.Verdict != approval.Allow || !strings.HasPrefix(r.By, "console uid=0") {
			t.Fatalf("resolved on the other console: %+v", r)
		}
		c2.Send(approval.Message{Type: approval.MsgDecide, ID: "appr-1", Hash: p1.Hash, Decision: approval.DenyOnce})
		if r := c2.Result("appr-1"); r.OK || !strings.Contains(r.Error, "no longer waiting") {
			t.Fatalf("late decision: %+v", r)
		}
	})

	t.Run("deny with a note", func(t *testing.T) {
		done := d.Ask(t, &proto.Request{ID: "appr-2", Pipeline: [][]string{{"touch", marker}}, Privileged: true}).Done
		p := c2.Pending("appr-2")
		c2.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.DenyOnce, Note: "use the staging box"})
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
		done := d.Ask(t, req("appr-3")).Done
		p := c1.Pending("appr-3")
		c1.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowSession})
		if resp := <-done; resp.Status != proto.StatusOK {
			t.Fatalf("first: %+v", resp)
		}
		g := c1.NextOf(approval.MsgGrants)
		if len(g.Grants) != 1 || g.Grants[0].Session != "s-grant" {
			t.Fatalf("grants %+v", g)
		}
		// The same request again runs without a console decision.
		if resp := d.Ask(t, req("appr-4")).Wait(); resp.Status != proto.StatusOK || string(resp.Stdout) != "again\n" {
			t.Fatalf("granted repeat: %+v", resp)
		}
		// After revoking, it asks again.
		c1.Send(approval.Message{Type: approval.MsgRevoke, Grant: g.Grants[0].ID})
		if r := c1.Result(g.Grants[0].ID); !r.OK {
			t.Fatalf("revoke: %+v", r)
		}
		done = d.Ask(t, req("appr-5")).Done
		p = c1.Pending("appr-5")
		c1.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.DenyOnce})
		if resp := <-done; resp.Status != proto.StatusDenied {
			t.Fatalf("after revoke: %+v", resp)
		}
	})

	t.Run("late console sees what waits; withdrawal resolves it", func(t *testing.T) {
		conn, err := net.Dial("unix", d.Socket)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = conn.Write([]byte(line(map[string]any{"id": "appr-6", "pipeline": [][]string{{"touch", marker}}}) + "\n"))
		c1.Pending("appr-6")
		late := daemontest.Dial(t, d.ApproverSocket)
		if p := late.Next(); p.Type != approval.MsgPending || p.ID != "appr-6" {
			t.Fatalf("late console saw %+v first", p)
		}
		conn.Close()
		if r := late.NextOf(approval.MsgResolved); r.ID != "appr-6" || r.Verdict != approval.Withdrawn {
			t.Fatalf("after disconnect: %+v", r)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("a withdrawn request ran")
		}
	})
}

func TestE2EApproverChannelRootOnly(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{})
	sock := d.ApproverSocket
	// The file mode keeps other users out...
	out := sendAsPath(t, d, "nobody", sock, `{"type":"decide"}`)
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
	out = sendAsPath(t, d, "nobody", sock, `{"type":"decide"}`)
	if !strings.Contains(out, "not allowed: the approver channel is for root only, and uid 65534 is not root") {
		t.Fatalf("non-root console was not refused: %s", out)
	}
}

// TestE2EApproverToldWhy: the console is told why the rules ask a human,
// in the rule engine's words, and the hash covers it.
func TestE2EApproverToldWhy(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "20s", Rules: `
[[rule]]
name = "echo is fine"
action = "allow"
match = ["echo", "**"]

[[rule]]
name = "tee asks"
action = "ask"
match = ["tee", "**"]
`})
	c := daemontest.Dial(t, d.ApproverSocket)
	for _, tt := range []struct {
		id       string
		pipeline [][]string
		want     string
	}{
		{"why-1", [][]string{{"echo", "x"}, {"cat"}}, "no rule applies to stage 2 of 2: /usr/bin/cat"},
		{"why-2", [][]string{{"echo", "x"}, {"tee", "/dev/null"}}, `rule "tee asks" asks for stage 2 of 2: /usr/bin/tee`},
	} {
		done := d.Ask(t, &proto.Request{ID: tt.id, Pipeline: tt.pipeline, Privileged: true, Session: "s-why"}).Done
		p := c.Pending(tt.id)
		if p.Request.Why != tt.want {
			t.Errorf("%s: why %q, want %q", tt.id, p.Request.Why, tt.want)
		}
		if p.Hash != p.Request.Hash() {
			t.Errorf("%s: the pending hash does not cover what was sent", tt.id)
		}
		// A decision made on a Shown without the why is refused.
		other := *p.Request
		other.Why = ""
		c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: other.Hash(), Decision: approval.AllowOnce})
		if r := c.Result(tt.id); r.OK || !strings.Contains(r.Error, "hash mismatch") {
			t.Fatalf("%s: decision without the why: %+v", tt.id, r)
		}
		c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.DenyOnce})
		if resp := <-done; resp.Status != proto.StatusDenied {
			t.Fatalf("%s: %+v", tt.id, resp)
		}
	}
}

// TestE2EApproverHelloNamesHostAndInstance: the hello carries the daemon's
// own host name and an instance id that stays the same for every console
// of one run and changes when the daemon restarts.
func TestE2EApproverHelloNamesHostAndInstance(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{})
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	a, b := daemontest.Dial(t, d.ApproverSocket), daemontest.Dial(t, d.ApproverSocket)
	if a.Hello.DaemonHost != host || a.Hello.Instance == "" || b.Hello.Instance != a.Hello.Instance {
		t.Fatalf("hellos %+v and %+v, want host %q and one instance", a.Hello, b.Hello, host)
	}
	d.Restart()
	c := daemontest.Dial(t, d.ApproverSocket)
	if c.Hello.DaemonHost != host || c.Hello.Instance == "" || c.Hello.Instance == a.Hello.Instance {
		t.Fatalf("hello after a restart %+v, want a new instance (was %q)", c.Hello, a.Hello.Instance)
	}
}
