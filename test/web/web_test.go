// Package web tests the web approver in a real browser: Debian's chromium,
// driven by playwright-core (pinned in package-lock.json) through
// driver.mjs, with the DevTools WebAuthn virtual authenticator standing in
// for the phone's passkey. make web-test installs playwright-core and runs
// them; without it (AGENT_SUDO_TEST_NODE_PATH unset) they skip.
package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/browsertest"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
)

func TestMain(m *testing.M) { daemontest.Main(m) }

// rig is a daemon that asks for everything, a passkey directory, the
// passkey "alice" enrolled by a browser through the enrolment link, and
// the web approver for the daemon, signed in as alice in that browser.
type rig struct {
	d *daemontest.Daemon
	// d2 is a second daemon the web approver serves, with the same
	// passkeys.
	d2     *daemontest.Daemon
	keys   string
	cli    string
	origin string
	b      *browsertest.Browser
	webPID int
	// webUID is agent-sudo-web's, the web approver's and the enrolment
	// page's default --user.
	webUID uint32
}

func setup(t *testing.T) *rig {
	t.Helper()
	return setupFor(t, true)
}

// setupFor is setup with a web approver that serves the second daemon too
// when both is set, the first alone otherwise.
func setupFor(t *testing.T, both bool) *rig {
	t.Helper()
	b := browsertest.Start(t, "driver.mjs", false)
	daemontest.RequireRoot(t)
	keys := passkeytest.Dir(t)
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "90s", Extra: fmt.Sprintf("passkeys = %q", keys), Rules: `
[[rule]]
name = "two people"
action = "ask"
match = ["echo", "two-person", "**"]
approvals = 2
`})
	d2 := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "90s", Extra: fmt.Sprintf("passkeys = %q", keys)})
	_, cli := daemontest.Binaries(t)
	port := testenv.FreePrivilegedPort(t)
	addr := "localhost:" + port
	r := &rig{d: d, d2: d2, keys: keys, cli: cli, origin: "http://" + addr, b: b, webUID: testenv.WebUser(t)}

	// Enrolment, at the "root terminal": a one-time link. alice's passkey
	// is the main page's authenticator, bob's the "bob" page's.
	b.Do(map[string]any{"op": "new", "page": "bob"})
	var link string
	for _, who := range []struct{ name, page string }{{"alice", "main"}, {"bob", "bob"}} {
		enrol := exec.Command(cli, "approve", "web", "enroll", who.name, "--web", addr, "--no-tls", "--passkeys", keys)
		enrol.Env = daemontest.RaceEnv(os.Environ())
		eout, err := enrol.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		enrol.Stderr = os.Stderr
		if err := enrol.Start(); err != nil {
			t.Fatal(err)
		}
		el := browsertest.Lines(eout)
		link = strings.TrimSpace(browsertest.ReadUntil(t, el, r.origin+"/enroll/"))
		b.Do(map[string]any{"op": "goto", "page": who.page, "url": link})
		b.Do(map[string]any{"op": "click", "page": who.page, "selector": "#enroll"})
		b.Do(map[string]any{"op": "waitText", "page": who.page, "selector": "#status", "text": "Enrolled: " + who.name})
		browsertest.ReadUntil(t, el, "enrolled "+who.name)
		if err := enrol.Wait(); err != nil {
			t.Fatalf("approve web enroll %s: %v", who.name, err)
		}
	}
	// The link was for one use.
	b.Do(map[string]any{"op": "new", "page": "late", "bare": true})
	if m := b.Try(map[string]any{"op": "goto", "page": "late", "url": link}); m["ok"] == true {
		t.Fatal("the enrolment link still works after its use")
	}

	args := []string{"approve", "--web", addr, "--no-tls", "--approver-socket", d.ApproverSocket}
	if both {
		args = append(args, "--approver-socket", d2.ApproverSocket)
	}
	r.webPID = startWebApprover(t, cli, args...)
	b.Do(map[string]any{"op": "goto", "url": r.origin + "/"})
	b.Do(map[string]any{"op": "click", "selector": "#signin"})
	b.Do(map[string]any{"op": "waitText", "selector": "#approver", "text": "alice"})
	b.Do(map[string]any{"op": "goto", "page": "bob", "url": r.origin + "/"})
	b.Do(map[string]any{"op": "click", "page": "bob", "selector": "#signin"})
	b.Do(map[string]any{"op": "waitText", "page": "bob", "selector": "#approver", "text": "bob"})
	return r
}

