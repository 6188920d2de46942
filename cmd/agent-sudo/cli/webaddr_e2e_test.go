package cli

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/account"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// squatScript tries to listen on each address:port of its arguments and
// prints, per address, "ADDR listening" or "ADDR refused ERRNO".
const squatScript = `
import socket, sys
port = int(sys.argv[1])
for a in sys.argv[2:]:
    fam = socket.AF_INET6 if ":" in a else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    try:
        s.bind((a, port))
        s.listen(1)
        print(a, "listening")
    except OSError as e:
        print(a, "refused", e.errno)
    s.close()
`

// squat runs squatScript as nobody, an unprivileged local user as an
// agent is, on port of every loopback and wildcard address, and fails the
// test for each one it could listen on.
func squat(t *testing.T, port, when string) {
	t.Helper()
	// The system's, which every user may run (a pyenv shim in root's
	// PATH may not be).
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Skip("needs /usr/bin/python3, to listen as another user (the full run installs it)")
	}
	uid, err := account.UID("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	gid, err := userGID("nobody")
	if err != nil {
		t.Skipf("no group of nobody: %v", err)
	}
	cmd := exec.Command(python, "-c", squatScript, port, "127.0.0.1", "::1", "0.0.0.0", "::")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: the squatter as nobody: %v\n%s", when, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 {
		t.Fatalf("%s: the squatter printed %q, want 4 lines", when, out)
	}
	for _, l := range lines {
		if !strings.HasSuffix(l, " refused 13") { // EACCES: only root may
			t.Errorf("%s: nobody on port %s: %s, want refused by the kernel (13, EACCES)", when, port, l)
		}
	}
}

// answers reports whether an HTTP server answers GET / at addr.
func answers(t *testing.T, addr string) bool {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return true
}

// TestE2EWebAddressNoUserCanTake: the web approver and the enrolment
// (the real binary) listen only on a port below
// net.ipv4.ip_unprivileged_port_start, which the kernel lets only root
// take, and on every address the host name resolves to (localhost: both
// 127.0.0.1 and ::1), so that an agent can listen on none of them, not
// on [::1] beside them (where ssh's -L and Chromium go first) nor on any
// address before they start. Any other port is refused, saying why; an
// address already taken is named and the web approver does not start.
func TestE2EWebAddressNoUserCanTake(t *testing.T) {
	testenv.NeedsRoot(t)
	_, cli := daemontest.Binaries(t)
	d := daemontest.Start(t, daemontest.Config{})
	keys := filepath.Join(t.TempDir(), "passkeys")

	unprivileged := testenv.FreePort(t)
	taken := testenv.FreePrivilegedPort(t)
	ln, err := net.Listen("tcp", "[::1]:"+taken) // as root: only root can
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"web approver, unprivileged port", []string{"approve", "--web", "localhost:" + unprivileged, "--no-tls", "--approver-socket", d.ApproverSocket, "--user", "nobody"},
			exitUsage, "agent-sudo: approve --web: --web localhost:" + unprivileged + ": port " + unprivileged + ": any local user may listen on a port from 1024 up"},
		{"enrolment, unprivileged port", []string{"approve", "web", "enroll", "alice", "--web", "localhost:" + unprivileged, "--no-tls", "--passkeys", keys, "--user", "nobody"},
			exitUsage, "agent-sudo: approve web enroll: --web localhost:" + unprivileged + ": port " + unprivileged + ": any local user may listen on a port from 1024 up"},
		{"web approver, [::1] taken", []string{"approve", "--web", "localhost:" + taken, "--no-tls", "--approver-socket", d.ApproverSocket, "--user", "nobody"},
			exitUnavailable, "agent-sudo: approve --web: [::1]:" + taken + " (an address of localhost) is in use"},
		{"enrolment, [::1] taken", []string{"approve", "web", "enroll", "alice", "--web", "localhost:" + taken, "--no-tls", "--passkeys", keys, "--user", "nobody"},
			exitUnavailable, "agent-sudo: approve web enroll: [::1]:" + taken + " (an address of localhost) is in use"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, cli, tc.args...)
		cmd.Env = daemontest.RaceEnv(os.Environ())
		out, err := cmd.CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.code || !strings.HasPrefix(string(out), tc.want) {
			t.Errorf("%s: %v, printed %q; want status %d and %q...", tc.name, err, out, tc.code, tc.want)
		}
	}

	// Before the web approver starts, and while it runs, nobody can
	// listen on its port on any address.
	port := testenv.FreePrivilegedPort(t)
	squat(t, port, "before the web approver starts")
	startWebApprover(t, cli, "web approver for ", "--web", "localhost:"+port, "--no-tls", "--approver-socket", d.ApproverSocket, "--user", "nobody")
	for _, a := range []string{"127.0.0.1:" + port, "[::1]:" + port} {
		if !answers(t, a) {
			t.Errorf("the web approver on localhost:%s does not answer on %s", port, a)
		}
	}
	squat(t, port, "while the web approver runs")

	ePort := testenv.FreePrivilegedPort(t)
	squat(t, ePort, "before the enrolment starts")
	startEnrol(t, cli, "http://localhost:"+ePort, "█", "alice", "--web", "localhost:"+ePort, "--no-tls", "--passkeys", keys, "--user", "nobody")
	for _, a := range []string{"127.0.0.1:" + ePort, "[::1]:" + ePort} {
		if !answers(t, a) {
			t.Errorf("the enrolment on localhost:%s does not answer on %s", ePort, a)
		}
	}
	squat(t, ePort, "while the enrolment runs")
}
