package daemon

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
	"github.com/agent-sudo/agent-sudo/internal/web"
)

// TestWebSessionNotACookie: a sign-in sets no cookie (a cookie goes to
// every port of the host, so a page an agent serves on another port of
// localhost would be sent it); the session token is answered to the
// page's script, and only web.SessionHeader carries it: the same token as
// a cookie, under any name, shows nothing and decides nothing.
func TestWebSessionNotACookie(t *testing.T) {
	r := newRig(t)
	_ = ask(r.broker, "c1", "cookie", "true")
	// Sign in by hand, to see the answer's headers.
	var hdr http.Header
	var out map[string]any
	for range 600 {
		code, begin := r.post("/api/login/begin", map[string]any{})
		if code != 200 {
			t.Fatalf("login begin: %d %v", code, begin)
		}
		ch := begin["challenge"].(string)
		sig, err := r.key.SignChallenge(approval.Statement{}, ch)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(map[string]any{"challenge": ch, "assertion": assertionBody(sig.Assertion)})
		req, _ := http.NewRequest("POST", r.srv.URL+"/api/login/finish", bytes.NewReader(b))
		req.Header.Set("Origin", r.origin)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode == 200 {
			hdr = resp.Header
			if err := json.Unmarshal(body, &out); err != nil {
				t.Fatal(err)
			}
			break
		}
		time.Sleep(50 * time.Millisecond) // the daemon sends its passkeys on its own time
	}
	if hdr == nil {
		t.Fatal("never signed in")
	}
	if c := hdr.Values("Set-Cookie"); len(c) != 0 {
		t.Errorf("the sign-in sets cookies %q, want none", c)
	}
	tok, _ := out["session"].(string)
	if len(tok) < 40 {
		t.Fatalf("the sign-in answered %v, want a session token for the page's script", out)
	}
	get := func(path string, set func(*http.Request)) (int, string) {
		req, _ := http.NewRequest("GET", r.srv.URL+path, nil)
		set(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The feed reads the channel in its own goroutine: read the page with
	// the header until it shows the request (at most 600 reads, as waitPage),
	// so that the cookies below are refused a page that has it to show.
	var code int
	var body string
	for range 600 {
		if code, body = get("/api/page", func(req *http.Request) { req.Header.Set(web.SessionHeader, tok) }); code != 200 || strings.Contains(body, `data-id="c1"`) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code != 200 || !strings.Contains(body, `data-id="c1"`) {
		t.Errorf("the token in %s: %d %s, want the request shown", web.SessionHeader, code, body)
	}
	for _, name := range []string{"agent_sudo_session", web.SessionHeader, "session"} {
		code, body := get("/api/page", func(req *http.Request) { req.AddCookie(&http.Cookie{Name: name, Value: tok}) })
		if code != http.StatusUnauthorized || strings.Contains(body, "c1") {
			t.Errorf("the token as the cookie %s: %d %s, want 401 and nothing shown", name, code, body)
		}
		if code, _ := get("/api/state", func(req *http.Request) { req.AddCookie(&http.Cookie{Name: name, Value: tok}) }); code != http.StatusUnauthorized {
			t.Errorf("the state with the token as the cookie %s: %d, want 401", name, code)
		}
	}
	if code, body := get("/api/page", func(req *http.Request) { req.Header.Set(web.SessionHeader, tok+"x") }); code != http.StatusUnauthorized {
		t.Errorf("another token in %s: %d %s, want 401", web.SessionHeader, code, body)
	}
}

// TestWebStatementsPerSession: one signed-in browser asking for statement
// after statement (a flood, or a stolen session) keeps only its latest
// few, and never fills the table another browser's decision needs:
// another session's allow still runs. A statement is finished only by the
// session it was given to.
func TestWebStatementsPerSession(t *testing.T) {
	r := newRig(t)
	res := ask(r.broker, "s1", "crowded", "true")
	r.signIn()
	hash := hashOf(t, r.waitPage(`data-id="s1"`), 0, "s1")
	other := newClient(r)
	other.signIn()
	var first string
	for i := range 300 {
		code, begin := r.post("/api/decide/begin", map[string]any{"daemon": 0, "id": "s1", "hash": hash, "decision": "allow_once"})
		if code != 200 {
			t.Fatalf("the flooding browser's begin %d: %d %v, want its oldest dropped, not a refusal", i, code, begin)
		}
		if i == 0 {
			first = begin["statement"].(map[string]any)["nonce"].(string)
		}
	}
	// The flooding session's first statement was dropped to make room for
	// its later ones.
	sig, err := r.key.SignChallenge(approval.Statement{}, "AAAA")
	if err != nil {
		t.Fatal(err)
	}
	if code, out := r.post("/api/decide/finish", map[string]any{"nonce": first, "assertion": assertionBody(sig.Assertion)}); code != http.StatusForbidden {
		t.Errorf("the flooding browser's first statement after 300 more: %d %v, want 403 (dropped)", code, out)
	}
	// Another browser's statement cannot be finished by this one.
	code, begin := other.post("/api/decide/begin", map[string]any{"daemon": 0, "id": "s1", "hash": hash, "decision": "allow_once"})
	if code != 200 {
		t.Fatalf("the other browser's begin: %d %v, want 200", code, begin)
	}
	nonce := begin["statement"].(map[string]any)["nonce"].(string)
	if code, out := r.post("/api/decide/finish", map[string]any{"nonce": nonce, "assertion": assertionBody(sig.Assertion)}); code != http.StatusForbidden {
		t.Errorf("one browser finishing another's statement: %d %v, want 403", code, out)
	}
	if code, out := other.decide(r.key, 0, "s1", hash, approval.AllowOnce); code != 200 {
		t.Fatalf("the other browser's allow: %d %v", code, out)
	}
	if got := <-res; got.err != nil || got.d.Verdict != approval.Allow {
		t.Fatalf("s1: %+v %v, want allowed", got.d, got.err)
	}
}

// TestSessionHeaderOfTheTests: the tests' client (passkeytest.SessionClient)
// sends the session in the header the web approver reads.
func TestSessionHeaderOfTheTests(t *testing.T) {
	if passkeytest.SessionHeader != web.SessionHeader {
		t.Fatalf("passkeytest.SessionHeader is %q, web.SessionHeader %q", passkeytest.SessionHeader, web.SessionHeader)
	}
}
