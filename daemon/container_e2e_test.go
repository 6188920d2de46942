package daemon_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// TestE2EContainerRequester: an agent in a user, pid and mount namespace of
// its own (`unshare --user --map-root-user --mount --pid --fork`, started by
// an ordinary user, as a rootless container is) reaches the daemon through
// the agent socket's directory bind-mounted inside. The console is shown the
// uid the kernel maps it to (the user's, not the 0 it has inside) with its
// uid inside, the namespaces that differ from the daemon's, its pid inside,
// its init and that init's cgroup; the audit log's request record holds the
// same, and `agent-sudo audit show` prints it.
func TestE2EContainerRequester(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare:", err)
	}
	group, _ := daemontest.AddGroup(t, "ctr")
	u := daemontest.AddUser(t, "ctu", group)
	d := daemontest.Start(t, daemontest.Config{SocketGroup: group, ApprovalTimeout: "30s"})
	c := daemontest.Dial(t, d.ApproverSocket)
	cli := d.PublicCLI()
	inside := filepath.Join(d.Dir, "inside")
	if err := os.Mkdir(inside, 0o755); err != nil {
		t.Fatal(err)
	}

	// In the new namespaces: bind-mount the socket's directory, then run
	// the CLI as a child of the namespace's init (the shell; "; true"
	// keeps it from exec'ing the CLI in its place).
	script := `mount --bind "$RUNDIR" "$INSIDE" && "$CLI" run --socket "$INSIDE/agent-sudo.sock" --json --reason container -- /usr/bin/true; true`
	cmd := u.Command("unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", "--mount-proc", "/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "RUNDIR=" + filepath.Dir(d.Socket), "INSIDE=" + inside, "CLI=" + cli}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	p := c.NextOf(approval.MsgPending)
	peer := p.Request.Peer
	ct := peer.Container
	if peer.UID != u.UID || ct == nil {
		t.Fatalf("peer uid %d container %+v: want uid %d (the user's, as the kernel maps it) and a container", peer.UID, ct, u.UID)
	}
	if ct.InnerUID == nil || *ct.InnerUID != 0 {
		t.Errorf("inner uid %v, want 0 (--map-root-user)", ct.InnerUID)
	}
	for _, ns := range []string{"user", "pid", "mnt"} {
		if ct.NS[ns] == 0 {
			t.Errorf("namespace %s not listed as different: %v", ns, ct.NS)
		}
	}
	own, err := os.Readlink("/proc/self/ns/user")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(own, "["+strconv.FormatUint(ct.NS["user"], 10)+"]") {
		t.Errorf("the container's user namespace %d is the daemon's (%s)", ct.NS["user"], own)
	}
	a := peer.Ancestry
	if ct.InnerPID < 2 || a == nil || len(a.Hops) < 2 || ct.InitPID != a.Hops[1].PID || a.Hops[1].Exe != "/usr/bin/dash" && a.Hops[1].Exe != "/usr/bin/bash" {
		t.Errorf("inner pid %d, init pid %d, ancestry %+v: want the CLI under the shell, the namespace's init (pid 1 inside)", ct.InnerPID, ct.InitPID, a)
	}
	if ct.Cgroup == "" {
		t.Errorf("cgroup %q", ct.Cgroup)
	}
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce})
	if r := c.Result(p.ID); !r.OK {
		t.Fatalf("decision: %+v", r)
	}
	err = cmd.Wait()
	waited = true
	if err != nil || !strings.Contains(out.String(), `"status":"ok"`) {
		t.Fatalf("the agent in the container: %v\n%s", err, out.String())
	}

	recs := d.AuditRecords(p.ID)
	if len(recs) == 0 || recs[0].Peer == nil || recs[0].Peer.Container == nil || recs[0].Peer.Container.InitPID != ct.InitPID ||
		recs[0].Peer.UID != u.UID {
		t.Fatalf("request record's peer: %+v", recs[0].Peer)
	}
	code, shown, _ := auditCLI("audit", "show", "--log", d.AuditLog, p.ID)
	if code != 0 || !strings.Contains(shown, "container:") || !strings.Contains(shown, "uid 0 inside") || !strings.Contains(shown, "user:[") {
		t.Errorf("audit show (%d):\n%s", code, shown)
	}
}
