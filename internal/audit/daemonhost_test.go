package audit

import (
	"bytes"
	"context"
	"testing"
)

// TestDaemonHostRecorded checks that every record of a log opened with
// Options.DaemonHost carries it as daemon_host (whatever the caller put in
// the record), next to the agent's host; that a log without it writes no
// daemon_host; that both read back and verify; and that the joined
// summary carries it.
func TestDaemonHostRecorded(t *testing.T) {
	ctx := context.Background()
	withHost := logPath(t)
	l := openLog(t, withHost, Options{DaemonHost: "box-1"})
	fullRequest(t, l, "r1")
	rec := &Record{Type: TypeDecision, ID: "r2", Session: "s", Host: "agent-says", DaemonHost: "forged",
		Decision: &DecisionSection{Verdict: "denied", By: "test"}}
	if _, err := l.Append(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ls := lines(t, withHost)
	if len(ls) != 5 {
		t.Fatalf("%d lines, want 5", len(ls))
	}
	for i, line := range ls {
		if !bytes.Contains(line, []byte(`,"host":"`)) || !bytes.Contains(line, []byte(`,"daemon_host":"box-1",`)) {
			t.Errorf("line %d lacks the agent's host or daemon_host box-1:\n%s", i+1, line)
		}
	}
	j := NewJoiner()
	for e, err := range Read(ctx, withHost) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Record.DaemonHost != "box-1" {
			t.Errorf("%s: DaemonHost %q, want box-1", e.Location(), e.Record.DaemonHost)
		}
		if s, _, _ := j.Add(e); s.DaemonHost != "box-1" {
			t.Errorf("%s: the summary's DaemonHost is %q, want box-1", e.Location(), s.DaemonHost)
		}
	}
	if _, err := Verify(ctx, withHost); err != nil {
		t.Errorf("Verify: %v", err)
	}

	without := logPath(t)
	l = openLog(t, without, Options{})
	fullRequest(t, l, "r1")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for i, line := range lines(t, without) {
		if bytes.Contains(line, []byte("daemon_host")) {
			t.Errorf("line %d of a log without DaemonHost has daemon_host:\n%s", i+1, line)
		}
	}
	for e, err := range Read(ctx, without) {
		if err != nil || e.Record.DaemonHost != "" {
			t.Errorf("%s: %v, DaemonHost %q; want an old-style record read without error", e.Location(), err, e.Record.DaemonHost)
		}
	}
}
