package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
)

// browserE2E is a browser of the web approver at origin, with a software
// passkey: it calls the page's API as the page's script does.
type browserE2E struct {
	t      *testing.T
	origin string
	http   *http.Client
}

func newBrowserE2E(t *testing.T, origin string) *browserE2E {
	return &browserE2E{t: t, origin: origin, http: passkeytest.SessionClient(60 * time.Second)}
}

func (b *browserE2E) post(path string, body any) (int, map[string]any) {
	b.t.Helper()
	j, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", b.origin+path, bytes.NewReader(j))
	req.Header.Set("Origin", b.origin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.http.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (b *browserE2E) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.http.Get(b.origin + path)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func assertionJSON(a approval.Assertion) map[string]string {
	e := base64.RawURLEncoding.EncodeToString
	return map[string]string{"id": e(a.CredentialID), "authenticatorData": e(a.AuthenticatorData),
		"clientDataJSON": e(a.ClientDataJSON), "signature": e(a.Signature), "userHandle": e(a.UserHandle)}
}

func (b *browserE2E) trySignIn(k *passkeytest.Key) int {
	b.t.Helper()
	code, begin := b.post("/api/login/begin", map[string]any{})
	if code != 200 {
		b.t.Fatalf("login begin: %d %v", code, begin)
	}
	ch := begin["challenge"].(string)
	sig, err := k.SignChallenge(approval.Statement{}, ch)
	if err != nil {
		b.t.Fatal(err)
	}
	code, _ = b.post("/api/login/finish", map[string]any{"challenge": ch, "assertion": assertionJSON(sig.Assertion)})
	return code
}

// eventually retries ok (the web approver learns of a daemon's passkeys
// and requests on its own time, with no event a test can wait on) at most
// 600 times 50ms apart: a bound a loaded machine does not reach.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for range 600 {
		if ok() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

// decide decides request id shown by daemon link with k's signature.
func (b *browserE2E) decide(k *passkeytest.Key, link int, id, hash string, choice approval.Choice) (int, map[string]any) {
	b.t.Helper()
	code, begin := b.post("/api/decide/begin", map[string]any{"daemon": link, "id": id, "hash": hash, "decision": choice})
	if code != 200 {
		return code, begin
	}
	var st approval.Statement
	sb, _ := json.Marshal(begin["statement"])
	if err := json.Unmarshal(sb, &st); err != nil {
		b.t.Fatal(err)
	}
	sig, err := k.Sign(st)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.post("/api/decide/finish", map[string]any{"nonce": st.Nonce, "assertion": assertionJSON(sig.Assertion)})
}

var sectionRE = regexp.MustCompile(`data-daemon="(\d+)" data-id="([^"]*)" data-hash="([0-9a-f]{64})"`)

// shown returns the requests the page shows, as "daemon/id" -> hash.
func (b *browserE2E) shown() map[string]string {
	b.t.Helper()
	_, body := b.get("/api/page")
	out := map[string]string{}
	for _, m := range sectionRE.FindAllStringSubmatch(body, -1) {
		out[m[1]+"/"+m[2]] = m[3]
	}
	return out
}

// TestE2EWebApproverTwoDaemons: one web approver (the real binary, as
// nobody) serves two real daemons, each with its own passkeys directory.
// A request with the same id waits on both; the page shows both; an allow
// signed for one daemon's and a deny for the other's each reach only the
// daemon that showed the request, as each audit log says. A passkey
// enrolled on one daemon while the web approver runs signs in and shows
// that daemon's requests only; revoked, its browser is signed out and it
// cannot sign in again.
func TestE2EWebApproverTwoDaemons(t *testing.T) {
	daemontest.RequireRoot(t)
	port := testenv.FreePrivilegedPort(t)
	origin := "http://localhost:" + port
	alice, err := passkeytest.New("alice", "localhost", origin)
	if err != nil {
		t.Fatal(err)
	}
	var stores []passkey.Store
	var ds []*daemontest.Daemon
	for range 2 {
		dir := passkeytest.Dir(t)
		s := passkey.Store{Dir: dir}
		e, err := alice.Enrolled()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Save(e); err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
		ds = append(ds, daemontest.Start(t, daemontest.Config{ApprovalTimeout: "60s", Extra: fmt.Sprintf("passkeys = %q", dir)}))
	}
	_, cli := daemontest.Binaries(t)
	startWebApprover(t, cli, "web approver for "+ds[0].ApproverSocket+", "+ds[1].ApproverSocket,
		"--web", "localhost:"+port, "--no-tls", "--approver-socket", ds[0].ApproverSocket, "--approver-socket", ds[1].ApproverSocket, "--user", "nobody")

	b := newBrowserE2E(t, origin)
	eventually(t, "alice signs in", func() bool { return b.trySignIn(alice) == 200 })

	req := func(argv ...string) *proto.Request {
		return &proto.Request{ID: "same-id", Pipeline: [][]string{argv}, Session: "s", Reason: "test", Time: time.Now()}
	}
	asked0 := ds[0].Ask(t, req("echo", "zero"))
	asked1 := ds[1].Ask(t, req("echo", "one"))
	var shown map[string]string
	eventually(t, "both requests show", func() bool { shown = b.shown(); return shown["0/same-id"] != "" && shown["1/same-id"] != "" })
	if code, res := b.decide(alice, 1, "same-id", shown["1/same-id"], approval.AllowOnce); code != 200 {
		t.Fatalf("allow on daemon 1: %d %v", code, res)
	}
	if resp := asked1.Wait(); resp.Status != proto.StatusOK || string(resp.Stdout) != "one\n" {
		t.Fatalf("daemon 1's response %+v, want its command run", resp)
	}
	if code, res := b.decide(alice, 0, "same-id", shown["0/same-id"], approval.DenyOnce); code != 200 {
		t.Fatalf("deny on daemon 0: %d %v", code, res)
	}
	if resp := asked0.Wait(); resp.Status != proto.StatusDenied {
		t.Fatalf("daemon 0's response %+v, want denied", resp)
	}
	for i, want := range []approval.Verdict{approval.Deny, approval.Allow} {
		var got []approval.Verdict
		for _, r := range ds[i].AuditRecords("same-id") {
			if r.Decision != nil {
				if r.Decision.Signed == nil || r.Decision.Signed.Approver != "alice" {
					t.Errorf("daemon %d: decision %+v, want signed by alice", i, r.Decision)
				}
				got = append(got, approval.Verdict(r.Decision.Verdict))
			}
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("daemon %d's audit log has the decisions %v, want only its own %s", i, got, want)
		}
	}

	// bob is enrolled on daemon 1 while the web approver runs.
	bob, err := passkeytest.New("bob", "localhost", origin)
	if err != nil {
		t.Fatal(err)
	}
	bb := newBrowserE2E(t, origin)
	if code := bb.trySignIn(bob); code != http.StatusForbidden {
		t.Fatalf("bob signs in before his enrolment: %d", code)
	}
	be, err := bob.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	if err := stores[1].Save(be); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bob signs in after his enrolment", func() bool { return bb.trySignIn(bob) == 200 })
	asked0 = ds[0].Ask(t, &proto.Request{ID: "for-alice", Pipeline: [][]string{{"echo", "a"}}, Session: "s", Reason: "t", Time: time.Now()})
	asked1 = ds[1].Ask(t, &proto.Request{ID: "for-bob", Pipeline: [][]string{{"echo", "b"}}, Session: "s", Reason: "t", Time: time.Now()})
	eventually(t, "alice sees both", func() bool { s := b.shown(); return s["0/for-alice"] != "" && s["1/for-bob"] != "" })
	var bobs map[string]string
	eventually(t, "bob sees daemon 1's", func() bool { bobs = bb.shown(); return bobs["1/for-bob"] != "" })
	if _, ok := bobs["0/for-alice"]; ok {
		t.Fatal("bob sees the request of a daemon that does not know his passkey")
	}
	if code, _ := bb.decide(bob, 0, "for-alice", b.shown()["0/for-alice"], approval.DenyOnce); code != http.StatusConflict {
		t.Fatalf("bob decides on daemon 0: %d, want 409", code)
	}

	// bob is revoked: signed out, and no sign-in again.
	if err := stores[1].Revoke("bob", time.Now()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bob is signed out", func() bool { code, _ := bb.get("/api/state"); return code == http.StatusUnauthorized })
	if code := bb.trySignIn(bob); code != http.StatusForbidden {
		t.Fatalf("bob signs in after his revocation: %d", code)
	}
	if code, _ := bb.decide(bob, 1, "for-bob", b.shown()["1/for-bob"], approval.AllowOnce); code != http.StatusUnauthorized {
		t.Fatalf("bob decides after his revocation: %d, want 401", code)
	}
	asked0.Cancel()
	asked1.Cancel()
}
