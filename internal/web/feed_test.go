package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"slices"
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

// TestFeedResolvedOnlyOfDecisionsRelayed: the resolved messages kept for
// the pages' receipts are those of the requests this web approver relayed
// a decision on. An agent that asks and withdraws many requests (each
// resolved as withdrawn) cannot push the one a human decided on the phone
// out of the bounded list, which would leave its receipt saying
// "running" for a request that was denied by the other person or timed
// out.
func TestFeedResolvedOnlyOfDecisionsRelayed(t *testing.T) {
	daemonEnd, webEnd := net.Pipe()
	t.Cleanup(func() { daemonEnd.Close(); webEnd.Close() })
	go func() { _, _ = io.Copy(io.Discard, daemonEnd) }()
	f := newFeed("fake", approval.NewClient(webEnd))
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); _ = f.run(ctx) }()
	t.Cleanup(func() { cancel(); webEnd.Close(); <-ran })
	// A decision relayed on "mine": sent, its answer not waited for.
	gone, stop := context.WithCancel(context.Background())
	stop()
	if _, err := f.decide(gone, approval.Message{Type: approval.MsgDecide, ID: "mine", Hash: "h", Decision: approval.AllowOnce}); err == nil {
		t.Fatal("decide answered without the daemon's answer")
	}
	msgs := []approval.Message{{Type: approval.MsgResolved, ID: "mine", Verdict: approval.Deny, By: "bob"}}
	for i := range 2 * maxResolved {
		msgs = append(msgs, approval.Message{Type: approval.MsgResolved, ID: fmt.Sprintf("flood-%d", i), Verdict: approval.Withdrawn, By: "the agent"})
	}
	// Last, to know the ones before it were applied (net.Pipe).
	msgs = append(msgs, approval.Message{Type: approval.MsgPasskeys})
	for _, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := daemonEnd.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	st := f.state()
	if !slices.ContainsFunc(st.resolved, func(e ended) bool { return e.ID == "mine" && e.Verdict == approval.Deny }) {
		t.Fatalf("the resolved message of the decision relayed is not kept: %d kept, the first %+v", len(st.resolved), st.resolved[0].Message)
	}
	if len(st.resolved) != 1 {
		t.Errorf("kept %d resolved messages, want only the one of the decision relayed", len(st.resolved))
	}
}
