package web

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
)

// TestFeedReannouncedRequestReplaced: a request announced again with
// another hash replaces its earlier version, so that it is shown and
// decided only under the new hash, and who allowed the earlier version
// (its approved message) is forgotten.
func TestFeedReannouncedRequestReplaced(t *testing.T) {
	daemonEnd, webEnd := net.Pipe()
	t.Cleanup(func() { daemonEnd.Close(); webEnd.Close() })
	go func() { _, _ = io.Copy(io.Discard, daemonEnd) }()
	f := newFeed("fake", approval.NewClient(webEnd))
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = f.run(ctx) }()
	t.Cleanup(func() { cancel(); webEnd.Close(); <-ran })
	shown := func(reason string) approval.Message {
		s := &approval.Shown{ID: "r1", Session: "s1", Reason: reason, Pipeline: [][]string{{"true"}}, RunAs: "root",
			Programs: []approval.Program{{Chain: []string{"/usr/bin/true"}}}}
		return approval.Message{Type: approval.MsgPending, ID: "r1", Hash: s.Hash(), Request: s}
	}
	first, second := shown("the first version"), shown("the second version")
	for _, m := range []approval.Message{
		first,
		{Type: approval.MsgApproved, ID: "r1", Hash: first.Hash},
		second,
		// Last, to know the one before it was applied: net.Pipe's
		// Write returns once the reader took its bytes, and the feed
		// reads a line only after it applied the one before.
		{Type: approval.MsgPasskeys},
	} {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := daemonEnd.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	st := f.state()
	if len(st.pending) != 1 || st.pending[0].Hash != second.Hash {
		t.Fatalf("pending %+v, want only the second version (hash %s)", st.pending, second.Hash)
	}
	if a, ok := st.approved["r1"]; ok {
		t.Fatalf("the first version's approved message is still kept: %+v", a)
	}
	if m, ok := f.find("r1"); !ok || m.Hash != second.Hash {
		t.Fatalf("find: %+v %v, want the second version", m, ok)
	}
}
