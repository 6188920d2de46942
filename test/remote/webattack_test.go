//go:build remote

package remote

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/browsertest"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
)

// The web approver's port on the host and the tunnel's port on the
// device that runs ssh, as docs/remote.md writes them.
const (
	docsWebPort   = "844"
	docsLocalPort = "8443"
)

// docsTunnels are the -L forwardings of docs/remote.md's tunnel: both
// addresses of localhost on the device that runs ssh, each forwarded on
// its own, to 127.0.0.1 (which only root can listen on at the port); and
// the same to localhost on the host, which sshd resolves to ::1 first
// (where the web approver listens as well), as the attack was reported.
var docsTunnels = [][]string{
	{"127.0.0.1:" + docsLocalPort + ":127.0.0.1:" + docsWebPort, "[::1]:" + docsLocalPort + ":127.0.0.1:" + docsWebPort},
	{"127.0.0.1:" + docsLocalPort + ":localhost:" + docsWebPort, "[::1]:" + docsLocalPort + ":localhost:" + docsWebPort},
}

// TestLoopbackSquatThroughTheDocsTunnelInChromium plays issue 31's
// findings 1 and 2 as they were reported, against the real programs: an
// agent on the host, a local user of its own, listens on [::1] at the web
// approver's port and relays what reaches it to the real page on
// 127.0.0.1, so that the phone's enrolment link, sign-in and allow reach
// it through sshd's forwarding (which, as Chromium, tries ::1 first for
// localhost: /etc/hosts is Debian's here). The enrolment and the web
// approver run as docs/remote.md says (`--web localhost:844 --no-tls
// --origin http://localhost:8443`), reached through a real sshd with each
// of the docs' tunnels (docsTunnels), and Debian's chromium with a
// WebAuthn virtual authenticator opens the enrolment link through it,
// enrols, signs in and holds allow on a request, which runs.
//
// The agent's tries to listen at the port, on 127.0.0.1, ::1, 0.0.0.0 and
// ::, before the enrolment, while it runs, before the web approver starts
// and while it runs, are each refused by the kernel (EACCES); its
// listener on [::1] never exists and accepts no connection. What the
// browser reached was the real page: the passkey file root wrote holds the
// virtual authenticator's credential for the browser's origin, and the
// audit log records the allow signed by that credential from that origin.
//
// It does not run in parallel with the other tests: it uses the docs'
// ports, which TestWebApproverThroughTheDocsTunnel uses too.
func TestLoopbackSquatThroughTheDocsTunnelInChromium(t *testing.T) {
	b := browsertest.Start(t, "../web/driver.mjs", true)
	_, cli := daemontest.Binaries(t)
	testenv.WebUser(t)
	// The agent: a local user of its own, whose processes are not the web
	// approver's (agent-sudo-web) nor root's.
	agent := daemontest.AddUser(t, "squatter")
	for i, forward := range docsTunnels {
		t.Run("ssh -L "+strings.Join(forward, " -L "), func(t *testing.T) {
			squatThroughTunnel(t, b, cli, agent, 2205+i, forward, fmt.Sprintf("tunnel%d", i))
		})
	}
}

