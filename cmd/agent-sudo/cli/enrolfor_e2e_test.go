package cli

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestApproveWebEnrollForAnotherHost: --for an origin on another host
// than the link's is refused before anything listens: the passkey could
// never sign from it.
func TestApproveWebEnrollForAnotherHost(t *testing.T) {
	testenv.NeedsRoot(t)
	got := runCLI(context.Background(), nil, "approve", "web", "enroll", "alice", "--web", "localhost:1", "--no-tls",
		"--for", "https://build-01.example:8443", "--passkeys", filepath.Join(t.TempDir(), "passkeys"))
	want := "agent-sudo: approve web enroll: --for: the origin https://build-01.example:8443 is not on localhost, the host of the enrolment page"
	if got.code != exitUsage || !strings.HasPrefix(got.stderr, want) {
		t.Fatalf("enroll --for another host: exit %d, stderr %q; want %d and %q...", got.code, got.stderr, exitUsage, want)
	}
}

// TestE2EEnrolWhileTheWebApproverRuns runs the real agent-sudo and a real
// daemon: while the web approver serves on port B, enroll on port A of the
// same host --for B stores a passkey for B, into the daemon's passkeys
// directory; the running web approver learns of it from the daemon, and
// the passkey signs in there and its allow runs a request, with no restart.
func TestE2EEnrolWhileTheWebApproverRuns(t *testing.T) {
	daemontest.RequireRoot(t)
	dir := passkeytest.Dir(t)
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "60s", Extra: "passkeys = \"" + dir + "\""})
	_, cli := daemontest.Binaries(t)

	portB := testenv.FreePrivilegedPort(t)
	originB := "http://localhost:" + portB
	startWebApprover(t, cli, "web approver for ", "--web", "localhost:"+portB, "--no-tls", "--approver-socket", d.ApproverSocket, "--user", "nobody")

	portA := testenv.FreePrivilegedPort(t)
	originA := "http://localhost:" + portA
	enrol := startEnrol(t, cli, originA, "will sign from "+originB, "alice", "--web", "localhost:"+portA, "--no-tls", "--passkeys", dir,
		"--user", "nobody", "--for", originB)
	k, err := passkeytest.New("alice", "localhost", originA)
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowserE2E(t, originB)
	if code := b.trySignIn(k); code != http.StatusForbidden {
		t.Fatalf("sign-in before the enrolment: %d, want 403", code)
	}
	reg, err := k.Register(enrol.post("/begin", []byte("{}")))
	if err != nil {
		t.Fatal(err)
	}
	enrol.post("/finish", reg)
	if printed, want := enrol.wait(), "for "+originB+"\n"; !strings.Contains(printed, "enrolled alice: credential") || !strings.HasSuffix(printed, want) {
		t.Fatalf("enroll printed:\n%s\nwant it enrolled for %s", printed, originB)
	}

	k.Origin = originB
	eventually(t, "alice signs in at the running web approver", func() bool { return b.trySignIn(k) == 200 })
	asked := d.Ask(t, &proto.Request{ID: "enrolled-late", Pipeline: [][]string{{"echo", "late"}}, Session: "s", Reason: "t", Time: time.Now()})
	var hash string
	eventually(t, "the request shows", func() bool { hash = b.shown()["0/enrolled-late"]; return hash != "" })
	if code, res := b.decide(k, 0, "enrolled-late", hash, approval.AllowOnce); code != 200 {
		t.Fatalf("allow: %d %v", code, res)
	}
	if resp := asked.Wait(); resp.Status != proto.StatusOK || string(resp.Stdout) != "late\n" {
		t.Fatalf("response %+v, want the command run", resp)
	}
}
