package daemon_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// TestE2EFarTimesAndHugeSkew: a time centuries away is refused whatever
// the distance (a saturated time.Duration once passed the check, and such
// a request ran again forever), and the largest max_clock_skew the
// configuration accepts still remembers ids (approval_timeout + 2 ×
// max_clock_skew once overflowed to a negative window that forgot every id
// at once; the configuration now refuses a skew over an hour, and
// TestReplayCacheKeepsUntilTimePlusSkew keeps the cache right at the edge of
// time.Duration's range). Issue 21.
func TestE2EFarTimesAndHugeSkew(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll})
	for _, tm := range []string{"9999-12-31T23:59:59Z", "0000-01-01T00:00:00Z", time.Now().AddDate(300, 0, 0).UTC().Format(time.RFC3339)} {
		l := line(map[string]any{"id": "far", "time": tm, "pipeline": [][]string{{"true"}}})
		if got := d.Send(l); !contains(got, `"status":"error"`, `field \"time\": `+tm+` is more than 292 years`) {
			t.Errorf("time %s: %s", tm, got)
		}
	}

	huge := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll, Extra: `max_clock_skew = "1h"`})
	l := line(map[string]any{"id": "huge-skew", "pipeline": [][]string{{"true"}}})
	if first := huge.Send(l); !strings.Contains(first, `"status":"ok"`) {
		t.Fatalf("first use: %s", first)
	}
	if second := huge.Send(l); !contains(second, `"status":"error"`, `request id \"huge-skew\" was already used`) {
		t.Fatalf("replay under max_clock_skew = 1h: %s", second)
	}
}

// TestE2ETimeTheAuditLogCannotWrite: a time time.Parse accepts but RFC 3339
// does not (offset hour 24, a one-digit hour, a ',' before the fraction) is
// refused as a bad "time" and the refusal is audited. With offset +24:00
// the audit log once failed to write the record, the agent was told the
// audit log was unavailable, and nothing was recorded, for a request, a
// refusal or a stop (issue 21).
func TestE2ETimeTheAuditLogCannotWrite(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll})
	now := time.Now().UTC()
	tests := []struct {
		id, time, action, want string
	}{
		{"h24", now.Add(24*time.Hour).Format("2006-01-02T15:04:05") + "+24:00", "", "the offset hour is 24"},
		{"h24-stop", now.Add(24*time.Hour).Format("2006-01-02T15:04:05") + "+24:00", "stop", "the offset hour is 24"},
		{"onedigit", now.Format("2006-01-02T") + "9" + now.Format(":04:05Z"), "", "want 2 digits for the hour"},
		{"comma", now.Format("2006-01-02T15:04:05") + ",5Z", "", "a fraction of a second follows a '.', not a ','"},
	}
	for _, tt := range tests {
		fields := map[string]any{"id": tt.id, "time": tt.time, "pipeline": [][]string{{"true"}}}
		if tt.action != "" {
			fields["action"], fields["pipeline"] = tt.action, [][]string{}
		}
		got := d.Send(line(fields))
		if !contains(got, `"status":"error"`, `field \"time\"`, tt.want) || strings.Contains(got, "audit log unavailable") {
			t.Errorf("%s: %s", tt.time, got)
			continue
		}
		recs := d.AuditRecords(tt.id)
		b, _ := json.Marshal(recs)
		if len(recs) != 1 || !strings.Contains(string(b), tt.want) {
			t.Errorf("%s: audit records %s, want one refusal saying %q", tt.time, b, tt.want)
		}
	}
}