// squatThroughTunnel is one case of
// TestLoopbackSquatThroughTheDocsTunnelInChromium: a daemon, an sshd on
// sshPort and the tunnel `ssh -N -L forward...`, the browser's page named
// page (a virtual authenticator of its own).
func squatThroughTunnel(t *testing.T, b *browsertest.Browser, cli string, agent *daemontest.User, sshPort int, forward []string, page string) {
	dir := tempDir(t)
	k := makeKeys(t, dir)
	const origin = "http://localhost:" + docsLocalPort
	keysDir := passkeytest.Dir(t)
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "90s", Hostname: "host-s", Extra: fmt.Sprintf("passkeys = %q", keysDir)})
	startSSHD(t, k, sshPort, filepath.Dir(cli), d.ApproverSocket)
	on := func(cmd map[string]any) map[string]any {
		t.Helper()
		cmd["page"] = page
		return b.Do(cmd)
	}

	probe := func(when string) {
		t.Helper()
		squatAs(t, &syscall.Credential{Uid: agent.UID, Gid: agent.GID, Groups: agent.Groups}, docsWebPort, when)
	}
	probe("before the enrolment")
	sq := startSquatter(t, agent)

	// The tunnel, as docs/remote.md writes it.
	startTunnel(t, k, sshPort, docsLocalPort, forward)

	// Enrolment at the root terminal, as docs/remote.md writes it; the
	// link opened in the browser, through the tunnel.
	enrol := exec.Command(cli, "approve", "web", "enroll", "alice", "--web", "localhost:"+docsWebPort, "--no-tls",
		"--origin", origin, "--passkeys", keysDir)
	enrol.Env = daemontest.RaceEnv(os.Environ())
	eout, err := enrol.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	enrolLog := &daemontest.Buffer{}
	enrol.Stderr = enrolLog
	if err := enrol.Start(); err != nil {
		t.Fatal(err)
	}
	enrolDone := make(chan error, 1)
	go func() { enrolDone <- enrol.Wait() }()
	t.Cleanup(func() {
		_ = enrol.Process.Kill()
		<-enrolDone
		if t.Failed() {
			t.Logf("the enrolment's stderr:\n%s", enrolLog.String())
		}
	})
	el := browsertest.Lines(eout)
	link := strings.TrimSpace(browsertest.ReadUntil(t, el, origin+"/enroll/"))
	probe("while the enrolment runs")
	on(map[string]any{"op": "goto", "url": link})
	on(map[string]any{"op": "click", "selector": "#enroll"})
	on(map[string]any{"op": "waitText", "selector": "#status", "text": "Enrolled: alice"})
	browsertest.ReadUntil(t, el, "enrolled alice")
	if err := <-enrolDone; err != nil {
		t.Fatalf("approve web enroll alice: %v", err)
	}
	enrolDone <- nil // for the cleanup

	// What the browser enrolled is what root stored: the virtual
	// authenticator's one credential, for localhost and the browser's
	// origin.
	var creds struct {
		Credentials []struct{ CredentialID, RPID string }
	}
	remarshal(t, on(map[string]any{"op": "credentials"}), &creds)
	if len(creds.Credentials) != 1 || creds.Credentials[0].RPID != "localhost" {
		t.Fatalf("the browser's authenticator holds %+v, want one passkey for localhost", creds.Credentials)
	}
	credID, err := base64.StdEncoding.DecodeString(creds.Credentials[0].CredentialID)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(keysDir, "alice.json"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 {
		t.Errorf("alice.json is owned by uid %d, want root", st.Uid)
	}
	enrolled, err := passkey.Store{Dir: keysDir}.List(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(enrolled) != 1 || enrolled[0].Name != "alice" || enrolled[0].RPID != "localhost" ||
		strings.Join(enrolled[0].Origins, " ") != origin || string(enrolled[0].Credential.ID) != string(credID) {
		t.Fatalf("the passkeys root stored: %+v; want alice's, for localhost and %s, with the browser's credential %x", enrolled, origin, credID)
	}

	// The web approver, as docs/remote.md writes it.
	probe("before the web approver starts")
	startWebApprover(t, cli, docsWebPort, origin, d.ApproverSocket)
	probe("while the web approver runs")

	// Signed in through the tunnel, the human holds allow on the request
	// the page shows, and it runs.
	on(map[string]any{"op": "goto", "url": origin + "/"})
	on(map[string]any{"op": "click", "selector": "#signin"})
	on(map[string]any{"op": "waitText", "selector": "#approver", "text": "alice"})
	id := fmt.Sprintf("squat-%d", time.Now().UnixNano())
	asked := d.Ask(t, &proto.Request{ID: id, Pipeline: [][]string{{"echo", "allowed through the tunnel"}}, Session: "web", Host: "h",
		Reason: "the human's request", Time: time.Now()})
	sel := "section.request[data-id='" + id + "']"
	on(map[string]any{"op": "wait", "selector": sel})
	on(map[string]any{"op": "hold", "selector": sel + " button.allow"})
	on(map[string]any{"op": "waitText", "selector": "#status", "text": "Allowed: " + id})
	if resp := asked.Wait(); resp.Status != proto.StatusOK || string(resp.Stdout) != "allowed through the tunnel\n" {
		t.Fatalf("the allowed request: %+v, want it run", resp)
	}

	// The audit log records the allow signed by the browser's passkey,
	// from the browser's origin.
	var signed bool
	for _, rec := range d.AuditRecords(id) {
		dec := rec.Decision
		if dec == nil || dec.Signed == nil {
			continue
		}
		signed = true
		var cd struct {
			Type   string `json:"type"`
			Origin string `json:"origin"`
		}
		if err := json.Unmarshal(dec.Signed.Assertion.ClientDataJSON, &cd); err != nil {
			t.Fatalf("the decision's client data: %v", err)
		}
		if dec.Signed.Approver != "alice" || string(dec.Signed.Assertion.CredentialID) != string(credID) ||
			cd.Type != "webauthn.get" || cd.Origin != origin || dec.Signed.Statement.Decision != approval.AllowOnce {
			t.Errorf("the audit log's decision on %s: approver %q, credential %x, client data %+v, decision %q; want alice's allow_once with credential %x from %s",
				id, dec.Signed.Approver, dec.Signed.Assertion.CredentialID, cd, dec.Signed.Statement.Decision, credID, origin)
		}
	}
	if !signed {
		t.Errorf("the audit log has no signed decision on %s: %+v", id, d.AuditRecords(id))
	}

	// The agent's listener never existed, and nothing reached it.
	if got := sq.stop(); len(got) != 0 {
		t.Errorf("the agent's listener on [::1]:%s accepted connections meant for the web approver and the enrolment page:\n%s",
			docsWebPort, strings.Join(got, "\n"))
	}
}

// remarshal decodes m, a driver's answer, into v.
func remarshal(t *testing.T, m map[string]any, v any) {
	t.Helper()
	j, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(j, v); err != nil {
		t.Fatalf("%s: %v", j, err)
	}
}

// squatterScript is the agent's listener: it listens on [::1]:PORT, says
// so (or the errno that refused it), and relays each connection to
// 127.0.0.1:PORT, the real page, printing the request line of each HTTP
// request it relays: the page keeps working, and the agent reads (and
// could answer) what the browser sends.
const squatterScript = `
import re, socket, sys, threading
port = int(sys.argv[1])
ln = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
try:
    ln.bind(("::1", port)); ln.listen(16)
except OSError as e:
    print("::1 refused %d" % e.errno, flush=True); sys.exit(0)
print("::1 listening", flush=True)
def pipe(a, b, from_browser):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            line = d.split(b"\r\n")[0]
            if from_browser and re.match(rb"[A-Z]+ /", line):
                print("request: " + line.decode("ascii", "replace"), flush=True)
            b.sendall(d)
    except OSError:
        pass
    finally:
        try: b.shutdown(socket.SHUT_WR)
        except OSError: pass
while True:
    c, _ = ln.accept()
    print("accepted a connection", flush=True)
    u = socket.create_connection(("127.0.0.1", port))
    threading.Thread(target=pipe, args=(c, u, True), daemon=True).start()
    threading.Thread(target=pipe, args=(u, c, False), daemon=True).start()
`

// squatter is the agent's listener running.
type squatter struct {
	cmd  *exec.Cmd
	out  *daemontest.Buffer
	done chan struct{}
}

// startSquatter starts squatterScript as agent on docsWebPort and waits
// until it says whether it listens.
func startSquatter(t *testing.T, agent *daemontest.User) *squatter {
	t.Helper()
	cmd := agent.Command("/usr/bin/python3", "-c", squatterScript, docsWebPort)
	cmd.Dir = "/"
	s := &squatter{cmd: cmd, out: &daemontest.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(func() { s.stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := s.out.Wait(ctx, "\n"); err != nil {
		t.Fatalf("the agent's listener said nothing: %v\n%s", err, out)
	}
	if l := s.out.String(); !strings.Contains(l, "::1 refused 13") {
		t.Errorf("the agent on [::1]:%s: %s, want refused by the kernel (13, EACCES)", docsWebPort, strings.TrimSpace(l))
	}
	return s
}

// stop ends the agent's listener and returns the connections it accepted.
func (s *squatter) stop() []string {
	_ = s.cmd.Process.Kill()
	<-s.done
	var got []string
	for _, l := range strings.Split(s.out.String(), "\n") {
		if strings.HasPrefix(l, "accepted") || strings.HasPrefix(l, "request: ") {
			got = append(got, l)
		}
	}
	return got
}

// startTunnel runs `ssh -N -o ExitOnForwardFailure=yes -L forward...
// root@127.0.0.1:port` with k's forwarding key until the test ends, and
// waits until it listens on both addresses of localhost at the local
// port local.
func startTunnel(t *testing.T, k *keys, port int, local string, forward []string) {
	t.Helper()
	args := tunnelArgs(k, port, forward)
	t.Logf("the tunnel: ssh %s", strings.Join(args, " "))
	tun := exec.Command("ssh", args...)
	tunLog := &daemontest.Buffer{}
	tun.Stdout, tun.Stderr = tunLog, tunLog
	if err := tun.Start(); err != nil {
		t.Fatal(err)
	}
	tunDone := make(chan struct{})
	go func() { _ = tun.Wait(); close(tunDone) }()
	t.Cleanup(func() {
		_ = tun.Process.Kill()
		<-tunDone
		if t.Failed() {
			t.Logf("ssh -L's log:\n%s", tunLog.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, addr := range []string{"127.0.0.1", "::1"} {
		if out, err := tunLog.Wait(ctx, "Local forwarding listening on "+addr+" port "+local); err != nil {
			t.Fatalf("the tunnel was not set up on %s: %v\n%s", addr, err, out)
		}
		// ssh says it listens; the test goes on once a connection is
		// taken there too (a run in CI was refused on ::1 right after
		// the line), and fails with ssh's log if it never is.
		for {
			c, err := (&net.Dialer{}).DialContext(ctx, "tcp", net.JoinHostPort(addr, local))
			if err == nil {
				_ = c.Close()
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("the tunnel listens on %s port %s, by its log, but takes no connection: %v\n%s", addr, local, err, tunLog.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// startWebApprover runs `agent-sudo approve --web localhost:port --no-tls
// --origin origin --approver-socket socket` (and extra) until the test
// ends, and waits until it serves; a failed test logs its output. It
// returns that output (its log).
func startWebApprover(t *testing.T, cli, port, origin, socket string, extra ...string) (log *daemontest.Buffer) {
	t.Helper()
	webLog := &daemontest.Buffer{}
	args := append([]string{"approve", "--web", "localhost:" + port, "--no-tls", "--origin", origin, "--approver-socket", socket}, extra...)
	wa := exec.Command(cli, args...)
	wa.Env = daemontest.RaceEnv(os.Environ())
	wa.Stdout, wa.Stderr = webLog, webLog
	if err := wa.Start(); err != nil {
		t.Fatal(err)
	}
	waDone := make(chan struct{})
	go func() { _ = wa.Wait(); close(waDone) }()
	t.Cleanup(func() {
		_ = wa.Process.Signal(os.Interrupt)
		<-waDone
		if t.Failed() {
			t.Logf("the web approver's log:\n%s", webLog.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := webLog.Wait(ctx, "web approver for "+socket+" at "+origin); err != nil {
		t.Fatalf("the web approver did not start: %v\n%s", err, out)
	}
	return webLog
}

// tunnelArgs are ssh's arguments for `ssh -N -o ExitOnForwardFailure=yes
// -L forward... root@127.0.0.1:port` with k's forwarding key.
func tunnelArgs(k *keys, port int, forward []string) []string {
	args := []string{"-v", "-N", "-T", "-o", "BatchMode=yes", "-o", "ExitOnForwardFailure=yes"}
	for _, o := range sshOptions(k, k.forward) {
		args = append(args, "-o", o)
	}
	for _, f := range forward {
		args = append(args, "-L", f)
	}
	return append(args, fmt.Sprintf("ssh://root@127.0.0.1:%d", port))
}
