package audit

import (
	"context"
	"testing"
)

// TestInvalidUTF8PeerRecordedAsReplacement: an executable path with
// invalid UTF-8 (which only /proc can supply) is recorded with U+FFFD in
// its place, and the log still verifies (docs/audit.md).
func TestInvalidUTF8PeerRecordedAsReplacement(t *testing.T) {
	ctx := context.Background()
	path := logPath(t)
	l := openLog(t, path, Options{})
	peer := testPeer
	peer.Exe = "/usr/bin/a\xffgent"
	if _, err := l.Received(ctx, testRequest("r1"), peer); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	found := false
	for e, err := range Read(ctx, path) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Record.Type != TypeRequest {
			continue
		}
		found = true
		if e.Record.Peer == nil || e.Record.Peer.Exe != "/usr/bin/a\uFFFDgent" {
			t.Errorf("%s: peer %+v, want exe /usr/bin/a\\uFFFDgent", e.Location(), e.Record.Peer)
		}
	}
	if !found {
		t.Fatal("no request record")
	}
	if _, err := Verify(ctx, path); err != nil {
		t.Errorf("Verify: %v", err)
	}
}
