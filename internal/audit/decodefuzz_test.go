package audit

import (
	"context"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/proto"
)

// FuzzDecodeThenAudit: every request line the decoder accepts can be
// written through the real audit encoder (Received, and Refused for a
// refusal after decoding, such as an unknown program or action "stop"), and
// so can every line it refuses. A value the decoder accepts but the log
// cannot write would leave a request without a record (issue 21: a time
// with offset +24:00). The clock and a skew of a century make any time the
// fuzzer writes near 2026 fresh.
func FuzzDecodeThenAudit(f *testing.F) {
	for _, s := range []string{
		`{"id":"a","time":"2026-11-20T09:30:00Z","pipeline":[["apt","install","nginx"]],"env":{"LANG":"C"},"reason":"r","stdin":"aGkK"}`,
		`{"id":"b","time":"2026-11-21T09:30:00+24:00","pipeline":[["true"]]}`,
		`{"id":"c","time":"2026-11-20T9:30:00-05:00","pipeline":[["true"]]}`,
		`{"id":"d","time":"2026-11-20T09:30:00,5Z","action":"stop"}`,
		`{"id":"e","time":"2026-11-20T09:30:00.123456789-23:59","pipeline":[["x","\ud800"]],"cwd":"/tmp"}`,
		`{"id":"f","time":"9999-12-31T23:59:59Z","pipeline":[["true"]]}`,
		`{"time":"2126-11-20T09:30:00Z","pipeline":[["a"]],"privileged":false,"forward_agent":true,"host":"h","session":"s"}`,
	} {
		f.Add([]byte(s))
	}
	l, err := Open(logPath(f), Options{Now: fixedClock()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = l.Close() })
	opts := proto.DecodeOptions{Now: func() time.Time { return t0 }, MaxClockSkew: 100 * 365 * 24 * time.Hour}
	f.Fuzz(func(t *testing.T, line []byte) {
		ctx := context.Background()
		req, err := proto.DecodeRequest(line, opts)
		if err != nil {
			if err := l.Refused(ctx, Refusal{ID: proto.IDOf(err), Peer: &testPeer, Reason: err.Error(), Raw: line}); err != nil {
				t.Fatalf("the decoder refused %q, and the audit log cannot record the refusal: %v", line, err)
			}
			return
		}
		if err := l.Refused(ctx, Refusal{ID: req.ID, Request: req, Peer: &testPeer, Reason: "refused after decoding", Raw: line}); err != nil {
			t.Fatalf("the decoder accepted %q, and the audit log cannot record its refusal: %v", line, err)
		}
		tr, err := l.Received(ctx, req, testPeer)
		if err != nil {
			t.Fatalf("the decoder accepted %q, and the audit log cannot record it: %v", line, err)
		}
		if tr == nil {
			t.Fatal("Received returned no trail and no error")
		}
	})
}
