package daemon

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
	"github.com/agent-sudo/agent-sudo/internal/web"
	"github.com/agent-sudo/agent-sudo/proto"
)

// keyring is a daemon's passkeys directory as the approver channel sees it (an
// approval.KeySource): signed decisions are checked against its keys, and
// the web approver is sent their public part whenever they change.
type keyring struct {
	mu      sync.Mutex
	keys    []passkey.Enrolled
	changes int
}

func (k *keyring) Verify(s approval.Signed) (approval.Signer, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	name, err := passkey.VerifyWith(k.keys, s)
	if err != nil {
		return approval.Signer{}, err
	}
	for _, e := range k.keys {
		if e.Name == name {
			return approval.Signer{Name: name, Person: e.Person}, nil
		}
	}
	return approval.Signer{Name: name}, nil
}

func (k *keyring) PublicKeys() ([]approval.PublicKey, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []approval.PublicKey
	for _, e := range k.keys {
		out = append(out, passkey.Public(e))
	}
	return out, nil
}

func (k *keyring) KeysStamp() (string, time.Time, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return strconv.Itoa(k.changes), time.Time{}, nil
}

// set replaces the keys (an enrolment, a revocation).
func (k *keyring) set(keys ...passkey.Enrolled) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys = keys
	k.changes++
}

// webDaemon is one daemon of a rig: its broker, its passkeys and its end of
// the approver channel.
type webDaemon struct {
	broker *broker
	keys   *keyring
	conn   net.Conn
}

type rig struct {
	t       *testing.T
	broker  *broker
	daemons []*webDaemon
	srv     *httptest.Server
	origin  string
	key     *passkeytest.Key
	http    *http.Client
	// logs is what the web approver logged.
	logs *syncBuffer
}

// syncBuffer is a bytes.Buffer safe for the web approver's log and the
// test to use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// newRig serves a broker's approver channel (signed decisions checked
// against one enrolled software passkey) to a web approver behind an
// httptest server.
func newRig(t *testing.T) *rig {
	return newRigOf(t, "alice")
}

// newRigOf serves one approver channel per element of enrolled, each a
// broker of its own whose passkeys are alice's when the element names
// her, none when it is empty, to one web approver behind an httptest
// server; an element "down" is a daemon the web approver could not reach
// at start.
func newRigOf(t *testing.T, enrolled ...string) *rig {
	t.Helper()
	return newRigFrom(t, "", enrolled...)
}

// newRigFrom is newRigOf with a web approver that says, in its
// signed_only message, that it runs on host ("": it says nothing).
func newRigFrom(t *testing.T, host string, enrolled ...string) *rig {
	t.Helper()
	ts, origin, k, en := newWebServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	var served sync.WaitGroup
	r := &rig{t: t, srv: ts, origin: origin, key: k}
	var cfg web.Config
	for i, who := range enrolled {
		d := &webDaemon{broker: newBroker(time.Hour, nil), keys: &keyring{}}
		if who == "down" {
			// Not reachable at start.
			cfg.Daemons = append(cfg.Daemons, web.Daemon{Name: fmt.Sprintf("ssh root@h%d", i), Err: errors.New("connection refused")})
			r.daemons = append(r.daemons, d)
			continue
		}
		if who == "alice" {
			d.keys.set(en)
		}
		server, client := net.Pipe()
		d.conn = server
		ch := &approverChannel{Broker: d.broker, Host: fmt.Sprintf("host%d", i), Log: slog.New(slog.DiscardHandler),
			Signatures: &approval.Signatures{Verifier: d.keys, KeysPoll: 10 * time.Millisecond}}
		served.Go(func() { ch.Serve(ctx, server, approverConsole{By: "web relay"}) })
		c := approval.NewClient(client)
		if err := c.Send(approval.Message{Type: approval.MsgSignedOnly, DaemonHost: host}); err != nil {
			t.Fatal(err)
		}
		cfg.Daemons = append(cfg.Daemons, web.Daemon{Name: fmt.Sprintf("/run/d%d/<b>approver", i), Client: c})
		r.daemons = append(r.daemons, d)
		t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	}
	r.broker = r.daemons[0].broker
	cfg.Origin, cfg.RPID = origin, "localhost"
	r.logs = &syncBuffer{}
	cfg.Log = slog.New(slog.NewTextHandler(r.logs, nil))
	w, err := web.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		_ = w.Run(ctx)
	}()
	ts.Config.Handler = w.Handler()
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		cancel()
		served.Wait()
		<-ran
	})
	r.http = newBrowserClient()
	return r
}

// newBrowserClient returns a browser as the page's script is one: it
// keeps the session token a sign-in answers with and sends it in
// web.SessionHeader; it keeps no cookie.
func newBrowserClient() *http.Client {
	return passkeytest.SessionClient(0)
}

