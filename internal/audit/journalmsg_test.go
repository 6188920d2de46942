package audit

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestJournalMessageUntrusted: what an agent wrote (session, command,
// refusal reason) reaches the journal message escaped and bounded, so that
// `journalctl -u agent-sudo` shows one line per entry, without terminal
// escapes, whatever the request held; the structured fields keep the
// values whole. The entries are taken through JournalFunc, as the daemon
// sends them.
func TestJournalMessageUntrusted(t *testing.T) {
	var mu sync.Mutex
	var msgs []string
	var fields []map[string]string
	j := JournalFunc(func(msg string, _ journal.Priority, f map[string]string) error {
		mu.Lock()
		defer mu.Unlock()
		msgs, fields = append(msgs, msg), append(fields, f)
		return nil
	})
	ctx := context.Background()
	l := openLog(t, logPath(t), Options{Journal: j})
	req := testRequest("r-evil")
	req.Session = "s\x1b[2J\nfake line\u202e"
	req.Pipeline = [][]string{{"rm", "-rf", "/\x1b]0;pwned\x07\nsecond line", strings.Repeat("x", 5000)}}
	tr, err := l.Received(ctx, req, testPeer)
	if err != nil {
		t.Fatal(err)
	}
	by := "console uid=0 tty=/dev/pts/3\x1b[2J pid=99"
	if err := tr.Decided(ctx, approval.Decision{Verdict: approval.Deny, By: by}); err != nil {
		t.Fatal(err)
	}
	reason := "invalid: \x1b[31m" + strings.Repeat("y", 3000)
	if err := l.Refused(ctx, Refusal{ID: "r-bad\n", Request: req, Peer: &peercred.Creds{UID: 1001}, Reason: reason}); err != nil {
		t.Fatal(err)
	}
	if err := l.Refused(ctx, Refusal{ID: "r-bad\n", Reason: "no credentials"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// opened, decision, refused, refused, closed.
	if len(msgs) != 5 {
		t.Fatalf("%d journal entries, want 5: %q", len(msgs), msgs)
	}
	raw := regexp.MustCompile("[\x00-\x1f\x7f\u0080-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
	for i, m := range msgs {
		if c := raw.FindString(m); c != "" {
			t.Errorf("message %d has a raw control or format character %q: %q", i, c, m)
		}
		if len(m) > 1024 {
			t.Errorf("message %d is %d bytes: %.200q...", i, len(m), m)
		}
	}
	decision := msgs[1]
	for _, want := range []string{
		`audit: request r-evil by uid 1000 (session s\x1b[2J\nfake line\u202e) denied by console uid=0 tty=/dev/pts/3\x1b[2J pid=99: rm -rf `,
		`xxxx… (cut: `,
	} {
		if !strings.Contains(decision, want) {
			t.Errorf("decision message %q\nlacks %q", decision, want)
		}
	}
	if fields[1]["AGENT_SUDO_SESSION"] != req.Session || fields[1]["AGENT_SUDO_DECIDED_BY"] != by {
		t.Errorf("decision fields changed: session %q, decided by %q", fields[1]["AGENT_SUDO_SESSION"], fields[1]["AGENT_SUDO_DECIDED_BY"])
	}
	if want := `audit: request r-evil by uid 1001 (session s\x1b[2J\nfake line\u202e) refused (invalid: \x1b[31myyyy`; !strings.HasPrefix(msgs[2], want) {
		t.Errorf("refusal message %q\ndoes not begin %q", msgs[2], want)
	}
	if want := `audit: request r-bad\n by an unknown peer refused (no credentials): (no request decoded)`; msgs[3] != want {
		t.Errorf("refusal without a request: %q, want %q", msgs[3], want)
	}
	if fields[2]["AGENT_SUDO_STATUS"] != string(proto.StatusError) {
		t.Errorf("refusal fields: %v", fields[2])
	}
}
