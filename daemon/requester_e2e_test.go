package daemon_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/procinfo"
)

// hostileName is argv[0] of the requester's parent in the ancestry tests:
// an escape sequence and a Cyrillic look-alike.
const hostileName = "cl\x1b[2Jaud\u0435"

// startRequester runs the agent CLI as u (nil: root) under a bash that
// leads a session of its own and calls itself hostileName, so the
// requester's ancestry is known: the CLI, then that bash. The CLI asks for
// `true` claiming host claimedHost. It returns the running command, whose
// output is in out.
func startRequester(t *testing.T, d *daemontest.Daemon, u *daemontest.User, claimedHost string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cli := d.PublicCLI()
	// The trailing "; true" keeps bash from exec'ing the CLI in its place.
	script := `exec -a "$NAME" /bin/bash -c '"$CLI" run --socket "$SOCK" --host "$CLAIMED" --session s-who --reason why --json -- /usr/bin/true; true'`
	args := []string{"--wait", "/bin/bash", "-c", script}
	var cmd *exec.Cmd
	if u == nil {
		cmd = exec.Command("setsid", args...)
	} else {
		cmd = u.Command("setsid", args...)
	}
	cmd.Env = []string{"PATH=/usr/bin:/bin", "NAME=" + hostileName, "CLI=" + cli, "SOCK=" + d.Socket, "CLAIMED=" + claimedHost}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Wait() })
	return cmd, &out
}

// TestE2ERequesterAncestry: the console is shown the requester's process
// ancestry as the daemon read it from /proc (the CLI, then its parent up to
// the session leader, each with its exe and argv[0] raw in the message and
// escaped on screen), the daemon's own host name beside the one the agent
// claims, and the audit log records the ancestry, which `agent-sudo audit
// show` prints escaped.
func TestE2ERequesterAncestry(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "20s"})
	c := daemontest.Dial(t, d.ApproverSocket)
	cmd, out := startRequester(t, d, nil, "prod-db-1")

	p := c.NextOf(approval.MsgPending)
	s := p.Request
	a := s.Peer.Ancestry
	if a == nil || len(a.Hops) != 2 {
		t.Fatalf("ancestry %+v, want the CLI and its session leader", a)
	}
	cli, leader := a.Hops[0], a.Hops[1]
	if cli.PID != s.Peer.PID || cli.Exe != d.PublicCLI() || cli.Name() != "agent-sudo" {
		t.Errorf("first hop %+v, want the peer (pid %d, exe %s)", cli, s.Peer.PID, d.PublicCLI())
	}
	if leader.PID != int32(cmd.Process.Pid) && leader.Exe != "/usr/bin/bash" {
		t.Errorf("second hop %+v, want bash", leader)
	}
	if leader.Exe != "/usr/bin/bash" || len(leader.Argv) == 0 || leader.Argv[0] != hostileName || a.End != procinfo.EndSessionLeader {
		t.Errorf("session leader %+v end %q, want bash called %q, ending at the session leader", leader, a.End, hostileName)
	}
	host, _ := os.Hostname()
	if s.Host != "prod-db-1" || s.DaemonHost != host {
		t.Errorf("host %q daemon_host %q, want the claim and %q", s.Host, s.DaemonHost, host)
	}
	if s.Hash() != p.Hash {
		t.Errorf("the pending hash does not cover the shown ancestry")
	}
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce})
	if r := c.Result(p.ID); !r.OK {
		t.Fatalf("decision: %+v", r)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("requester: %v\n%s", err, out)
	}

	// The audit log's request record holds the ancestry; the later records
	// do not repeat it.
	recs := d.AuditRecords(p.ID)
	if len(recs) < 2 || recs[0].Peer == nil || recs[0].Peer.Ancestry == nil || len(recs[0].Peer.Ancestry.Hops) != 2 ||
		recs[0].Peer.Ancestry.Hops[1].Argv[0] != hostileName {
		t.Fatalf("request record's peer: %+v", recs[0].Peer)
	}
	for _, r := range recs[1:] {
		if r.Peer == nil || r.Peer.Ancestry != nil || r.Peer.PID != s.Peer.PID {
			t.Errorf("%s record's peer %+v: want the pid without the ancestry", r.Type, r.Peer)
		}
	}
	code, shown, _ := auditCLI("audit", "show", "--log", d.AuditLog, p.ID)
	if code != 0 || !strings.Contains(shown, `ancestry:`) || !strings.Contains(shown, `cl\x1b[2Jaud`) || strings.Contains(shown, "\x1b") ||
		!strings.Contains(shown, "walk ended: session leader") {
		t.Errorf("audit show (%d):\n%s", code, shown)
	}
	if code, v, _ := auditCLI("audit", "verify", "--log", d.AuditLog); code != 0 {
		t.Errorf("audit verify (%d):\n%s", code, v)
	}
}
