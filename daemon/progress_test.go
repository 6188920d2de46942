package daemon

import (
	"bufio"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestProgressLines: a request that asks for progress ("progress": true) is
// told, before its response, that it waits for a human and how many
// consoles are connected (and until when), then that its command runs; one
// a rule allows is told only that it runs; one that does not ask gets the
// response alone, as every client before the extension expects.
func TestProgressLines(t *testing.T) {
	t.Parallel()
	broker := newBroker(time.Hour, nil)
	ts := startServer(t, serverSetup{toml: "approval_timeout = \"1m\"\n" + allowTrue, opts: Options{Approver: broker}})

	t.Run("waits, then runs", func(t *testing.T) {
		c := ts.dial(request(map[string]any{"id": "p1", "pipeline": [][]string{{"echo", "p1"}}, "progress": true}))
		br := bufio.NewReaderSize(c, proto.MaxProgressBytes)
		p, resp, err := proto.ReadProgressOrResponse(br)
		if err != nil || p == nil {
			t.Fatalf("first line: %+v, %+v, %v; want a progress line", p, resp, err)
		}
		if p.Progress != proto.ProgressWaiting || p.ID != "p1" || p.Consoles != 0 ||
			p.Deadline.Before(time.Now().Add(50*time.Second)) || p.Deadline.After(time.Now().Add(time.Minute)) {
			t.Errorf("first progress %+v, want waiting for p1 with 0 consoles and a deadline a minute away", p)
		}
		// A console connects and allows it.
		waiting, _, cancel := broker.Subscribe()
		defer cancel()
		if len(waiting) != 1 || waiting[0].ID != "p1" {
			t.Fatalf("waiting %+v, want p1", waiting)
		}
		if err := broker.Decide("p1", waiting[0].Hash, approval.AllowOnce, "", "test console"); err != nil {
			t.Fatal(err)
		}
		// The console's arrival may be said (a waiting line counting it)
		// before the decision is taken, or the decision may win.
		p, resp, err = proto.ReadProgressOrResponse(br)
		if err == nil && p != nil && p.Progress == proto.ProgressWaiting {
			if p.Consoles != 1 || p.WebApprovers != 0 {
				t.Errorf("waiting line after a console connected: %+v, want 1 console", p)
			}
			p, resp, err = proto.ReadProgressOrResponse(br)
		}
		if err != nil || p == nil || p.Progress != proto.ProgressRunning || p.ID != "p1" {
			t.Fatalf("second line: %+v, %+v, %v; want running for p1", p, resp, err)
		}
		p, resp, err = proto.ReadProgressOrResponse(br)
		if err != nil || resp == nil || resp.Status != proto.StatusOK || resp.ID != "p1" {
			t.Fatalf("third line: %+v, %+v, %v; want the response", p, resp, err)
		}
	})

	t.Run("a console counts", func(t *testing.T) {
		_, _, cancel := broker.Subscribe()
		defer cancel()
		c := ts.dial(request(map[string]any{"id": "p2", "pipeline": [][]string{{"echo", "p2"}}, "progress": true}))
		p, _, err := proto.ReadProgressOrResponse(bufio.NewReaderSize(c, proto.MaxProgressBytes))
		if err != nil || p == nil || p.Progress != proto.ProgressWaiting || p.Consoles != 1 {
			t.Fatalf("first line: %+v, %v; want waiting with 1 console", p, err)
		}
	})

	t.Run("a rule allows it", func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		c := client.New(ts.socket)
		c.Progress = func(p proto.Progress) {
			mu.Lock()
			got = append(got, p.Progress)
			mu.Unlock()
		}
		resp, raw, err := c.RunRaw(context.Background(), &proto.Request{ID: "p3", Pipeline: [][]string{{"true"}}, Privileged: true})
		if err != nil || resp.Status != proto.StatusOK {
			t.Fatalf("run: %+v, %v", resp, err)
		}
		if strings.Join(got, ",") != proto.ProgressRunning {
			t.Errorf("progress %v, want only running", got)
		}
		if !strings.HasPrefix(string(raw), `{"id":"p3","status":"ok"`) || strings.Count(string(raw), "\n") != 1 {
			t.Errorf("RunRaw's line %q, want the response line alone", raw)
		}
	})

	t.Run("not asked for", func(t *testing.T) {
		resp := ts.send(request(map[string]any{"id": "p4"}))
		if resp.Status != proto.StatusOK || resp.ID != "p4" {
			t.Errorf("answer %+v, want the response first", resp)
		}
	})
}
