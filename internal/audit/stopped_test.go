package audit

import (
	"context"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
)

// TestStoppedByRecorded: the result of a pipeline a console stopped names
// that console as stopped_by in its record and as AGENT_SUDO_STOPPED_BY in
// its journal entry (docs/audit.md); a result no console stopped has
// neither.
func TestStoppedByRecorded(t *testing.T) {
	ctx := context.Background()
	j := &fakeJournal{}
	path := logPath(t)
	l := openLog(t, path, Options{Journal: j})
	fullRequest(t, l, "r1")
	tr, err := l.Received(ctx, testRequest("r2"), testPeer)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Decided(ctx, approval.Decision{Verdict: approval.Allow, By: "apt installs"}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Started(ctx, testSpec()); err != nil {
		t.Fatal(err)
	}
	const console = "console uid=0 tty=/dev/pts/3 pid=4242"
	tr.Stopped(console)
	resp, res := testResponse("r2")
	if err := tr.Finished(ctx, resp, res); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	want := map[string]string{"r1": "", "r2": console}
	results := 0
	for e, err := range Read(ctx, path) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Record.Type != TypeResult {
			continue
		}
		results++
		if got := e.Record.Result.StoppedBy; got != want[e.Record.ID] {
			t.Errorf("%s: result of %s has stopped_by %q, want %q", e.Location(), e.Record.ID, got, want[e.Record.ID])
		}
	}
	if results != 2 {
		t.Errorf("%d result records, want 2", results)
	}
	journaled := 0
	for _, e := range j.sent() {
		if e.fields["AGENT_SUDO_AUDIT_TYPE"] != "result" {
			continue
		}
		journaled++
		id := e.fields["AGENT_SUDO_ID"]
		if got, ok := e.fields["AGENT_SUDO_STOPPED_BY"]; got != want[id] || ok != (want[id] != "") {
			t.Errorf("journal entry of %s's result: AGENT_SUDO_STOPPED_BY %q (set %v), want %q", id, got, ok, want[id])
		}
	}
	if journaled != 2 {
		t.Errorf("%d journal entries of results, want 2", journaled)
	}
}
