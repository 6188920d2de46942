package daemon

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
)

// hashOf returns the hash the page shows for request id of daemon link.
func hashOf(t *testing.T, body string, link int, id string) string {
	t.Helper()
	attr := `data-daemon="` + strconv.Itoa(link) + `" data-id="` + id + `" data-hash="`
	i := strings.Index(body, attr)
	if i < 0 {
		t.Fatalf("the page does not show request %s of daemon %d:\n%s", id, link, body)
	}
	i += len(attr)
	return body[i : i+64]
}

// decide decides request id of daemon link with key, as the page does:
// begin, sign the statement, finish; it returns the finish's answer, or
// begin's when begin is refused.
func (r *rig) decide(key *passkeytest.Key, link int, id, hash string, choice approval.Choice) (int, map[string]any) {
	r.t.Helper()
	code, begin := r.post("/api/decide/begin", map[string]any{"daemon": link, "id": id, "hash": hash, "decision": choice})
	if code != 200 {
		return code, begin
	}
	var st approval.Statement
	sb, _ := json.Marshal(begin["statement"])
	if err := json.Unmarshal(sb, &st); err != nil {
		r.t.Fatal(err)
	}
	sig, err := key.Sign(st)
	if err != nil {
		r.t.Fatal(err)
	}
	return r.post("/api/decide/finish", map[string]any{"nonce": st.Nonce, "assertion": assertionBody(sig.Assertion)})
}

