package daemon

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// askTwo asks b for a request that needs two different people.
func askTwo(b *broker, id string) <-chan askOutcome {
	out := make(chan askOutcome, 1)
	go func() {
		d, err := b.Ask(context.Background(), &approval.Pending{
			Request:  &proto.Request{ID: id, Session: "s1", Reason: "dangerous", Pipeline: [][]string{{"true"}}},
			Programs: []approval.Program{{Chain: []string{"/usr/bin/true"}}}, RunAs: "root",
			Record: strings.Repeat("7", 64), Approvals: 2,
		})
		out <- askOutcome{d, err}
	}()
	return out
}

// section returns the page's section of request id of daemon 0.
func section(t *testing.T, body, id string) string {
	t.Helper()
	i := strings.Index(body, `data-daemon="0" data-id="`+id+`"`)
	if i < 0 {
		t.Fatalf("the page does not show %s:\n%s", id, body)
	}
	j := strings.Index(body[i:], "</section>")
	return body[i : i+j]
}

// TestWebTwoPerson: a request that needs two people says so on the page
// (0 of 2); after a first allow, by a passkey whose name carries HTML and
// a terminal escape, every signed-in page shows 1 of 2, waiting, and who
// (escaped, as text); the page of the person who allowed says their allow
// counted and offers no second allow (and the web approver refuses one),
// while another person's page offers it, and their allow runs the request.
func TestWebTwoPerson(t *testing.T) {
	r := newRig(t)
	alice, err := r.key.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	eveKey, err := passkeytest.New("<b>eve\x1b[2J", "localhost", r.origin)
	if err != nil {
		t.Fatal(err)
	}
	eve, err := eveKey.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	r.daemons[0].keys.set(alice, eve)
	res := askTwo(r.broker, "tp")

	// eve, in a browser of her own.
	aliceBrowser := r.http
	r.http = newBrowserClient()
	r.signInWith(eveKey)
	body := r.waitPage("NEEDS 2 DIFFERENT PEOPLE: 0 of 2 approvals so far")
	if s := section(t, body, "tp"); !strings.Contains(s, `class="allow"`) {
		t.Fatalf("no allow offered before anyone allowed:\n%s", s)
	}
	hash := hashOf(t, body, 0, "tp")
	code, out := r.decide(eveKey, 0, "tp", hash, approval.AllowOnce)
	if code != 200 || out["note"] == nil || out["note"] == "" {
		t.Fatalf("eve's allow: %d %v, want counted, with a note", code, out)
	}
	body = r.waitPage("1 of 2 approvals · waiting for another person · allowed by passkey")
	s := section(t, body, "tp")
	if !strings.Contains(s, "your allow counted") || strings.Contains(s, `class="allow"`) {
		t.Errorf("eve's page after her allow, want her allow counted and no allow button:\n%s", s)
	}
	for _, bad := range []string{"<b>eve", "\x1b"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page carries %q from the passkey's name unescaped", bad)
		}
	}
	if code, out := r.decide(eveKey, 0, "tp", hash, approval.AllowOnce); code != http.StatusConflict || !strings.Contains(out["error"].(string), "already allowed") {
		t.Fatalf("eve's second allow: %d %v, want refused: she already allowed", code, out)
	}

	// alice sees who allowed, and may allow.
	r.http = aliceBrowser
	r.signIn()
	body = r.waitPage("1 of 2 approvals · waiting for another person · allowed by passkey &#34;&lt;b&gt;eve")
	s = section(t, body, "tp")
	if strings.Contains(s, "your allow counted") || !strings.Contains(s, `class="allow"`) {
		t.Fatalf("alice's page, want an allow offered:\n%s", s)
	}
	if code, out := r.decide(r.key, 0, "tp", hash, approval.AllowOnce); code != 200 || out["note"] != "" {
		t.Fatalf("alice's allow: %d %v, want it to decide", code, out)
	}
	if got := <-res; got.err != nil || got.d.Verdict != approval.Allow || len(got.d.Approvals) != 1 {
		t.Fatalf("decision %+v %v, want allowed after two people", got.d, got.err)
	}
	r.waitPage("No request is waiting.")
}
