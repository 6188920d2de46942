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
	"testing"
	"time"

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
	en    passkey.Enrolled
}

func newEnrolRig(t *testing.T, name string) *enrolRig {
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
		en, err := KeepEnrolled(ctx, rootEnd, setup, []string{origin}, r.store)
		r.en = en
		r.kept <- err
	}()
	br := bufio.NewReader(pageEnd)
	got, err := ReadEnrolSetup(br)
	if err != nil {
		t.Fatal(err)
	}
	e := got.Enrolment(pageEnd, br)
	if err := e.Start(time.Now()); err != nil {
		t.Fatal(err)
	}
	if e.Path() != setup.Path() {
		t.Fatalf("the page serves %s, the root side printed %s", e.Path(), setup.Path())
	}
	r.setup = got
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
	r := newEnrolRig(t, "alice")
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
}

// TestEnrolmentRootRefusalShown proves that the root side's refusal
// reaches the page, stores nothing, and leaves the link open for another
// try: here the name is already enrolled.
func TestEnrolmentRootRefusalShown(t *testing.T) {
	r := newEnrolRig(t, "alice")
	if err := os.MkdirAll(r.store.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.store.Dir, "alice.json"), []byte("{}\n"), 0o600); err != nil {
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
	if b, _ := os.ReadFile(filepath.Join(r.store.Dir, "alice.json")); string(b) != "{}\n" {
		t.Fatalf("alice.json was rewritten: %s", b)
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
