package daemon_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// consolePy is a minimal console: with a new pseudo-terminal owned by
// TTY_UID as its stdin, it connects to the approver socket, allows the
// first pending request and prints the daemon's answer.
const consolePy = `
import json, os, socket, sys
m, s = os.openpty()
os.fchown(s, int(os.environ["TTY_UID"]), -1)
os.dup2(s, 0)
c = socket.socket(socket.AF_UNIX)
c.connect(sys.argv[1])
f = c.makefile("rw")
for line in f:
    msg = json.loads(line)
    if msg["type"] == "pending":
        f.write(json.dumps({"type": "decide", "id": msg["id"], "hash": msg["hash"], "decision": "allow_once"}) + "\n")
        f.flush()
    elif msg["type"] == "result":
        print(line, end="")
        break
`

// noLoginUID is what the test's console prints when it cannot set its
// login uid.
const noLoginUID = "the login uid cannot be set here"

// TestE2EApproverIdentity: a decision names the person behind the console
// as the daemon read it from /proc: the console process's login uid and
// its terminal's owner (kernel facts), and SUDO_USER/SUDO_UID from its
// environment, marked as such. Other consoles see it in the resolved
// message, and the audit record has it, structured.
func TestE2EApproverIdentity(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3:", err)
	}
	u := daemontest.AddUser(t, "apw")
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "30s"})
	watcher := daemontest.Dial(t, d.ApproverSocket)

	// The console as sudo would start it for u, on a terminal u owns, in
	// a session u logged in to (loginuid).
	uid := strconv.FormatUint(uint64(u.UID), 10)
	// Where the login uid cannot be set (it is set already and the test
	// lacks CAP_AUDIT_CONTROL), the rest is still checked.
	console := exec.Command("/bin/sh", "-c", `echo "$TTY_UID" 2>/dev/null > /proc/self/loginuid || echo "`+noLoginUID+`"; exec python3 -c "$PY" "$SOCK"`)
	console.Env = []string{"PATH=/usr/bin:/bin", "TTY_UID=" + uid, "PY=" + consolePy, "SOCK=" + d.ApproverSocket,
		"SUDO_USER=" + u.Name, "SUDO_UID=" + uid}
	var out bytes.Buffer
	console.Stdout, console.Stderr = &out, &out
	done := d.Ask(t, &proto.Request{ID: "who-1", Pipeline: [][]string{{"true"}}, Privileged: true}).Done
	watcher.Pending("who-1")
	if err := console.Start(); err != nil {
		t.Fatal(err)
	}
	r := watcher.NextOf(approval.MsgResolved)
	if err := console.Wait(); err != nil {
		t.Fatalf("console: %v\n%s", err, out.String())
	}
	loginSet := !strings.Contains(out.String(), noLoginUID)
	if !loginSet {
		t.Logf("the login uid could not be set here; its checks are left out, the rest is checked")
	}
	if resp := <-done; resp.Status != proto.StatusOK {
		t.Fatalf("response %+v", resp)
	}
	who := fmt.Sprintf("%d(%s)", u.UID, u.Name)
	wants := []string{"console uid=0 tty=/dev/pts/", "tty_owner=" + who, "env: SUDO_USER=" + u.Name + " SUDO_UID=" + uid}
	if loginSet {
		wants = append(wants, "loginuid="+who)
	}
	for _, want := range wants {
		if !strings.Contains(r.By, want) {
			t.Errorf("resolved by %q lacks %q", r.By, want)
		}
	}

	recs := d.AuditRecords("who-1")
	decided := false
	for _, rec := range recs {
		if rec.Decision != nil {
			a := rec.Decision.Approver
			if rec.Decision.By != r.By || a == nil || loginSet && (a.LoginUID == nil || *a.LoginUID != u.UID) || a.TTYOwner == nil || *a.TTYOwner != u.UID ||
				a.SudoUser != u.Name || a.SudoUID != uid || !strings.HasPrefix(a.TTY, "/dev/pts/") {
				t.Errorf("decision record: by %q approver %+v", rec.Decision.By, a)
			}
			decided = true
		}
	}
	if !decided {
		t.Fatalf("no decision record in %+v", recs)
	}
	code, shown, _ := auditCLI("audit", "show", "--log", d.AuditLog, "who-1")
	if code != 0 || !strings.Contains(shown, "approver:") || loginSet && !strings.Contains(shown, "login uid "+uid) {
		t.Errorf("audit show (%d):\n%s", code, shown)
	}
}