// TestE2EApproverDuplicateKey: over the real daemon, a console's decision
// with "decision" given twice (deny, then allow_once) is answered with an
// error and decides nothing; the request waits until a well-formed decision
// (issue 21: the last key won and the command ran, while a reader of the
// first key recorded a deny).
func TestE2EApproverDuplicateKey(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "30s"})
	console := daemontest.Dial(t, d.ApproverSocket)
	raw, err := net.Dial("unix", d.ApproverSocket)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	answer := make(chan string, 1)
	go func() { answer <- d.Send(line(map[string]any{"id": "dup-1", "pipeline": [][]string{{"true"}}})) }()
	p := console.Pending("dup-1")
	bad := `{"type":"decide","id":"dup-1","hash":"` + p.Hash + `","decision":"deny","decision":"allow_once"}` + "\n"
	if _, err := raw.Write([]byte(bad)); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(raw)
	sc.Buffer(nil, approval.MaxLine)
	_ = raw.SetReadDeadline(time.Now().Add(30 * time.Second))
	var result approval.Message
	for result.Type != approval.MsgResult {
		if !sc.Scan() {
			t.Fatalf("approver channel closed before the result: %v", sc.Err())
		}
		result = approval.Message{}
		if err := json.Unmarshal(sc.Bytes(), &result); err != nil {
			t.Fatalf("bad line %q: %v", sc.Bytes(), err)
		}
	}
	if result.OK || !strings.Contains(result.Error, `invalid message: key "decision" appears more than once`) {
		t.Fatalf("answered %+v, want an error naming the repeated key", result)
	}
	console.Send(approval.Message{Type: approval.MsgDecide, ID: "dup-1", Hash: p.Hash, Decision: approval.DenyOnce})
	if got := <-answer; !strings.Contains(got, `"status":"denied"`) {
		t.Fatalf("the agent's answer: %s, want denied by the well-formed decision", got)
	}
}

// TestE2EEscapesThatChangeMeaning: over the real daemon, an escape that
// would be decoded into something else than was sent is refused, naming the
// field: a lone surrogate in an argument (it ran as U+FFFD) and an escaped
// line break in stdin (Go's base64 decoder skipped it, so "aG\nk=" ran as
// "hi"). Issue 21.
func TestE2EEscapesThatChangeMeaning(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll})
	now := time.Now().UTC().Format(time.RFC3339)
	for _, tt := range []struct{ line, want string }{
		{`{"id":"sur","time":"` + now + `","pipeline":[["echo","a\ud800b"]]}`, `field \"pipeline[0][1]\": the escape \\ud800 at byte 2 of its JSON text is half of a UTF-16 surrogate pair`},
		{`{"id":"b64","time":"` + now + `","pipeline":[["cat"]],"stdin":"aG\nk="}`, `field \"stdin\": is not standard padded base64: character 2 of the decoded string is '\\n' (sent escaped)`},
	} {
		if got := d.Send(tt.line); !contains(got, `"status":"error"`, tt.want) {
			t.Errorf("%s: %s", tt.line, got)
		}
	}
}

// TestE2EApproverCaseFoldedKey: over the real daemon, a console's
// "decision":"deny" decides deny however a key that differs from
// "decision" only in case or by Unicode folding says allow_once: the
// command does not run (issue 31, finding 7: encoding/json read
// "Decision" as "decision", and the touch ran as root).
func TestE2EApproverCaseFoldedKey(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "30s"})
	console := daemontest.Dial(t, d.ApproverSocket)
	raw, err := net.Dial("unix", d.ApproverSocket)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	sc := bufio.NewScanner(raw)
	sc.Buffer(nil, approval.MaxLine)
	dir := t.TempDir()
	for i, key := range []string{`"Decision"`, `"DECISION"`, `"deci\u017fion"`} {
		id := fmt.Sprintf("fold-%d", i)
		target := filepath.Join(dir, id)
		answer := make(chan string, 1)
		go func() { answer <- d.Send(line(map[string]any{"id": id, "pipeline": [][]string{{"touch", target}}})) }()
		p := console.Pending(id)
		bad := `{"type":"decide","id":"` + id + `","hash":"` + p.Hash + `","decision":"deny",` + key + `:"allow_once"}` + "\n"
		if _, err := raw.Write([]byte(bad)); err != nil {
			t.Fatal(err)
		}
		_ = raw.SetReadDeadline(time.Now().Add(30 * time.Second))
		var result approval.Message
		for result.Type != approval.MsgResult {
			if !sc.Scan() {
				t.Fatalf("approver channel closed before the result: %v", sc.Err())
			}
			result = approval.Message{}
			if err := json.Unmarshal(sc.Bytes(), &result); err != nil {
				t.Fatalf("bad line %q: %v", sc.Bytes(), err)
			}
		}
		if !result.OK {
			t.Fatalf("%s: answered %+v, want the deny taken", key, result)
		}
		if got := <-answer; !strings.Contains(got, `"status":"denied"`) {
			t.Fatalf("%s: the agent's answer: %s, want denied", key, got)
		}
		if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s: %s exists (%v): the command ran", key, target, err)
		}
	}
}
