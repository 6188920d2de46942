package daemon

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
	"github.com/agent-sudo/agent-sudo/internal/web"
)

func TestEnrolOrigins(t *testing.T) {
	const page = "https://build-01.example:9443"
	tests := []struct {
		name string
		for_ []string
		want []string // nil: refused
		err  string
	}{
		{"none: the page's own origin", nil, []string{page}, ""},
		{"another port of the same host", []string{"https://build-01.example:8443"}, []string{"https://build-01.example:8443"}, ""},
		{"two, one in capitals", []string{"https://build-01.example:8443", "https://BUILD-01.example"},
			[]string{"https://build-01.example:8443", "https://build-01.example"}, ""},
		{"another host", []string{"https://build-02.example:8443"}, nil, "not on build-01.example"},
		{"a sub-domain", []string{"https://x.build-01.example:8443"}, nil, "not on build-01.example"},
		{"an IP address", []string{"https://127.0.0.1:8443"}, nil, "not on build-01.example"},
		{"a path", []string{"https://build-01.example:8443/x"}, nil, "want scheme://host[:port]"},
		{"a user", []string{"https://u@build-01.example:8443"}, nil, "want scheme://host[:port]"},
		{"another scheme", []string{"ftp://build-01.example"}, nil, "want scheme://host[:port]"},
		{"no scheme", []string{"build-01.example:8443"}, nil, "want scheme://host[:port]"},
	}
	for _, tt := range tests {
		got, err := web.EnrolOrigins("build-01.example", page, tt.for_)
		switch {
		case tt.want != nil && (err != nil || !slices.Equal(got, tt.want)):
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		case tt.want == nil && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: %q, %v; want an error containing %q", tt.name, got, err, tt.err)
		}
	}
}

// TestEnrolForTheRunningWebApprover: while a web approver serves on one
// port (B), a passkey is enrolled on a page on another port of the same
// host (A) for B. It is stored for B alone; once the daemon sends it
// (passkeys), it signs in at B and its signed allow runs a request, with
// no restart of the web approver; an assertion made from A is refused.
func TestEnrolForTheRunningWebApprover(t *testing.T) {
	r := newRigOf(t, "")
	pageSrv := httptest.NewUnstartedServer(nil)
	_, port, _ := net.SplitHostPort(pageSrv.Listener.Addr().String())
	pageOrigin := "http://localhost:" + port
	origins, err := web.EnrolOrigins("localhost", pageOrigin, []string{r.origin})
	if err != nil {
		t.Fatal(err)
	}
	setup, err := web.NewEnrolSetup("alice", pageOrigin, "localhost", 65534, 65534, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	store := passkey.Store{Dir: filepath.Join(t.TempDir(), "passkeys")}
	rootEnd, pageEnd := net.Pipe()
	t.Cleanup(func() { rootEnd.Close(); pageEnd.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), web.EnrolTTL)
	defer cancel()
	type kept struct {
		en  passkey.Enrolled
		err error
	}
	keptCh := make(chan kept, 1)
	go func() {
		en, err := web.KeepEnrolled(ctx, rootEnd, setup, origins, store)
		keptCh <- kept{en, err}
	}()
	br := bufio.NewReader(pageEnd)
	got, err := web.ReadEnrolSetup(br)
	if err != nil {
		t.Fatal(err)
	}
	e := got.Enrolment(pageEnd, br)
	if err := e.Start(time.Now()); err != nil {
		t.Fatal(err)
	}
	pageSrv.Config.Handler = e.Handler()
	pageSrv.Start()
	defer pageSrv.Close()
	post := func(path string, body []byte) []byte {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, pageSrv.URL+path, bytes.NewReader(body))
		req.Header.Set("Origin", pageOrigin)
		req.Header.Set("Content-Type", "application/json")
		resp, err := pageSrv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
		}
		return b
	}
	// The phone registers on the enrolment page, from its origin A.
	k, err := passkeytest.New("alice", "localhost", pageOrigin)
	if err != nil {
		t.Fatal(err)
	}
	creation := post(setup.Path()+"/begin", []byte("{}"))
	reg, err := k.Register(creation)
	if err != nil {
		t.Fatal(err)
	}
	post(setup.Path()+"/finish", reg)
	res := <-keptCh
	if res.err != nil {
		t.Fatalf("KeepEnrolled: %v", res.err)
	}
	stored, err := store.List(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || !slices.Equal(stored[0].Origins, []string{r.origin}) || !bytes.Equal(stored[0].Credential.ID, k.ID) {
		t.Fatalf("stored %+v, want alice's passkey for %s alone", stored, r.origin)
	}

	// The daemon sends it to the running web approver.
	r.daemons[0].keys.set(stored[0])
	k.Origin = r.origin
	r.signInWith(k)
	// Known to the web approver now, it still signs nothing from the
	// enrolment page's origin.
	k.Origin = pageOrigin
	if code, out := r.trySignIn(k); code != http.StatusForbidden || !strings.Contains(fmt.Sprint(out["error"]), "origin") {
		t.Fatalf("sign-in from the enrolment page's origin %s: %d %v, want 403 for its origin", pageOrigin, code, out)
	}
	k.Origin = r.origin
	out := ask(r.broker, "after-enrol", "enrolled while it ran", "true")
	body := r.waitPage(`data-id="after-enrol"`)
	if code, res := r.decide(k, 0, "after-enrol", hashOf(t, body, 0, "after-enrol"), approval.AllowOnce); code != 200 {
		t.Fatalf("allow: %d %v", code, res)
	}
	if got := <-out; got.d.Verdict != approval.Allow || got.d.Signed == nil || got.d.Signed.Approver != "alice" {
		t.Fatalf("decision %+v, want allowed, signed by alice", got.d)
	}
}

// TestKeepEnrolledRefusesAnotherHost: the root side refuses, before it
// hands the page anything, to store a passkey for an origin on another
// host than the enrolment's relying party.
func TestKeepEnrolledRefusesAnotherHost(t *testing.T) {
	setup, err := web.NewEnrolSetup("alice", "https://a.example:9443", "a.example", 65534, 65534, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rootEnd, pageEnd := net.Pipe()
	defer pageEnd.Close()
	defer rootEnd.Close()
	_, err = web.KeepEnrolled(context.Background(), rootEnd, setup, []string{"https://b.example:8443"}, passkey.Store{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "not on a.example") {
		t.Fatalf("KeepEnrolled for another host: %v, want refused", err)
	}
}
