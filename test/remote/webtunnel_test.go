//go:build remote

package remote

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
	"github.com/agent-sudo/agent-sudo/internal/web"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestWebApproverThroughTheDocsTunnel: docs/remote.md's ssh tunnel, as
// written, through a real sshd: the web approver started as the docs say
// (`approve --web localhost:844 --no-tls --origin http://localhost:8443`)
// holds 127.0.0.1:844 and [::1]:844, on which an unprivileged local user
// (nobody, as an agent) can listen on no address; `ssh -N -o
// ExitOnForwardFailure=yes -L 127.0.0.1:8443:127.0.0.1:844 -L
// '[::1]:8443:127.0.0.1:844' root@HOST` refuses to start while another
// user of its device holds [::1]:8443, then reaches it, and a browser at
// http://localhost:8443 (through ::1 and 127.0.0.1, as browsers try both)
// signs in with a passkey enrolled for that origin and allows a request,
// which runs. Through a tunnel on another local port the sign-in is
// refused with the address to open, and the web approver logs it.
func TestWebApproverThroughTheDocsTunnel(t *testing.T) {
	t.Parallel()
	_, cli := daemontest.Binaries(t)
	dir := tempDir(t)
	k := makeKeys(t, dir)
	const origin = "http://localhost:8443"
	alice, err := passkeytest.New("alice", "localhost", origin)
	if err != nil {
		t.Fatal(err)
	}
	keysDir := passkeytest.Dir(t)
	en, err := alice.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	if err := (passkey.Store{Dir: keysDir}).Save(en); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "60s", Hostname: "host-w", Extra: fmt.Sprintf("passkeys = %q", keysDir)})
	startSSHD(t, k, 2204, filepath.Dir(cli), d.ApproverSocket)

	// An agent on the host finds the port free before the web approver
	// starts: the kernel refuses it all the same.
	squatAsNobody(t, "844", "before the web approver starts")
	webLog := startWebApprover(t, cli, "844", origin, d.ApproverSocket, "--user", "nobody")
	squatAsNobody(t, "844", "while the web approver runs")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The tunnel, as docs/remote.md writes it: each address of localhost
	// forwarded on its own, so that ssh fails when it cannot hold one.
	args := tunnelArgs(k, 2204, []string{"127.0.0.1:8443:127.0.0.1:844", "[::1]:8443:127.0.0.1:844"})
	t.Logf("the tunnel: ssh %s", strings.Join(args, " "))

	// The device that runs ssh may have an agent too (here, this host,
	// as nobody): holding [::1]:8443 before the tunnel starts, it would be
	// sent what a browser opens at http://localhost:8443 (browsers try ::1
	// first), the enrolment link included, while ssh forwarded 127.0.0.1
	// alone. The docs' tunnel refuses to start instead.
	release := holdAsNobody(t, "::1", "8443")
	sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
	defer scancel()
	squatted := exec.CommandContext(sctx, "ssh", args...)
	if out, err := squatted.CombinedOutput(); err == nil || !strings.Contains(string(out), "Could not request local forwarding") {
		t.Fatalf("the docs' tunnel with [::1]:8443 held by another user: %v, want ssh to refuse to start:\n%s", err, out)
	}
	release()

	startTunnel(t, k, 2204, "8443", []string{"127.0.0.1:8443:127.0.0.1:844", "[::1]:8443:127.0.0.1:844"})

	for _, via := range []string{"[::1]:8443", "127.0.0.1:8443"} {
		b := &tunnelBrowser{t: t, base: "http://" + via, origin: origin}
		b.signIn(alice)
		id := fmt.Sprintf("tunnel-%d", time.Now().UnixNano())
		asked := d.Ask(t, &proto.Request{ID: id, Pipeline: [][]string{{"echo", "through the tunnel"}}, Session: "web", Host: "h",
			Reason: "through " + via, Time: time.Now()})
		hash := b.waitFor(id)
		b.allow(alice, id, hash)
		if resp := asked.Wait(); resp.Status != proto.StatusOK || string(resp.Stdout) != "through the tunnel\n" {
			t.Fatalf("through %s: %+v, want it run", via, resp)
		}
	}

	// The same tunnel on another local port than the enrolled one (issue
	// 33: the phone signed in, showed requests, and every decision failed
	// with "bad answer (403)", the web approver logging nothing). The
	// passkey signs only for http://localhost:8443, so the page there is
	// told, at sign-in, the address to open, and the web approver logs the
	// refusal.
	startTunnel(t, k, 2204, "8445", []string{"127.0.0.1:8445:127.0.0.1:844", "[::1]:8445:127.0.0.1:844"})
	other := &tunnelBrowser{t: t, base: "http://127.0.0.1:8445", origin: "http://localhost:8445"}
	code, out := other.do("POST", "/api/login/begin", map[string]any{})
	var refusal struct {
		Error string `json:"error"`
	}
	if code != http.StatusForbidden || json.Unmarshal(out, &refusal) != nil ||
		!strings.Contains(refusal.Error, "this page is open at http://localhost:8445, but its passkeys sign only for http://localhost:8443: open http://localhost:8443/ instead") {
		t.Fatalf("sign-in through a tunnel on another local port: %d %s, want the address to open", code, out)
	}
	if _, page := other.do("GET", "/", nil); !bytes.Contains(page, []byte(`data-origin="http://localhost:8443"`)) {
		t.Errorf("the page's shell does not carry the address its script tells the browser to open:\n%s", page)
	}
	lctx, lcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer lcancel()
	if out, err := webLog.Wait(lctx, "web: refused a call not from the page"); err != nil {
		t.Errorf("the web approver did not log the refusal: %v\n%s", err, out)
	}
}