func (r *rig) ask(id, reason string, argv ...string) <-chan *proto.Response {
	return r.askOn(r.d, id, reason, argv...)
}

func (r *rig) askOn(d *daemontest.Daemon, id, reason string, argv ...string) <-chan *proto.Response {
	return r.askCtx(context.Background(), d, id, reason, argv...)
}

// askCtx asks d as an agent does until ctx ends, when the agent gives up
// (and the daemon drops the request).
func (r *rig) askCtx(ctx context.Context, d *daemontest.Daemon, id, reason string, argv ...string) <-chan *proto.Response {
	ch := make(chan *proto.Response, 1)
	go func() {
		req := &proto.Request{ID: id, Session: "web", Host: "h", Reason: reason, Pipeline: [][]string{argv}, Time: time.Now()}
		resp, err := client.New(d.Socket).Run(ctx, req)
		if err != nil {
			resp = &proto.Response{Status: "client-error", Message: err.Error()}
		}
		ch <- resp
	}()
	return ch
}

// sel is the selector of request id's section.
func sel(id string) string { return "section.request[data-id='" + id + "']" }

func TestWebApprover(t *testing.T) {
	r := setup(t)
	b := r.b

	t.Run("allow runs the command and audit verify checks the signature", func(t *testing.T) {
		done := r.ask("web-1", "list the files", "echo", "allowed on the web")
		b.Do(map[string]any{"op": "wait", "selector": sel("web-1")})
		b.Do(map[string]any{"op": "hold", "selector": sel("web-1") + " button.allow"})
		b.Do(map[string]any{"op": "waitText", "selector": "#status", "text": "Allowed: web-1"})
		resp := <-done
		if resp.Status != proto.StatusOK || string(resp.Stdout) != "allowed on the web\n" {
			t.Fatalf("response %+v", resp)
		}
		out, err := exec.Command(r.cli, "audit", "verify", "--log", r.d.AuditLog, "--passkeys", r.keys).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "signed decisions: 1, every signature verified") {
			t.Fatalf("audit verify: %v\n%s", err, out)
		}
		var by, recorded string
		for _, rec := range r.d.AuditRecords("web-1") {
			if rec.Decision != nil && rec.Decision.Signed != nil {
				by, recorded = rec.Decision.Signed.Approver, rec.Decision.By
			}
		}
		if by != "alice" {
			t.Fatalf("the decision record's signer is %q, want alice", by)
		}
		// Recorded as where the human decided, not the relay's terminal.
		host, _ := os.Hostname()
		if want := `passkey "alice" on the web approver of ` + host; recorded != want {
			t.Errorf("the decision record says it was decided by %q, want %q", recorded, want)
		}
	})

	t.Run("phone: the first screen of a request at 390x844", func(t *testing.T) { phoneFirstScreen(t, r) })

	t.Run("a replayed assertion is refused", func(t *testing.T) {
		done := r.ask("web-2", "replay me", "echo", "two")
		b.Do(map[string]any{"op": "wait", "selector": sel("web-2")})
		b.Do(map[string]any{"op": "capture", "path": "/api/decide/finish"})
		b.Do(map[string]any{"op": "hold", "selector": sel("web-2") + " button.allow"})
		b.Do(map[string]any{"op": "waitText", "selector": "#status", "text": "Allowed: web-2"})
		b.Do(map[string]any{"op": "uncapture", "path": "/api/decide/finish"})
		<-done
		body := b.Do(map[string]any{"op": "captured", "path": "/api/decide/finish"})["body"]
		if body == nil {
			t.Fatal("no decision was captured")
		}
		m := b.Do(map[string]any{"op": "post", "path": "/api/decide/finish", "body": body})
		if m["status"] == float64(200) {
			t.Fatalf("the replayed decision was taken: %v", m)
		}
	})

	t.Run("an assertion made for another request is refused", func(t *testing.T) {
		doneA := r.ask("web-3", "first", "echo", "three")
		doneB := r.ask("web-4", "second", "echo", "four")
		b.Do(map[string]any{"op": "wait", "selector": sel("web-4")})
		b.Do(map[string]any{"op": "wait", "selector": sel("web-3")})
		// Keep each signed decision from the server, as a hostile relay
		// would.
		b.Do(map[string]any{"op": "capture", "path": "/api/decide/finish", "abort": true})
		b.Do(map[string]any{"op": "hold", "selector": sel("web-3") + " button.allow"})
		b.Do(map[string]any{"op": "waitText", "selector": "#status", "text": "Not decided"})
		var a map[string]any
		_ = json.Unmarshal([]byte(b.Do(map[string]any{"op": "captured", "path": "/api/decide/finish"})["body"].(string)), &a)
		b.Do(map[string]any{"op": "hold", "selector": sel("web-4") + " button.allow"})
		b.Do(map[string]any{"op": "waitText", "selector": "#status", "text": "Not decided"})
		var bb map[string]any
		_ = json.Unmarshal([]byte(b.Do(map[string]any{"op": "captured", "path": "/api/decide/finish"})["body"].(string)), &bb)
		b.Do(map[string]any{"op": "uncapture", "path": "/api/decide/finish"})
		if a["nonce"] == bb["nonce"] {
			t.Fatal("both decisions were captured as one")
		}
		// web-3's assertion sent as the decision on web-4.
		forged, _ := json.Marshal(map[string]any{"nonce": bb["nonce"], "assertion": a["assertion"]})
		m := b.Do(map[string]any{"op": "post", "path": "/api/decide/finish", "body": string(forged)})
		if m["status"] == float64(200) || !strings.Contains(m["text"].(string), "signed decision refused") {
			t.Fatalf("web-3's assertion for web-4: %v, want refused by the daemon", m)
		}
		// Both still wait; deny them on the page.
		for _, id := range []string{"web-3", "web-4"} {
			b.Do(map[string]any{"op": "wait", "selector": sel(id)})
			b.Do(map[string]any{"op": "click", "selector": sel(id) + " button.deny"})
			b.Do(map[string]any{"op": "waitText", "selector": "#status", "text": "Denied: " + id})
		}
		if ra, rb := <-doneA, <-doneB; ra.Status != proto.StatusDenied || rb.Status != proto.StatusDenied {
			t.Fatalf("web-3 %s, web-4 %s: want both denied", ra.Status, rb.Status)
		}
	})

	t.Run("two daemons: each decision reaches the daemon that showed the request", func(t *testing.T) {
		done1 := r.ask("web-two", "on the first", "echo", "first")
		done2 := r.askOn(r.d2, "web-two", "on the second", "echo", "second")
		on := func(link int) string {
			return fmt.Sprintf("section.request[data-daemon='%d'][data-id='web-two']", link)
		}
		b.Do(map[string]any{"op": "wait", "selector": on(0)})
		b.Do(map[string]any{"op": "wait", "selector": on(1)})
		b.Do(map[string]any{"op": "waitText", "selector": on(1) + " h2", "text": r.d2.ApproverSocket})
		b.Do(map[string]any{"op": "hold", "selector": on(1) + " button.allow"})
		b.Do(map[string]any{"op": "waitText", "selector": "#status", "text": "Allowed: web-two"})
		if resp := <-done2; resp.Status != proto.StatusOK || string(resp.Stdout) != "second\n" {
			t.Fatalf("the second daemon's response %+v", resp)
		}
		// The page reloads once the allowed request has left; deny on the
		// reloaded page, so that the reload cannot cut the decision short.
		b.Do(map[string]any{"op": "wait", "selector": on(1), "state": "detached"})
		b.Do(map[string]any{"op": "wait", "selector": "body[data-ready='1'] " + on(0)})
		b.Do(map[string]any{"op": "click", "selector": on(0) + " button.deny"})
		b.Do(map[string]any{"op": "waitText", "selector": "#status", "text": "Denied: web-two"})
		if resp := <-done1; resp.Status != proto.StatusDenied {
			t.Fatalf("the first daemon's response %+v, want denied", resp)
		}
	})

	t.Run("HTML and script from the agent render inert", func(t *testing.T) {
		reason := `<script>alert(1)</script><img src=x onerror=alert(2)>`
		done := r.ask("web-xss", reason, "echo", `"><svg onload=alert(3)>`, "<iframe src=javascript:alert(4)>")
		b.Do(map[string]any{"op": "wait", "selector": sel("web-xss")})
		text := b.Do(map[string]any{"op": "text", "selector": sel("web-xss") + " .reason"})["text"].(string)
		if !strings.Contains(text, reason) {
			t.Errorf("the reason shows as %q, want the text %q", text, reason)
		}
		n := b.Do(map[string]any{"op": "count", "selector": sel("web-xss") + " script, " + sel("web-xss") + " img, " + sel("web-xss") + " svg, " + sel("web-xss") + " iframe"})["count"]
		if n != float64(0) {
			t.Errorf("%v elements from the agent's text are on the page", n)
		}
		if d := b.Do(map[string]any{"op": "dialogs"})["dialogs"].([]any); len(d) != 0 {
			t.Errorf("the agent's script ran: %v", d)
		}
		b.Do(map[string]any{"op": "click", "selector": sel("web-xss") + " button.deny"})
		b.Do(map[string]any{"op": "waitText", "selector": "#status", "text": "Denied: web-xss"})
		<-done
	})

	t.Run("the two-person rule waits for the second approver", func(t *testing.T) {
		done := r.ask("web-2p", "dangerous", "echo", "two-person", "ran")
		b.Do(map[string]any{"op": "wait", "selector": sel("web-2p")})
		b.Do(map[string]any{"op": "waitText", "selector": sel("web-2p"), "text": "NEEDS 2 DIFFERENT PEOPLE: 0 of 2 approvals so far"})
		b.Do(map[string]any{"op": "hold", "selector": sel("web-2p") + " button.allow"})
		b.Do(map[string]any{"op": "waitText", "selector": "#status", "text": "Waiting for another person: web-2p"})
		b.Do(map[string]any{"op": "waitText", "selector": receipt("web-2p") + " .outcome", "text": "Your allow counted; waiting for another person"})
		// Still waiting: a console connecting now is shown it.
		c := daemontest.Dial(t, r.d.ApproverSocket)
		if p := c.Pending("web-2p"); p.Request.Approvals != 2 {
			t.Fatalf("pending %+v: want the request, needing two", p.Request)
		}
		// alice's page, reloaded on the daemon's approved message, shows
		// her allow counted and offers her no second one (the daemon
		// would refuse the same person twice).
		oneOfTwo := `1 of 2 approvals · waiting for another person · allowed by passkey "alice"`
		b.Do(map[string]any{"op": "waitText", "selector": sel("web-2p"), "text": oneOfTwo})
		b.Do(map[string]any{"op": "waitText", "selector": sel("web-2p"), "text": "your allow counted"})
		if n := b.Do(map[string]any{"op": "count", "selector": sel("web-2p") + " button.allow"})["count"]; n != float64(0) {
			t.Errorf("alice's page offers her a second allow (%v buttons)", n)
		}
		b.Do(map[string]any{"op": "wait", "page": "bob", "selector": sel("web-2p")})
		b.Do(map[string]any{"op": "waitText", "page": "bob", "selector": sel("web-2p"), "text": oneOfTwo})
		b.Do(map[string]any{"op": "hold", "page": "bob", "selector": sel("web-2p") + " button.allow"})
		b.Do(map[string]any{"op": "waitText", "page": "bob", "selector": "#status", "text": "Allowed: web-2p"})
		// alice's receipt learns how the request ended: bob allowed it.
		b.Do(map[string]any{"op": "waitText", "selector": receipt("web-2p") + " .outcome", "text": `Allowed by you and passkey "bob" on the web approver of `})
		b.Do(map[string]any{"op": "waitText", "selector": receipt("web-2p") + " .outcome", "text": " — ran, exit 0"})
		if resp := <-done; resp.Status != proto.StatusOK || string(resp.Stdout) != "two-person ran\n" {
			t.Fatalf("response %+v", resp)
		}
		var first, last string
		for _, rec := range r.d.AuditRecords("web-2p") {
			if d := rec.Decision; d != nil {
				if len(d.Approvals) == 1 && d.Approvals[0].Signed != nil {
					first = d.Approvals[0].Signed.Approver
				}
				if d.Signed != nil {
					last = d.Signed.Approver
				}
			}
		}
		if first != "alice" || last != "bob" {
			t.Fatalf("the decision record shows %q then %q, want alice then bob", first, last)
		}
		out, err := exec.Command(r.cli, "audit", "verify", "--log", r.d.AuditLog, "--passkeys", r.keys).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "every signature verified") {
			t.Fatalf("audit verify: %v\n%s", err, out)
		}
	})

	t.Run("a local agent reaches the port and cannot approve or enrol", func(t *testing.T) {
		// The agent: a local user in the socket group, with curl.
		group, _ := daemontest.AddGroup(t, "webagent")
		agent := daemontest.AddUser(t, "webagent", group)
		done := r.ask("web-6", "an agent tries", "echo", "six")
		b.Do(map[string]any{"op": "wait", "selector": sel("web-6")})
		curl := func(args ...string) string {
			t.Helper()
			out, _ := agent.Command("curl", append([]string{"-q", "-sS", "-m", "10", "-w", " %{http_code}"}, args...)...).CombinedOutput()
			return string(out)
		}
		if out := curl(r.origin + "/"); strings.Contains(out, "web-6") || !strings.Contains(out, "signin") {
			t.Errorf("the page as the agent sees it shows the request, or no sign-in: %s", out)
		}
		// It can forge the Origin header (it is not a browser) and still
		// has no session, nor a way to make one.
		hdr := []string{"-H", "Origin: " + r.origin, "-H", "Content-Type: application/json"}
		if out := curl(append(hdr, "-d", `{"id":"web-6","hash":"x","decision":"allow_once"}`, r.origin+"/api/decide/begin")...); !strings.HasSuffix(out, " 401") {
			t.Errorf("decide begin as the agent: %s, want 401", out)
		}
		if out := curl(append(hdr, "-d", `{"challenge":"AAAA","assertion":{"id":"AAAA"}}`, r.origin+"/api/login/finish")...); !strings.HasSuffix(out, " 403") {
			t.Errorf("sign-in with a made-up assertion as the agent: %s, want 403", out)
		}
		if out := curl(r.origin + "/enroll/guess"); !strings.HasSuffix(out, " 404") {
			t.Errorf("an enrolment link guessed by the agent: %s, want 404 (nothing enrols)", out)
		}
		if out := curl("--unix-socket", r.d.ApproverSocket, "http://x/"); !strings.Contains(out, "not allowed") && !strings.Contains(out, "Permission denied") && !strings.Contains(out, "Couldn't connect") {
			t.Errorf("the approver socket as the agent: %s, want refused", out)
		}
		// The web approver runs as agent-sudo-web, a user of its own, not
		// dumpable: the agent cannot read its memory (its sessions, its
		// TLS key) through /proc.
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.webPID))
		if err != nil || !strings.Contains(string(st), fmt.Sprintf("\nUid:\t%d\t%d\t%d\t%d\n", r.webUID, r.webUID, r.webUID, r.webUID)) {
			t.Errorf("the web approver's ids: %v\n%s", err, st)
		}
		if out, err := agent.Command("cat", fmt.Sprintf("/proc/%d/environ", r.webPID)).CombinedOutput(); err == nil {
			t.Errorf("the agent read the web approver's environment: %q", out)
		}
		b.Do(map[string]any{"op": "click", "selector": sel("web-6") + " button.deny"})
		b.Do(map[string]any{"op": "waitText", "selector": "#status", "text": "Denied: web-6"})
		if resp := <-done; resp.Status != proto.StatusDenied {
			t.Fatalf("web-6: %s, want denied by the human", resp.Status)
		}
	})

	t.Run("requests coming and going keep a waiting request's allow usable", func(t *testing.T) {
		// An agent churning requests changes the list every moment; the
		// page updates it in place, and a request's allow guard runs from
		// when that request first appeared, not from the last change.
		done := r.ask("web-stay", "stays while others come and go", "echo", "stayed")
		allow := sel("web-stay") + " button.allow"
		b.Do(map[string]any{"op": "wait", "selector": allow + "[data-ready='1']:not([disabled])"})
		b.Do(map[string]any{"op": "watch", "selector": allow})
		const churn = 6
		for i := range churn {
			id := fmt.Sprintf("web-churn-%d", i)
			ctx, cancel := context.WithCancel(context.Background())
			gone := r.askCtx(ctx, r.d, id, "churn", "echo", "churn")
			b.Do(map[string]any{"op": "wait", "selector": sel(id)})
			cancel()
			<-gone
			b.Do(map[string]any{"op": "wait", "selector": sel(id), "state": "detached"})
		}
		w := b.Do(map[string]any{"op": "watched"})
		if w["installed"] != true || w["broken"] == true {
			t.Fatalf("the waiting request's allow did not stay usable while requests came and went: %v (a reload ends the watch)", w)
		}
		if n, _ := w["versions"].(float64); n < 2*churn {
			t.Fatalf("the list changed %v times, want at least %d", w["versions"], 2*churn)
		}
		b.Do(map[string]any{"op": "hold", "selector": allow})
		b.Do(map[string]any{"op": "waitText", "selector": "#status", "text": "Allowed: web-stay"})
		if resp := <-done; resp.Status != proto.StatusOK || string(resp.Stdout) != "stayed\n" {
			t.Fatalf("web-stay: %+v", resp)
		}
	})

	t.Run("a page on another port of localhost gets no session", func(t *testing.T) {
		// The agent serves a page on another port of localhost and the
		// human opens it in the browser signed in to the web approver: it
		// is sent no cookie (cookies ignore ports), and finds no session in
		// its storage.
		var mu sync.Mutex
		var cookies []string
		agentPage := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			mu.Lock()
			cookies = append(cookies, req.Header.Values("Cookie")...)
			mu.Unlock()
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<!doctype html><html><body data-ready='1'>the agent's page</body></html>")
		}))
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		agentPage.Listener = ln
		agentPage.Start()
		defer agentPage.Close()
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		b.Do(map[string]any{"op": "goto", "url": "http://localhost:" + port + "/"})
		if v := b.Do(map[string]any{"op": "storage", "key": "agent-sudo-session"})["value"]; v != nil {
			t.Errorf("the agent's page reads the session from its storage: %v", v)
		}
		mu.Lock()
		got := cookies
		mu.Unlock()
		if len(got) != 0 {
			t.Errorf("the agent's page on port %s was sent the cookies %q, want none", port, got)
		}
		// Back on the web approver, the page is signed out: the session was
		// in the old page's memory only, never in the origin's storage,
		// which a page served later at the same origin could read (an
		// agent holding the tunnel's local port while it is down).
		b.Do(map[string]any{"op": "goto", "url": r.origin + "/"})
		b.Do(map[string]any{"op": "wait", "selector": "#signin"})
		if st := b.Do(map[string]any{"op": "storage", "key": "agent-sudo-session"}); st["value"] != nil || len(st["keys"].([]any)) != 0 {
			t.Errorf("the web approver's origin keeps %v in its storage, want nothing", st)
		}
		b.Do(map[string]any{"op": "click", "selector": "#signin"})
		b.Do(map[string]any{"op": "waitText", "selector": "#approver", "text": "alice"})
	})

	t.Run("a browser without an enrolled passkey cannot decide", func(t *testing.T) {
		done := r.ask("web-5", "no passkey here", "echo", "five")
		// A browser with a passkey authenticator of its own, on which no
		// passkey for this site was enrolled.
		b.Do(map[string]any{"op": "new", "page": "stranger"})
		b.Do(map[string]any{"op": "goto", "page": "stranger", "url": r.origin + "/"})
		if n := b.Do(map[string]any{"op": "count", "page": "stranger", "selector": "section.request"})["count"]; n != float64(0) {
			t.Fatalf("a browser that is not signed in sees %v requests", n)
		}
		b.Do(map[string]any{"op": "click", "page": "stranger", "selector": "#signin"})
		b.Do(map[string]any{"op": "waitText", "page": "stranger", "selector": "#status", "text": "Not signed in"})
		// In plain words, with how to enrol, and no address of the
		// WebAuthn specification (the browser's own NotAllowedError).
		st := b.Do(map[string]any{"op": "waitText", "page": "stranger", "selector": "#status",
			"text": "this device has no passkey for this approver"})["text"].(string)
		if !strings.Contains(st, "run `sudo agent-sudo approve web enroll NAME` on the server") || strings.Contains(st, "http") {
			t.Errorf("the sign-in error without a passkey says %q", st)
		}
		m := b.Do(map[string]any{"op": "post", "page": "stranger", "path": "/api/decide/begin",
			"body": `{"id":"web-5","hash":"00","decision":"allow_once"}`})
		if m["status"] != float64(401) {
			t.Fatalf("decide from a browser without a passkey: %v, want 401", m)
		}
		b.Do(map[string]any{"op": "wait", "selector": sel("web-5")})
		b.Do(map[string]any{"op": "click", "selector": sel("web-5") + " button.deny"})
		b.Do(map[string]any{"op": "waitText", "selector": "#status", "text": "Denied: web-5"})
		if resp := <-done; resp.Status != proto.StatusDenied {
			t.Fatalf("web-5: %s", resp.Status)
		}
	})

	t.Run("the title names the daemons' host", func(t *testing.T) {
		host, _ := os.Hostname()
		// Both daemons run on this host, so each is named with its socket.
		b.Do(map[string]any{"op": "waitText", "selector": "title", "text": "agent-sudo · " + host + " (" + r.d.ApproverSocket + ")"})
	})

	t.Run("a receipt stays after each decision, the last five kept", func(t *testing.T) {
		allowed := r.ask("web-r1", "receipt", "echo", "receipt one")
		b.Do(map[string]any{"op": "wait", "selector": sel("web-r1")})
		b.Do(map[string]any{"op": "hold", "selector": sel("web-r1") + " button.allow"})
		<-allowed
		// Once it ran, the daemon says how it ended.
		b.Do(map[string]any{"op": "waitText", "selector": receipt("web-r1") + " .outcome", "text": "Allowed — ran, exit 0"})
		b.Do(map[string]any{"op": "waitText", "selector": receipt("web-r1") + " .what", "text": "echo"})
		b.Do(map[string]any{"op": "waitText", "selector": receipt("web-r1") + " .detail", "text": "sudo agent-sudo audit show web-r1"})
		failed := r.ask("web-r0", "receipt", "false")
		b.Do(map[string]any{"op": "wait", "selector": sel("web-r0")})
		b.Do(map[string]any{"op": "hold", "selector": sel("web-r0") + " button.allow"})
		<-failed
		b.Do(map[string]any{"op": "waitText", "selector": receipt("web-r0") + " .outcome", "text": "Allowed — ran, exit 1"})
		b.Do(map[string]any{"op": "waitText", "selector": receipt("web-r1") + " .outcome", "text": "Allowed — ran, exit 0"})
		for i := 2; i <= 6; i++ {
			id := fmt.Sprintf("web-r%d", i)
			denied := r.ask(id, "receipt", "echo", "receipt", id)
			b.Do(map[string]any{"op": "wait", "selector": sel(id)})
			b.Do(map[string]any{"op": "click", "selector": sel(id) + " button.deny"})
			b.Do(map[string]any{"op": "waitText", "selector": "#receipt-list > li:first-child .outcome", "text": "Denied"})
			b.Do(map[string]any{"op": "wait", "selector": receipt(id)})
			<-denied
			// The list moved on (the request left it); the receipt stays.
			b.Do(map[string]any{"op": "wait", "selector": sel(id), "state": "detached"})
			b.Do(map[string]any{"op": "wait", "selector": receipt(id)})
		}
		if n := b.Do(map[string]any{"op": "count", "selector": "#receipt-list > li"})["count"]; n != float64(5) {
			t.Errorf("%v receipts kept, want the last 5", n)
		}
		if n := b.Do(map[string]any{"op": "count", "selector": receipt("web-r1")})["count"]; n != float64(0) {
			t.Errorf("the seventh decision back is still listed")
		}
	})

	t.Run("a page opened at another port is told the address to open", func(t *testing.T) {
		// An ssh tunnel on another local port than the enrolled one, as a
		// plain TCP forwarder.
		ln, err := net.Listen("tcp", "localhost:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go forward(ln, strings.TrimPrefix(r.origin, "http://"))
		other := "http://localhost:" + strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:")
		b.Do(map[string]any{"op": "new", "page": "tunnel"})
		b.Do(map[string]any{"op": "goto", "page": "tunnel", "url": other + "/"})
		txt := b.Do(map[string]any{"op": "waitText", "page": "tunnel", "selector": "#wrong-address",
			"text": "This page is open at " + other + ", but the approver's passkeys sign only for " + r.origin})["text"].(string)
		if !strings.Contains(txt, "Open "+r.origin+"/ instead") {
			t.Errorf("the page at the other port says %q", txt)
		}
		b.Do(map[string]any{"op": "wait", "page": "tunnel", "selector": "#signin-box", "state": "hidden"})
	})
}

