package daemon_test

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/procinfo"
)

// pinClientPy connects to the socket argv[2], says "connected" and its
// exe, waits for
// a line on stdin (the test saw the daemon pin it), then, by argv[1]:
// "exec" sends the request argv[3] without its newline and execs bash,
// which sends the newline on the inherited socket and prints the answer;
// "exit" forks a child that keeps the socket, and exits; the child waits
// until its parent is gone, sends the whole line and prints the answer.
const pinClientPy = `
import os, socket, sys, time
mode, path, req = sys.argv[1], sys.argv[2], sys.argv[3].encode()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(path)
print("connected " + os.readlink("/proc/self/exe"), flush=True)
sys.stdin.readline()
if mode == "exec":
    s.sendall(req)
    os.set_inheritable(s.fileno(), True)
    if s.fileno() != 3:
        os.dup2(s.fileno(), 3)
    os.execv("/bin/bash", ["bash", "-c", "printf '\\n' >&3; head -n 1 <&3"])
parent = os.getpid()
if os.fork() == 0:
    for _ in range(12000):
        if os.getppid() != parent:
            break
        time.sleep(0.005)
    s.sendall(req + b"\n")
    print(s.makefile().readline(), end="", flush=True)
    os._exit(0)
os._exit(0)
`

// waitPinned waits until the daemon holds a pidfd of pid (its fdinfo says
// "Pid:\t<pid>"): the connection was accepted and its peer pinned. There
// is no event to wait on, so it looks every 5 ms, for at most a minute.
func waitPinned(t *testing.T, d *daemontest.Daemon, pid int) {
	t.Helper()
	dir := filepath.Join("/proc", strconv.Itoa(d.Cmd.Process.Pid))
	want := "Pid:\t" + strconv.Itoa(pid) + "\n"
	for range 12000 {
		fds, _ := os.ReadDir(filepath.Join(dir, "fd"))
		for _, fd := range fds {
			if l, _ := os.Readlink(filepath.Join(dir, "fd", fd.Name())); !strings.Contains(l, "pidfd") {
				continue
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "fdinfo", fd.Name())); bytes.Contains(b, []byte(want)) {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("the daemon holds no pidfd of pid %d after a minute", pid)
}

// TestE2ERequesterPinnedAtAccept: the requester is pinned when its
// connection is accepted. A client that connects, then execs another
// program before the newline of its request, or exits after handing the
// socket to a child, is not shown as the kernel-verified requester: the
// ancestry the console gets, and the audit record, say what changed
// (procinfo.Ancestry.Changed; the console's rendering of it is
// console: TestRequesterChangedNotVerified).
func TestE2ERequesterPinnedAtAccept(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3:", err)
	}
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "30s"})
	c := daemontest.Dial(t, d.ApproverSocket)
	for _, tt := range []struct{ mode, want string }{
		{"exec", procinfo.ChangedExec + " (pid PID): was EXE, now /usr/bin/bash"},
		{"exit", procinfo.ChangedExited + " (pid PID, was EXE)"},
	} {
		id := "pin-" + tt.mode
		req := line(map[string]any{"id": id, "pipeline": [][]string{{"true"}}, "privileged": true, "reason": "pin", "session": "s", "host": "h"})
		cmd := exec.Command(python, "-c", pinClientPy, tt.mode, d.Socket, req)
		stdin, out := startPiped(t, cmd)
		l, err := out.ReadString('\n')
		exe, ok := strings.CutPrefix(strings.TrimSuffix(l, "\n"), "connected ")
		if !ok {
			t.Fatalf("%s client: %q, %v", tt.mode, l, err)
		}
		waitPinned(t, d, cmd.Process.Pid)
		if _, err := io.WriteString(stdin, "go\n"); err != nil {
			t.Fatal(err)
		}

		p := c.Pending(id)
		want := strings.NewReplacer("PID", strconv.Itoa(cmd.Process.Pid), "EXE", exe).Replace(tt.want)
		if a := p.Request.Peer.Ancestry; a == nil || a.Changed != want {
			t.Errorf("%s: ancestry shown %+v, want it marked %q", tt.mode, a, want)
		}
		c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.DenyOnce})
		if r := c.Result(p.ID); !r.OK {
			t.Fatalf("decision: %+v", r)
		}
		answer, _ := io.ReadAll(out)
		_ = cmd.Wait()
		if !bytes.Contains(answer, []byte(`"status":"denied"`)) {
			t.Errorf("%s client's answer %q, want denied", tt.mode, answer)
		}
		recs := d.AuditRecords(id)
		if len(recs) == 0 || recs[0].Peer == nil || recs[0].Peer.Ancestry == nil || recs[0].Peer.Ancestry.Changed != want {
			t.Errorf("%s: request record's peer %+v, want the ancestry marked %q", tt.mode, recs, want)
		}
		if code, shown, _ := auditCLI("audit", "show", "--log", d.AuditLog, id); code != 0 || !strings.Contains(shown, "NOT VERIFIED:   "+want+"; the processes above were read later") {
			t.Errorf("%s: audit show (%d) does not say %q:\n%s", tt.mode, code, want, shown)
		}
	}
	if code, v, _ := auditCLI("audit", "verify", "--log", d.AuditLog); code != 0 {
		t.Errorf("audit verify (%d):\n%s", code, v)
	}
}
