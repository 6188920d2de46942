package daemon

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
)

// postFrom sends body as the page's script would from a page at origin.
func (r *rig) postFrom(origin, path string, body any) (int, map[string]any) {
	r.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", r.srv.URL+path, bytes.NewReader(b))
	req.Header.Set("Origin", origin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.http.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		r.t.Fatalf("POST %s from %s: the answer (%d) is not JSON: %v", path, origin, resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

// TestWebWrongAddress: the page opened at another port of the same host
// (an ssh tunnel on another local port than the one the passkey was
// enrolled for) is told, in plain words, the address to open, at sign-in
// and at any decision, and the web approver logs each refusal with its
// reason; every decision refused for any other reason is logged too. The
// origin checks are not weakened: nothing from the other address gets
// through.
func TestWebWrongAddress(t *testing.T) {
	r := newRig(t)
	other := "http://localhost:18445"
	if r.origin == other {
		other = "http://localhost:18446"
	}
	body, _ := r.get("/")
	if !strings.Contains(body, `data-origin="`+r.origin+`"`) {
		t.Fatalf("the page's shell does not carry its origin for the script to check:\n%s", body)
	}
	want := "this page is open at " + other + ", but its passkeys sign only for " + r.origin + ": open " + r.origin + "/ instead"
	for _, path := range []string{"/api/login/begin", "/api/login/finish", "/api/decide/begin", "/api/decide/finish"} {
		code, out := r.postFrom(other, path, map[string]any{})
		if code != http.StatusForbidden || !strings.Contains(out["error"].(string), want) {
			t.Errorf("%s from %s: %d %v, want 403 with %q", path, other, code, out, want)
		}
	}
	if logs := r.logs.String(); strings.Count(logs, `msg="web: refused a call not from the page"`) != 4 ||
		!strings.Contains(logs, `origin=`+other) {
		t.Errorf("the web approver's log does not have the four refusals with their origin:\n%s", logs)
	}
	// Another name of the host, or another site, is refused the same way
	// (another site's page cannot read the answer).
	for _, o := range []string{strings.Replace(r.origin, "localhost", "127.0.0.1", 1), "https://evil.example"} {
		if code, out := r.postFrom(o, "/api/login/begin", map[string]any{}); code != http.StatusForbidden ||
			!strings.Contains(out["error"].(string), "this page is open at "+o+", but its passkeys sign only for "+r.origin) {
			t.Errorf("%s: %d %v", o, code, out)
		}
	}

	r.signIn()
	code, out := r.post("/api/decide/begin", map[string]any{"daemon": 0, "id": "gone", "hash": "x", "decision": "deny"})
	if code != http.StatusConflict {
		t.Fatalf("decide on a request that does not wait: %d %v", code, out)
	}
	if logs := r.logs.String(); !strings.Contains(logs, `msg="web: decision refused" path=/api/decide/begin status=409 reason="this request no longer waits, or changed; reload"`) {
		t.Errorf("the refused decision is not in the log with its reason:\n%s", logs)
	}
}

// TestWebNotFound: an address the web approver does not serve, and an
// enrolment link opened after its enrolment ended (the web approver then
// answers on its port), say so in plain words with where to go, never a
// bare "404 page not found".
func TestWebNotFound(t *testing.T) {
	r := newRig(t)
	for _, c := range []struct{ path, want string }{
		{"/nothing", "There is nothing at this address. The web approver's page is " + r.origin + "/"},
		{"/enroll/abc", "This enrolment link no longer works: it was used already, it expired"},
		{"/enroll/abc", "run `sudo agent-sudo approve web enroll NAME` on the server again"},
	} {
		resp, err := r.http.Get(r.srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(b.String(), c.want) || strings.Contains(b.String(), "404 page not found") {
			t.Errorf("GET %s: %d %q, want 404 with %q", c.path, resp.StatusCode, b.String(), c.want)
		}
	}
}

// TestWebSignInUnknownPasskey: a passkey no daemon served knows (never
// enrolled here, or revoked) is refused at sign-in with why and how to
// enrol one.
func TestWebSignInUnknownPasskey(t *testing.T) {
	r := newRig(t)
	r.signIn() // alice's passkey has reached the web approver
	stranger, err := passkeytest.New("mallory", "localhost", r.origin)
	if err != nil {
		t.Fatal(err)
	}
	code, out := r.trySignIn(stranger)
	msg, _ := out["error"].(string)
	if code != http.StatusForbidden || !strings.Contains(msg, "not enrolled on any daemon served here") ||
		!strings.Contains(msg, "run `sudo agent-sudo approve web enroll NAME` on the server") {
		t.Fatalf("sign-in with an unknown passkey: %d %q", code, msg)
	}
}

// TestWebWrongAddressLongOrigin: a call with an Origin header far longer
// than any origin (anyone who reaches the port may send one, up to the
// server's header limit, with every request) is refused as any other from
// another address, but its answer and the web approver's log repeat only
// the first bytes of it, so that each such call cannot write many
// kilobytes to the log.
func TestWebWrongAddressLongOrigin(t *testing.T) {
	r := newRig(t)
	long := "http://" + strings.Repeat("a", 12<<10)
	before := len(r.logs.String())
	code, out := r.postFrom(long, "/api/login/begin", map[string]any{})
	msg, _ := out["error"].(string)
	if code != http.StatusForbidden || !strings.Contains(msg, "this page is open at http://aaa") || !strings.Contains(msg, "bytes)") {
		t.Fatalf("a call from a long origin: %d %q, want 403 naming the origin cut short", code, msg)
	}
	if len(msg) > 2<<10 {
		t.Errorf("the answer repeats %d bytes of the origin, want it cut short: %q", len(msg), msg)
	}
	logged := r.logs.String()[before:]
	if !strings.Contains(logged, `msg="web: refused a call not from the page"`) {
		t.Fatalf("the refusal is not logged:\n%s", logged)
	}
	if len(logged) > 2<<10 {
		t.Errorf("one refused call logged %d bytes, want the origin cut short:\n%.3000s", len(logged), logged)
	}
}