// squatAsNobody tries, as nobody, to listen on port at every loopback
// and wildcard address (squatAs).
func squatAsNobody(t *testing.T, port, when string) {
	t.Helper()
	squatAs(t, &syscall.Credential{Uid: 65534, Gid: 65534}, port, when)
}

// squatAs tries, as cred, to listen on port at every loopback and
// wildcard address (with python3, as the full run installs it), letting
// each go at once, and fails the test for each one the kernel did not
// refuse with EACCES.
func squatAs(t *testing.T, cred *syscall.Credential, port, when string) {
	t.Helper()
	const script = `
import socket, sys
for a in sys.argv[2:]:
    s = socket.socket(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((a, int(sys.argv[1]))); s.listen(1); print(a, "listening")
    except OSError as e:
        print(a, "refused", e.errno)
`
	cmd := exec.Command("/usr/bin/python3", "-c", script, port, "127.0.0.1", "::1", "0.0.0.0", "::")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: python3 as uid %d: %v\n%s", when, cred.Uid, err, out)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !strings.HasSuffix(l, " refused 13") {
			t.Errorf("%s: uid %d on port %s: %s, want refused by the kernel (13, EACCES)", when, cred.Uid, port, l)
		}
	}
}

// holdAsNobody listens, as nobody (an agent on the device that runs ssh),
// on addr:port until release is called. It sets SO_REUSEADDR, as an agent
// would, so that connections of an earlier test at that port, waiting out
// TIME_WAIT, do not keep it from listening.
func holdAsNobody(t *testing.T, addr, port string) (release func()) {
	t.Helper()
	const script = `
import socket, sys
s = socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1); print("listening", flush=True)
sys.stdin.read()
`
	cmd := exec.Command("/usr/bin/python3", "-c", script, addr, port)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Dir = "/"
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &daemontest.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			_ = stdin.Close()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(release)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if o, err := out.Wait(ctx, "listening"); err != nil {
		t.Fatalf("nobody could not listen on [%s]:%s: %v\n%s", addr, port, err, o)
	}
	return release
}

// tunnelBrowser calls the web approver's API at base as its page's script
// does from origin, with its session in web.SessionHeader.
type tunnelBrowser struct {
	t            *testing.T
	base, origin string
	session      string
}

func (b *tunnelBrowser) do(method, path string, body any) (int, []byte) {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, b.base+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Origin", b.origin)
	req.Header.Set("Content-Type", "application/json")
	if b.session != "" {
		req.Header.Set(web.SessionHeader, b.session)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

func assertionJSON(a approval.Assertion) map[string]string {
	e := base64.RawURLEncoding.EncodeToString
	return map[string]string{"id": e(a.CredentialID), "authenticatorData": e(a.AuthenticatorData),
		"clientDataJSON": e(a.ClientDataJSON), "signature": e(a.Signature), "userHandle": e(a.UserHandle)}
}

// signIn signs in with k, once the web approver has its passkeys from the
// daemon (sent on its own time: at most 600 tries 50ms apart).
func (b *tunnelBrowser) signIn(k *passkeytest.Key) {
	b.t.Helper()
	var last []byte
	for range 600 {
		code, out := b.do("POST", "/api/login/begin", map[string]any{})
		var begin struct {
			Challenge string `json:"challenge"`
		}
		if code != 200 || json.Unmarshal(out, &begin) != nil {
			b.t.Fatalf("login begin through %s: %d %s", b.base, code, out)
		}
		sig, err := k.SignChallenge(approval.Statement{}, begin.Challenge)
		if err != nil {
			b.t.Fatal(err)
		}
		code, out = b.do("POST", "/api/login/finish", map[string]any{"challenge": begin.Challenge, "assertion": assertionJSON(sig.Assertion)})
		var done struct {
			Session string `json:"session"`
		}
		if code == 200 && json.Unmarshal(out, &done) == nil && done.Session != "" {
			b.session = done.Session
			return
		}
		last = out
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Fatalf("no sign-in through %s: %s", b.base, last)
}

// waitFor returns the hash of request id once the page shows it.
func (b *tunnelBrowser) waitFor(id string) string {
	b.t.Helper()
	re := regexp.MustCompile(`data-id="` + regexp.QuoteMeta(id) + `" data-hash="([0-9a-f]{64})"`)
	for range 600 {
		if _, page := b.do("GET", "/api/page", nil); re.Match(page) {
			return string(re.FindSubmatch(page)[1])
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Fatalf("the page through %s never showed %s", b.base, id)
	return ""
}

// allow allows request id with k's signature.
func (b *tunnelBrowser) allow(k *passkeytest.Key, id, hash string) {
	b.t.Helper()
	code, out := b.do("POST", "/api/decide/begin", map[string]any{"daemon": 0, "id": id, "hash": hash, "decision": approval.AllowOnce})
	var begin struct {
		Statement approval.Statement `json:"statement"`
	}
	if code != 200 || json.Unmarshal(out, &begin) != nil {
		b.t.Fatalf("decide begin through %s: %d %s", b.base, code, out)
	}
	sig, err := k.Sign(begin.Statement)
	if err != nil {
		b.t.Fatal(err)
	}
	if code, out := b.do("POST", "/api/decide/finish", map[string]any{"nonce": begin.Statement.Nonce, "assertion": assertionJSON(sig.Assertion)}); code != 200 {
		b.t.Fatalf("decide finish through %s: %d %s", b.base, code, out)
	}
}
