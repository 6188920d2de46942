package daemon

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/web"
)

// TestWebRequestNotMatchingItsHash: a daemon (here a fake one writing
// the channel's lines) announces a request, then a version of it whose
// request does not hash to its announced hash. The page then shows
// neither version, and says, escaped, that the request was not shown and
// why; a decision on the earlier version is refused; another request of
// the daemon is still shown. A resolved takes the line away.
func TestWebRequestNotMatchingItsHash(t *testing.T) {
	ts, origin, k, en := newWebServer(t)
	daemonEnd, webEnd := net.Pipe()
	t.Cleanup(func() { daemonEnd.Close(); webEnd.Close() })
	// The web approver sends nothing here but what a test asks; drained.
	go func() { _, _ = io.Copy(io.Discard, daemonEnd) }()
	lines := make(chan approval.Message, 16)
	go func() {
		for m := range lines {
			b, _ := json.Marshal(m)
			if _, err := daemonEnd.Write(append(b, '\n')); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { close(lines) })
	w, err := web.New(web.Config{Daemons: []web.Daemon{{Name: "fake", Client: approval.NewClient(webEnd)}}, Origin: origin, RPID: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = w.Run(ctx) }()
	ts.Config.Handler = w.Handler()
	ts.Start()
	t.Cleanup(func() { ts.Close(); cancel(); webEnd.Close(); <-ran })
	r := &rig{t: t, srv: ts, origin: origin, key: k, http: newBrowserClient()}

	id := "tp\x1b[2J<b>"
	shown := func(id, reason string) approval.Message {
		s := &approval.Shown{ID: id, Session: "s1", Reason: reason, Pipeline: [][]string{{"true"}}, RunAs: "root",
			Programs: []approval.Program{{Chain: []string{"/usr/bin/true"}}}}
		return approval.Message{Type: approval.MsgPending, ID: id, Hash: s.Hash(), Request: s}
	}
	lines <- approval.Message{Type: approval.MsgPasskeys, Passkeys: []approval.PublicKey{passkey.Public(en)}}
	lines <- shown("other", "still fine")
	first := shown(id, "the first version")
	lines <- first
	r.signIn()
	body := r.waitPage("the first version")
	if !strings.Contains(body, "still fine") {
		t.Fatalf("the other request is not shown:\n%s", body)
	}

	// A version whose request is not what its hash says.
	bad := shown(id, "a swapped request")
	bad.Hash = first.Hash
	lines <- bad
	body = r.waitPage("does not match the hash it announced")
	for _, gone := range []string{"the first version", "a swapped request"} {
		if strings.Contains(body, gone) {
			t.Errorf("the page still shows %q of a request that does not hash as announced", gone)
		}
	}
	if strings.Contains(body, "\x1b") || strings.Contains(body, "<b>") {
		t.Errorf("the request id is on the page unescaped:\n%s", body)
	}
	if !strings.Contains(body, "still fine") {
		t.Errorf("the other request is no longer shown")
	}
	if code, out := r.decide(k, 0, id, first.Hash, approval.DenyOnce); code != http.StatusConflict {
		t.Errorf("a decision on the earlier version: %d %v, want 409", code, out)
	}

	lines <- approval.Message{Type: approval.MsgResolved, ID: id, Hash: first.Hash, Verdict: approval.Deny, By: "a console"}
	lines <- approval.Message{Type: approval.MsgResolved, ID: "other", Verdict: approval.Deny, By: "a console"}
	body = r.waitPage("No request is waiting.")
	if strings.Contains(body, "does not match") {
		t.Errorf("the line stays after the request was resolved:\n%s", body)
	}
}