// post sends body as the page's script does (its origin, JSON).
func (r *rig) post(path string, body any) (int, map[string]any) {
	r.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", r.srv.URL+path, bytes.NewReader(b))
	req.Header.Set("Origin", r.origin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func assertionBody(a approval.Assertion) map[string]string {
	return map[string]string{"id": b64(a.CredentialID), "authenticatorData": b64(a.AuthenticatorData),
		"clientDataJSON": b64(a.ClientDataJSON), "signature": b64(a.Signature), "userHandle": b64(a.UserHandle)}
}

// trySignIn signs in with key and returns the answer's status.
func (r *rig) trySignIn(key *passkeytest.Key) (int, map[string]any) {
	r.t.Helper()
	code, begin := r.post("/api/login/begin", map[string]any{})
	if code != 200 {
		r.t.Fatalf("login begin: %d %v", code, begin)
	}
	ch := begin["challenge"].(string)
	sig, err := key.SignChallenge(approval.Statement{}, ch)
	if err != nil {
		r.t.Fatal(err)
	}
	return r.post("/api/login/finish", map[string]any{"challenge": ch, "assertion": assertionBody(sig.Assertion)})
}

// signIn signs in with alice's passkey, once a daemon has sent it (the
// feeds read the channels in their own goroutines, with no event the test
// can wait on: at most 600 tries 50ms apart, as waitPage).
func (r *rig) signIn() {
	r.t.Helper()
	r.signInWith(r.key)
}

func (r *rig) signInWith(key *passkeytest.Key) {
	r.t.Helper()
	var code int
	var out map[string]any
	for range 600 {
		if code, out = r.trySignIn(key); code == 200 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("login finish: %d %v", code, out)
}

func (r *rig) page() (string, http.Header) {
	r.t.Helper()
	resp, err := r.http.Get(r.srv.URL + "/api/page")
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.Header
}

// get returns the body and headers of GET path.
func (r *rig) get(path string) (string, http.Header) {
	r.t.Helper()
	resp, err := r.http.Get(r.srv.URL + path)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.Header
}

func ask(b *broker, id, reason string, argv ...string) <-chan askOutcome {
	out := make(chan askOutcome, 1)
	go func() {
		d, err := b.Ask(context.Background(), &approval.Pending{
			Request:  &proto.Request{ID: id, Session: "s1", Reason: reason, Pipeline: [][]string{argv}},
			Programs: []approval.Program{{Chain: []string{"/usr/bin/" + argv[0]}}}, RunAs: "root",
			Record: strings.Repeat("7", 64),
		})
		out <- askOutcome{d, err}
	}()
	return out
}

// waitPage reads the page until it shows want (the feed reads the channel
// in its own goroutine, with no event the test can wait on), for at most
// 600 reads 50ms apart: a bound a loaded machine does not reach, which
// only ends a test that would otherwise hang.
func (r *rig) waitPage(want string) string {
	r.t.Helper()
	var body string
	for range 600 {
		if body, _ = r.page(); strings.Contains(body, want) {
			return body
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.t.Fatalf("the page never showed %q:\n%s", want, body)
	return ""
}

// TestWebSignedAllow: a browser that is not signed in sees no request and
// cannot ask to decide; once signed in with its passkey it sees the
// request, with the agent's HTML and script as inert text, under a strict
// Content-Security-Policy; its signed allow runs the request, signed by
// alice; the same signed decision sent again is refused.
func TestWebSignedAllow(t *testing.T) {
	r := newRig(t)
	res := ask(r.broker, "w1", `<script>alert(1)</script><img src=x onerror=alert(2)>`, "echo", `"><b>bold</b>`)
	body, _ := r.page()
	if strings.Contains(body, "w1") || !strings.Contains(body, `sign in with your passkey first`) {
		t.Fatalf("the page shows a request before sign-in:\n%s", body)
	}
	body, hdr := r.get("/")
	if strings.Contains(body, "w1") || !strings.Contains(body, `id="signin"`) {
		t.Fatalf("the page's shell shows a request, or no sign-in:\n%s", body)
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
		t.Fatalf("Content-Security-Policy %q", csp)
	}
	if code, _ := r.post("/api/decide/begin", map[string]any{"daemon": 0, "id": "w1", "hash": "x", "decision": "allow_once"}); code != 401 {
		t.Fatalf("decide before sign-in: %d, want 401", code)
	}
	r.signIn()
	body = r.waitPage(`data-id="w1"`)
	for _, bad := range []string{"<script>alert", "<img", "<b>bold"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page carries the agent's %q as HTML", bad)
		}
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("the reason is not shown as text:\n%s", body)
	}
	if strings.Contains(body, "<script>") && !strings.Contains(body, `<script src="/static/app.js" defer></script>`) {
		t.Errorf("inline script on the page")
	}
	i := strings.Index(body, `data-hash="`) + len(`data-hash="`)
	hash := body[i : i+64]
	code, begin := r.post("/api/decide/begin", map[string]any{"daemon": 0, "id": "w1", "hash": hash, "decision": "allow_once"})
	if code != 200 {
		t.Fatalf("decide begin: %d %v", code, begin)
	}
	var st approval.Statement
	sb, _ := json.Marshal(begin["statement"])
	if err := json.Unmarshal(sb, &st); err != nil || st.Record != strings.Repeat("7", 64) || st.ID != "w1" || st.Decision != approval.AllowOnce {
		t.Fatalf("statement %+v %v, want w1's record, allow once", st, err)
	}
	sig, err := r.key.Sign(st)
	if err != nil {
		t.Fatal(err)
	}
	finish := map[string]any{"nonce": st.Nonce, "assertion": assertionBody(sig.Assertion)}
	if code, out := r.post("/api/decide/finish", finish); code != 200 {
		t.Fatalf("decide finish: %d %v", code, out)
	}
	got := <-res
	if got.err != nil || got.d.Verdict != approval.Allow || got.d.Signed == nil || got.d.Signed.Approver != "alice" {
		t.Fatalf("decision %+v %v, want allowed, signed by alice", got.d, got.err)
	}
	if code, _ := r.post("/api/decide/finish", finish); code == 200 {
		t.Fatal("the same signed decision was taken twice")
	}
}

// TestWebAssertionForAnotherRequest: a passkey's assertion over the
// statement for one request, sent as the decision on another, is refused
// by the daemon's check, and neither request is decided by it.
func TestWebAssertionForAnotherRequest(t *testing.T) {
	r := newRig(t)
	resA := ask(r.broker, "wa", "first", "true")
	_ = ask(r.broker, "wb", "second", "false")
	r.signIn()
	// The two requests reach the page in either order: wait for both.
	r.waitPage(`data-id="wa"`)
	body := r.waitPage(`data-id="wb"`)
	hashOf := func(id string) string {
		i := strings.Index(body, `data-id="`+id+`" data-hash="`) + len(`data-id="`+id+`" data-hash="`)
		return body[i : i+64]
	}
	codeA, beginA := r.post("/api/decide/begin", map[string]any{"daemon": 0, "id": "wa", "hash": hashOf("wa"), "decision": "allow_once"})
	codeB, beginB := r.post("/api/decide/begin", map[string]any{"daemon": 0, "id": "wb", "hash": hashOf("wb"), "decision": "allow_once"})
	if codeA != 200 || codeB != 200 {
		t.Fatalf("decide begin: A %d %v, B %d %v\npage:\n%s", codeA, beginA, codeB, beginB, body)
	}
	var stA, stB approval.Statement
	a, _ := json.Marshal(beginA["statement"])
	b, _ := json.Marshal(beginB["statement"])
	_ = json.Unmarshal(a, &stA)
	_ = json.Unmarshal(b, &stB)
	sigA, err := r.key.Sign(stA)
	if err != nil {
		t.Fatal(err)
	}
	code, out := r.post("/api/decide/finish", map[string]any{"nonce": stB.Nonce, "assertion": assertionBody(sigA.Assertion)})
	if code == 200 || !strings.Contains(out["error"].(string), "challenge") {
		t.Fatalf("A's assertion sent for B: %d %v, want refused for its challenge", code, out)
	}
	if r.broker.Waiting() != 2 {
		t.Fatalf("%d requests wait, want both", r.broker.Waiting())
	}
	// A's own assertion still decides A.
	if code, out := r.post("/api/decide/finish", map[string]any{"nonce": stA.Nonce, "assertion": assertionBody(sigA.Assertion)}); code != 200 {
		t.Fatalf("A's assertion for A: %d %v", code, out)
	}
	if got := <-resA; got.d.Verdict != approval.Allow {
		t.Fatalf("A: %+v", got.d)
	}
}

// TestWebRefusesOtherOrigins: a state-changing call from another origin
// (a page elsewhere that the phone's browser also has open) is refused.
func TestWebRefusesOtherOrigins(t *testing.T) {
	r := newRig(t)
	req, _ := http.NewRequest("POST", r.srv.URL+"/api/login/begin", strings.NewReader("{}"))
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin login begin: %d, want 403", resp.StatusCode)
	}
}

// TestWebSignInFloodAndForgedChallenge: anyone who reaches the port (a
// local agent) can ask for sign-in challenges; a thousand of them do not
// crowd out the human's sign-in, and a challenge the web approver did not
// make, even signed by an enrolled passkey, signs nobody in.
func TestWebSignInFloodAndForgedChallenge(t *testing.T) {
	r := newRig(t)
	for range 1000 {
		if code, _ := r.post("/api/login/begin", map[string]any{}); code != 200 {
			t.Fatalf("login begin under a flood: %d", code)
		}
	}
	forged := b64(bytes.Repeat([]byte{7}, 56))
	sig, err := r.key.SignChallenge(approval.Statement{}, forged)
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := r.post("/api/login/finish", map[string]any{"challenge": forged, "assertion": assertionBody(sig.Assertion)}); code != http.StatusForbidden {
		t.Fatalf("sign-in over a forged challenge: %d, want 403", code)
	}
	r.signIn()
}

// newWebServer is an unstarted httptest server for a web approver, its
// origin on localhost (the passkeys' relying party), and alice's software
// passkey for that origin, enrolled.
func newWebServer(t *testing.T) (*httptest.Server, string, *passkeytest.Key, passkey.Enrolled) {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	origin := "http://localhost:" + port
	k, err := passkeytest.New("alice", "localhost", origin)
	if err != nil {
		t.Fatal(err)
	}
	en, err := k.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	return ts, origin, k, en
}