// TestWebTwoDaemons: one web approver serves two daemons, each of which
// has a request with the same id. The page shows both, each labelled with
// its daemon (escaped); a decision on one reaches only the daemon that
// showed it, and the other's request still waits until decided there.
func TestWebTwoDaemons(t *testing.T) {
	r := newRigOf(t, "alice", "alice")
	res0 := ask(r.daemons[0].broker, "same", "on zero", "echo", "zero")
	res1 := ask(r.daemons[1].broker, "same", "on one", "echo", "one")
	r.signIn()
	r.waitPage(`data-daemon="1" data-id="same"`)
	body := r.waitPage(`data-daemon="0" data-id="same"`)
	for _, want := range []string{`<span class="label">host0</span>`, `<span class="label">host1</span>`, `<span class="from">host0</span>`, `id="r-0-same"`, `id="r-1-same"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not show %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "<b>approver") {
		t.Error("a daemon's name reaches the page as HTML")
	}
	h0, h1 := hashOf(t, body, 0, "same"), hashOf(t, body, 1, "same")
	// Daemon 1's hash with daemon 0: the request there is another one.
	if code, out := r.decide(r.key, 0, "same", h1, approval.AllowOnce); code != http.StatusConflict {
		t.Fatalf("daemon 1's request decided on daemon 0: %d %v, want 409", code, out)
	}
	if code, out := r.decide(r.key, 1, "same", h1, approval.AllowOnce); code != 200 {
		t.Fatalf("allow on daemon 1: %d %v", code, out)
	}
	if got := <-res1; got.err != nil || got.d.Verdict != approval.Allow || got.d.Signed == nil {
		t.Fatalf("daemon 1: %+v %v, want allowed, signed", got.d, got.err)
	}
	if n := r.daemons[0].broker.Waiting(); n != 1 {
		t.Fatalf("daemon 0 has %d requests waiting after daemon 1's was allowed, want its own still waiting", n)
	}
	if code, out := r.decide(r.key, 0, "same", h0, approval.DenyOnce); code != 200 {
		t.Fatalf("deny on daemon 0: %d %v", code, out)
	}
	if got := <-res0; got.err != nil || got.d.Verdict != approval.Deny {
		t.Fatalf("daemon 0: %+v %v, want denied", got.d, got.err)
	}
	for _, bad := range []any{-1, 2, "0", nil} {
		if code, _ := r.post("/api/decide/begin", map[string]any{"daemon": bad, "id": "same", "hash": h0, "decision": "deny"}); code == 200 {
			t.Errorf("decide begin for daemon %v: 200", bad)
		}
	}
}

// TestWebDaemonLost: when one daemon's channel ends, the page says it is
// disconnected and to restart the web approver, and still serves the
// other.
func TestWebDaemonLost(t *testing.T) {
	r := newRigOf(t, "alice", "alice")
	res1 := ask(r.daemons[1].broker, "r1", "on one", "true")
	r.signIn()
	r.waitPage(`data-daemon="1" data-id="r1"`)
	_ = r.daemons[0].conn.Close()
	body := r.waitPage("restart the web approver to reconnect")
	if !strings.Contains(body, `<span class="label">host0</span>`) {
		t.Errorf("the lost daemon is not named:\n%s", body)
	}
	if code, out := r.decide(r.key, 1, "r1", hashOf(t, body, 1, "r1"), approval.AllowOnce); code != 200 {
		t.Fatalf("allow on the daemon left: %d %v", code, out)
	}
	if got := <-res1; got.d.Verdict != approval.Allow {
		t.Fatalf("daemon 1: %+v", got.d)
	}
}

// TestWebDaemonUnreachableAtStart: a daemon the web approver could not
// reach at start is listed as disconnected, and the other is served.
func TestWebDaemonUnreachableAtStart(t *testing.T) {
	r := newRigOf(t, "down", "alice")
	_ = ask(r.daemons[1].broker, "r1", "on one", "true")
	r.signIn()
	body := r.waitPage(`data-daemon="1" data-id="r1"`)
	if !strings.Contains(body, "ssh root@h0</span>: <span class=\"state\">disconnected (connection refused): restart the web approver") {
		t.Fatalf("the daemon not reached is not listed as disconnected:\n%s", body)
	}
	if code, _ := r.decide(r.key, 0, "r1", hashOf(t, body, 1, "r1"), approval.DenyOnce); code != http.StatusConflict {
		t.Fatalf("decision on the daemon not reached: %d, want 409", code)
	}
}

// TestWebPasskeyEnrolledAndRevoked: the web approver reads no passkey
// itself: a passkey enrolled on a daemon after the web approver started
// signs in once the daemon sent it; revoked, its browser is signed out and
// cannot decide, and it cannot sign in again.
func TestWebPasskeyEnrolledAndRevoked(t *testing.T) {
	r := newRigOf(t, "")
	if code, _ := r.trySignIn(r.key); code != http.StatusForbidden {
		t.Fatalf("sign-in with a passkey no daemon knows: %d, want 403", code)
	}
	en, err := r.key.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	r.daemons[0].keys.set(en)
	r.signIn()
	_ = ask(r.broker, "late", "enrolled late", "true")
	body := r.waitPage(`data-id="late"`)
	hash := hashOf(t, body, 0, "late")
	r.daemons[0].keys.set()
	r.waitPage(`sign in with your passkey first`)
	if code, out := r.decide(r.key, 0, "late", hash, approval.AllowOnce); code != http.StatusUnauthorized {
		t.Fatalf("decision after the revocation: %d %v, want 401", code, out)
	}
	if code, _ := r.trySignIn(r.key); code != http.StatusForbidden {
		t.Fatalf("sign-in with the revoked passkey: %d, want 403", code)
	}
	if r.broker.Waiting() != 1 {
		t.Fatal("the request did not wait on")
	}
}

// TestWebOnlyDaemonsThatKnowThePasskey: a signed-in person sees the
// requests of the daemons that know their passkey and no other; and a
// daemon that sends another's credential id with a public key of its own
// signs in a browser that sees that daemon's requests only.
func TestWebOnlyDaemonsThatKnowThePasskey(t *testing.T) {
	r := newRigOf(t, "alice", "")
	_ = ask(r.daemons[0].broker, "known", "alice's daemon", "true")
	_ = ask(r.daemons[1].broker, "unknown", "another's daemon", "true")
	r.signIn()
	r.waitPage(`data-id="known"`)
	body := r.waitPage("does not know your passkey")
	if strings.Contains(body, `data-id="unknown"`) {
		t.Fatalf("the page shows a request of a daemon that does not know the passkey:\n%s", body)
	}
	if code, _ := r.decide(r.key, 1, "unknown", strings.Repeat("0", 64), approval.DenyOnce); code != http.StatusConflict {
		t.Fatalf("decision on a daemon that does not know the passkey: %d, want 409", code)
	}

	// Daemon 1 names alice's credential with mallory's key.
	mallory, err := passkeytest.New("mallory", "localhost", r.origin)
	if err != nil {
		t.Fatal(err)
	}
	mallory.ID, mallory.UserID = r.key.ID, r.key.UserID
	me, err := mallory.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	r.daemons[1].keys.set(me)
	m := newClient(r)
	m.signInWith(mallory)
	body = m.waitPage(`data-id="unknown"`)
	if strings.Contains(body, `data-id="known"`) {
		t.Fatalf("a key daemon 1 made up for alice's credential shows daemon 0's requests:\n%s", body)
	}
	// alice, signed in with her own key, still sees daemon 0's only.
	body = r.waitPage(`data-id="known"`)
	if strings.Contains(body, `data-id="unknown"`) {
		t.Fatalf("alice sees the requests of a daemon that knows another key under her credential id:\n%s", body)
	}
}

// newClient returns r with a browser of its own (no cookie).
func newClient(r *rig) *rig {
	c := *r
	c.http = newBrowserClient()
	return &c
}
