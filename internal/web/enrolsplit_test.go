package web

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
)

func TestCheckCredential(t *testing.T) {
	k, err := passkeytest.New("alice", "phone.example", "https://phone.example")
	if err != nil {
		t.Fatal(err)
	}
	en, err := k.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	good := webauthn.Credential{ID: en.Credential.ID, PublicKey: en.Credential.PublicKey,
		Flags: webauthn.CredentialFlags{UserPresent: true, UserVerified: true}}
	with := func(f func(c *webauthn.Credential)) webauthn.Credential {
		c := good
		f(&c)
		return c
	}
	tests := []struct {
		name string
		cred webauthn.Credential
		want string // "" for accepted, else part of the error
	}{
		{"a passkey as a browser registers it", good, ""},
		{"no id", with(func(c *webauthn.Credential) { c.ID = nil }), "credential id is 0 bytes"},
		{"an id longer than WebAuthn allows", with(func(c *webauthn.Credential) { c.ID = make([]byte, 1024) }), "1024 bytes"},
		{"no public key", with(func(c *webauthn.Credential) { c.PublicKey = nil }), "public key cannot be read"},
		{"a public key that is not COSE", with(func(c *webauthn.Credential) { c.PublicKey = []byte("-----BEGIN PUBLIC KEY-----") }), "public key cannot be read"},
		{"user not verified", with(func(c *webauthn.Credential) { c.Flags.UserVerified = false }), "did not verify the user"},
		{"user not present", with(func(c *webauthn.Credential) { c.Flags.UserPresent = false }), "did not verify the user"},
	}
	for _, tt := range tests {
		err := CheckCredential(tt.cred)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: err %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

// enrolRig is both sides of an enrolment in one process: the root side
// (KeepEnrolled) on one end of a socket pair, the page on the other,
// served by httptest.
type enrolRig struct {
	setup EnrolSetup
	store passkey.Store
	srv   *httptest.Server
	kept  chan error
	e     *Enrolment
}

func newEnrolRig(t *testing.T, name string) *enrolRig {
	t.Helper()
	return newEnrolRigWith(t, name, func(c net.Conn) net.Conn { return c })
}

// newEnrolRigWith is newEnrolRig with the page's end of the pair wrapped
// by wrap, after the setup was read.
func newEnrolRigWith(t *testing.T, name string, wrap func(net.Conn) net.Conn) *enrolRig {
	t.Helper()
	const origin = "https://phone.example:8443"
	setup, err := NewEnrolSetup(name, origin, "phone.example", 65534, 65534, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rootEnd, pageEnd := net.Pipe()
	t.Cleanup(func() { rootEnd.Close(); pageEnd.Close() })
	r := &enrolRig{store: passkey.Store{Dir: filepath.Join(t.TempDir(), "passkeys")}, kept: make(chan error, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), EnrolTTL)
	t.Cleanup(cancel)
	go func() {
		_, err := KeepEnrolled(ctx, rootEnd, setup, []string{origin}, r.store)
		r.kept <- err
	}()
	br := bufio.NewReader(pageEnd)
	got, err := ReadEnrolSetup(br)
	if err != nil {
		t.Fatal(err)
	}
	e := got.Enrolment(wrap(pageEnd), br)
	if err := e.Start(time.Now()); err != nil {
		t.Fatal(err)
	}
	if e.Path() != setup.Path() {
		t.Fatalf("the page serves %s, the root side printed %s", e.Path(), setup.Path())
	}
	r.setup, r.e = got, e
	r.srv = httptest.NewServer(e.Handler())
	t.Cleanup(r.srv.Close)
	return r
}

// post calls the page's API as its script does; it returns the status and
// the body.
func (r *enrolRig) post(t *testing.T, path string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.srv.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", r.setup.PageOrigin)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// register runs the ceremony with k: begin, the authenticator, finish.
func (r *enrolRig) register(t *testing.T, k *passkeytest.Key) (int, []byte) {
	t.Helper()
	code, creation := r.post(t, r.setup.Path()+"/begin", []byte("{}"))
	if code != http.StatusOK {
		t.Fatalf("begin: %d %s", code, creation)
	}
	resp, err := k.Register(creation)
	if err != nil {
		t.Fatal(err)
	}
	return r.post(t, r.setup.Path()+"/finish", resp)
}

// TestEnrolmentKeptByTheRootSide proves the split: the page's side
// registers the passkey and the root side stores it, under its own name,
// relying party, origins and user handle, in a file of mode 0600.
func TestEnrolmentKeptByTheRootSide(t *testing.T) {
	r := newEnrolRigWith(t, "alice", func(c net.Conn) net.Conn { return &embellishConn{Conn: c} })
	k, err := passkeytest.New("mallory", r.setup.RPID, r.setup.PageOrigin)
	if err != nil {
		t.Fatal(err)
	}
	code, body := r.register(t, k)
	if code != http.StatusOK || !strings.Contains(string(body), `"approver":"alice"`) {
		t.Fatalf("finish: %d %s", code, body)
	}
	if err := <-r.kept; err != nil {
		t.Fatalf("KeepEnrolled: %v", err)
	}
	keys, err := r.store.List(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0].Name != "alice" || !bytes.Equal(keys[0].Credential.ID, k.ID) ||
		keys[0].RPID != "phone.example" || keys[0].Origins[0] != r.setup.PageOrigin || !bytes.Equal(keys[0].UserID, r.setup.UserID) {
		t.Fatalf("stored %+v, want alice's passkey %x for phone.example", keys, k.ID)
	}
	fi, err := os.Stat(filepath.Join(r.store.Dir, "alice.json"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("alice.json has mode %v, want 0600", fi.Mode().Perm())
	}
	// Only what root checked is kept: the members the page's side added
	// to its offer are absent, or the library's zero value.
	b, err := os.ReadFile(filepath.Join(r.store.Dir, "alice.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Credential map[string]json.RawMessage `json:"credential"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	zb, err := json.Marshal(webauthn.Credential{})
	if err != nil {
		t.Fatal(err)
	}
	var zero map[string]json.RawMessage
	if err := json.Unmarshal(zb, &zero); err != nil {
		t.Fatal(err)
	}
	for k, v := range file.Credential {
		switch k {
		case "id", "publicKey", "flags":
		default:
			if z, ok := zero[k]; !ok || !bytes.Equal(v, z) {
				t.Errorf("the stored credential has %q: %s, which root did not check", k, v)
			}
		}
	}
	for _, k := range []string{"id", "publicKey", "flags"} {
		if _, ok := file.Credential[k]; !ok {
			t.Errorf("the stored credential has no %q", k)
		}
	}
}

// embellishConn adds to each credential the page's side offers what root
// does not check: an attestation type and format, transports and an
// authenticator's AAGUID.
type embellishConn struct{ net.Conn }

func (c *embellishConn) Write(b []byte) (int, error) {
	var o enrolOffer
	if err := json.Unmarshal(b, &o); err != nil || o.Credential == nil {
		return c.Conn.Write(b)
	}
	o.Credential.AttestationType, o.Credential.AttestationFormat = "basic_full", "packed"
	o.Credential.Transport = []protocol.AuthenticatorTransport{protocol.USB}
	o.Credential.Authenticator.AAGUID = bytes.Repeat([]byte{7}, 16)
	o.Credential.Authenticator.SignCount = 42
	nb, err := json.Marshal(o)
	if err != nil {
		return 0, err
	}
	if _, err := c.Conn.Write(append(nb, '\n')); err != nil {
		return 0, err
	}
	return len(b), nil
}

// TestEnrolmentRootRefusalShown proves that the root side's refusal
// reaches the page, stores nothing, and leaves the link open for another
// try: here the name is already enrolled.
func TestEnrolmentRootRefusalShown(t *testing.T) {
	r := newEnrolRig(t, "alice")
	first, err := passkeytest.New("alice", r.setup.RPID, r.setup.PageOrigin)
	if err != nil {
		t.Fatal(err)
	}
	fe, err := first.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.store.Save(fe); err != nil {
		t.Fatal(err)
	}
	k, err := passkeytest.New("alice", r.setup.RPID, r.setup.PageOrigin)
	if err != nil {
		t.Fatal(err)
	}
	code, body := r.register(t, k)
	var answer struct{ Error string }
	_ = json.Unmarshal(body, &answer)
	if code != http.StatusForbidden || !strings.Contains(answer.Error, "already enrolled") {
		t.Fatalf("finish: %d %s, want 403 saying alice is already enrolled", code, body)
	}
	select {
	case err := <-r.kept:
		t.Fatalf("KeepEnrolled returned (%v) after a refusal", err)
	default:
	}
	if keys, err := r.store.List(false); err != nil || len(keys) != 1 || string(keys[0].Credential.ID) != string(first.ID) {
		t.Fatalf("alice's passkey was rewritten: %+v %v", keys, err)
	}
	// The link still works for another try.
	if code, creation := r.post(t, r.setup.Path()+"/begin", []byte("{}")); code != http.StatusOK {
		t.Fatalf("begin after a refusal: %d %s", code, creation)
	}
}

// TestOrigin: an origin is written as the browser sends it, without the
// scheme's default port, or every state-changing call from the page (its
// Origin header) and every passkey assertion (its client data) would be
// refused on port 443.
func TestOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"https://build-01.example:443":  "https://build-01.example",
		"https://Build-01.Example:8443": "https://build-01.example:8443",
		"http://localhost:80/":          "http://localhost",
		"http://localhost:8080":         "http://localhost:8080",
		"https://localhost":             "https://localhost",
		"HTTPS://host:443":              "https://host",
		"http://host:443":               "http://host:443",
		"https://[::1]:443":             "https://[::1]",
		"https://[::1]:8443":            "https://[::1]:8443",
	} {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := Origin(u); got != want {
			t.Errorf("Origin(%s) = %s, want %s", in, got, want)
		}
	}
}

// gatedConn holds each offer the page's side writes until the test
// releases it, and counts them.
type gatedConn struct {
	net.Conn
	offered chan struct{}
	release chan struct{}
	mu      sync.Mutex
	offers  int
}

func (c *gatedConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.offers++
	c.mu.Unlock()
	c.offered <- struct{}{}
	<-c.release
	return c.Conn.Write(b)
}

func (c *gatedConn) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offers
}

// finishAsync runs begin, then finish in the background under ctx; the
// finish's status (or -1 when the client gave up) arrives on the channel.
func (r *enrolRig) finishAsync(t *testing.T, ctx context.Context, k *passkeytest.Key) <-chan int {
	t.Helper()
	code, creation := r.post(t, r.setup.Path()+"/begin", []byte("{}"))
	if code != http.StatusOK {
		t.Fatalf("begin: %d %s", code, creation)
	}
	resp, err := k.Register(creation)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.srv.URL+r.setup.Path()+"/finish", bytes.NewReader(resp))
		if err != nil {
			done <- -1
			return
		}
		req.Header.Set("Origin", r.setup.PageOrigin)
		req.Header.Set("Content-Type", "application/json")
		res, err := r.srv.Client().Do(req)
		if err != nil {
			done <- -1
			return
		}
		_ = res.Body.Close()
		done <- res.StatusCode
	}()
	return done
}

// TestEnrolmentOfferOutlivesTheBrowser proves that a browser going away
// while its credential is with the root side does not cut the exchange
// short (which would leave root's answer unread for the next finish to
// take as its own): the passkey is kept and the enrolment ends as done.
func TestEnrolmentOfferOutlivesTheBrowser(t *testing.T) {
	gate := &gatedConn{offered: make(chan struct{}, 1), release: make(chan struct{})}
	r := newEnrolRigWith(t, "alice", func(c net.Conn) net.Conn { gate.Conn = c; return gate })
	k, err := passkeytest.New("alice", r.setup.RPID, r.setup.PageOrigin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := r.finishAsync(t, ctx, k)
	<-gate.offered
	cancel()
	if code := <-done; code != -1 {
		t.Fatalf("the finish the client gave up answered %d", code)
	}
	close(gate.release)
	if err := <-r.kept; err != nil {
		t.Fatalf("KeepEnrolled: %v", err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), EnrolTTL)
	defer wcancel()
	if err := r.e.Wait(wctx); err != nil {
		t.Fatalf("the page's side does not know its passkey was kept: %v", err)
	}
}

// TestEnrolmentFinishesSerialized proves that two finishes do not offer
// at once on the one channel (both would read the same answers): the
// second waits for the first, and once the first passkey is kept it is
// refused without being offered.
func TestEnrolmentFinishesSerialized(t *testing.T) {
	gate := &gatedConn{offered: make(chan struct{}, 2), release: make(chan struct{})}
	r := newEnrolRigWith(t, "alice", func(c net.Conn) net.Conn { gate.Conn = c; return gate })
	k1, err := passkeytest.New("alice", r.setup.RPID, r.setup.PageOrigin)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := passkeytest.New("alice", r.setup.RPID, r.setup.PageOrigin)
	if err != nil {
		t.Fatal(err)
	}
	first := r.finishAsync(t, context.Background(), k1)
	<-gate.offered
	second := r.finishAsync(t, context.Background(), k2)
	close(gate.release)
	if code := <-first; code != http.StatusOK {
		t.Fatalf("the first finish: %d, want 200", code)
	}
	// 403 when it waited for the first, 404 when it came after the link
	// closed: refused either way.
	if code := <-second; code != http.StatusForbidden && code != http.StatusNotFound {
		t.Fatalf("the second finish: %d, want 403 or 404 (a passkey was already enrolled)", code)
	}
	if err := <-r.kept; err != nil {
		t.Fatalf("KeepEnrolled: %v", err)
	}
	if n := gate.count(); n != 1 {
		t.Fatalf("%d offers were written on the channel, want 1", n)
	}
	keys, err := r.store.List(false)
	if err != nil || len(keys) != 1 || !bytes.Equal(keys[0].Credential.ID, k1.ID) {
		t.Fatalf("stored %+v (%v), want the first passkey %x", keys, err, k1.ID)
	}
}

// TestEnrolChannelClosedAfterAFailure proves that an exchange cut short
// closes the channel: the next offer fails as closed, and is not written
// where it would read the earlier offer's answer.
func TestEnrolChannelClosedAfterAFailure(t *testing.T) {
	rootEnd, pageEnd := net.Pipe()
	defer rootEnd.Close()
	ch := &enrolChannel{conn: pageEnd, br: bufio.NewReader(pageEnd)}
	ctx, cancel := context.WithCancel(context.Background())
	read := make(chan struct{})
	go func() {
		br := bufio.NewReader(rootEnd)
		_, _ = br.ReadString('\n') // the offer; root answers late
		cancel()
		close(read)
	}()
	if err := ch.offer(ctx, webauthn.Credential{ID: []byte{1}}); err == nil {
		t.Fatal("an offer whose context ended before the answer succeeded")
	}
	<-read
	err := ch.offer(context.Background(), webauthn.Credential{ID: []byte{2}})
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("the next offer: err %v, want the channel closed", err)
	}
}

// TestEnrolmentLinkGone: a link with the wrong secret (cut short, or one
// of an enrolment that ended) and any other address say in plain words
// that the link no longer works and how to get a new one, as text to a
// browser and as JSON to the page's script; never a bare "404 page not
// found".
func TestEnrolmentLinkGone(t *testing.T) {
	r := newEnrolRig(t, "alice")
	for _, path := range []string{"/enroll/wrong", "/enroll", "/"} {
		resp, err := r.srv.Client().Get(r.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "run `sudo agent-sudo approve web enroll NAME` on the server again") {
			t.Errorf("GET %s: %d %q", path, resp.StatusCode, b)
		}
	}
	code, b := r.post(t, "/enroll/wrong/begin", []byte("{}"))
	var out struct{ Error string }
	if err := json.Unmarshal(b, &out); err != nil || code != http.StatusNotFound || !strings.Contains(out.Error, "This enrolment link no longer works") {
		t.Errorf("POST to a wrong link: %d %s (%v)", code, b, err)
	}
}

// TestEnrolmentRootBoundsOffers: the root side takes at most
// maxEnrolTries offers from the page's process, as many as the page lets
// a link try: a page's process taken over from the network, which runs as
// another user, cannot have root check (and run the name service's getent
// for) offer after offer until the link expires.
func TestEnrolmentRootBoundsOffers(t *testing.T) {
	setup, err := NewEnrolSetup("alice", "https://phone.example:8443", "phone.example", 65534, 65534, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rootEnd, pageEnd := net.Pipe()
	t.Cleanup(func() { rootEnd.Close(); pageEnd.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), EnrolTTL)
	defer cancel()
	answers := make(chan int, 1)
	go func() {
		defer pageEnd.Close()
		br := bufio.NewReader(pageEnd)
		var s EnrolSetup
		if err := readLine(br, &s); err != nil {
			answers <- -1
			return
		}
		n := 0
		defer func() { answers <- n }()
		for range maxEnrolTries + 1 {
			// Not a credential CheckCredential takes: refused, answered.
			if err := writeLine(pageEnd, enrolOffer{Credential: &webauthn.Credential{}}); err != nil {
				return
			}
			var a enrolAnswer
			if err := readLine(br, &a); err != nil {
				return
			}
			n++
		}
	}()
	_, err = KeepEnrolledWith(ctx, rootEnd, setup, []string{setup.PageOrigin}, passkey.Store{Dir: filepath.Join(t.TempDir(), "passkeys")},
		func(context.Context, string) (string, error) { return "uid 1000", nil })
	rootEnd.Close()
	if n := <-answers; n != maxEnrolTries {
		t.Errorf("the root side answered %d offers, want %d (maxEnrolTries)", n, maxEnrolTries)
	}
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("KeepEnrolled: %v, want it to end saying the offers were refused", err)
	}
}