// receipt is the selector of request id's receipt.
func receipt(id string) string { return "#receipt-list > li.receipt[data-id='" + id + "']" }

// forward copies each connection ln accepts to and from addr, until ln
// is closed.
func forward(ln net.Listener, addr string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer u.Close()
			go func() { _, _ = io.Copy(u, c) }()
			_, _ = io.Copy(c, u)
		}()
	}
}

// TestWebApproverGoneSaysReconnecting: when the web approver goes away (it
// exits when its daemon restarts, and its service starts it again), the
// signed-in page says "reconnecting…" in place of each daemon's
// "connected" and shows no request to decide; once a web approver answers
// at the address again, the page asks to sign in, saying it restarted, and
// a request is decided there as before (issue 33).
func TestWebApproverGoneSaysReconnecting(t *testing.T) {
	r := setup(t)
	b := r.b
	done := r.ask("gone-1", "before the restart", "echo", "one")
	b.Do(map[string]any{"op": "wait", "selector": sel("gone-1")})
	if err := syscall.Kill(r.webPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	b.Do(map[string]any{"op": "waitText", "selector": "#daemons", "text": "reconnecting…"})
	b.Do(map[string]any{"op": "waitText", "selector": "#status", "text": "reconnecting…"})
	if txt := b.Do(map[string]any{"op": "text", "selector": "#daemons"})["text"].(string); strings.Contains(strings.ReplaceAll(txt, "reconnecting…", ""), "connected") {
		t.Fatalf("with the web approver gone, the page still says connected: %q", txt)
	}
	if n := b.Do(map[string]any{"op": "count", "selector": "section.request"})["count"]; n != float64(0) {
		t.Fatalf("with the web approver gone, the page shows %v requests to decide", n)
	}

	startWebApprover(t, r.cli, "approve", "--web", strings.TrimPrefix(r.origin, "http://"), "--no-tls", "--approver-socket", r.d.ApproverSocket)
	b.Do(map[string]any{"op": "waitText", "selector": "#status", "text": "The web approver restarted: sign in again."})
	b.Do(map[string]any{"op": "click", "selector": "#signin"})
	b.Do(map[string]any{"op": "waitText", "selector": "#daemons", "text": "connected"})
	b.Do(map[string]any{"op": "hold", "selector": sel("gone-1") + " button.allow"})
	b.Do(map[string]any{"op": "waitText", "selector": "#status", "text": "Allowed: gone-1"})
	if resp := <-done; resp.Status != proto.StatusOK || string(resp.Stdout) != "one\n" {
		t.Fatalf("response %+v", resp)
	}
}

// startWebApprover runs the CLI cli with args (a web approver) until the
// test ends, waits until it says it serves, and returns its pid.
func startWebApprover(t *testing.T, cli string, args ...string) int {
	t.Helper()
	web := exec.Command(cli, args...)
	web.Env = daemontest.RaceEnv(os.Environ())
	wout, err := web.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	web.Stderr = os.Stderr
	if err := web.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = web.Process.Signal(os.Interrupt)
		_ = web.Wait()
	})
	browsertest.ReadUntil(t, browsertest.Lines(wout), "web approver for")
	return web.Process.Pid
}
