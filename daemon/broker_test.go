package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/proto"
)

func pending(id string, argv ...string) *approval.Pending {
	if len(argv) == 0 {
		argv = []string{"apt", "install", "nginx"}
	}
	return &approval.Pending{
		Request: &proto.Request{ID: id, Session: "s1", Pipeline: [][]string{argv}, Privileged: true,
			Env: map[string]string{"LANG": "C"}},
		Peer:     approval.PeerInfo{UID: 1000, User: "agent", PID: 42, Exe: "/usr/bin/agent"},
		Programs: []approval.Program{{Chain: []string{"/usr/bin/" + argv[0]}, SHA256: "00"}},
		RunAs:    "root",
	}
}

// ask runs Ask in the background and returns a channel with its askOutcome.
type askOutcome struct {
	d   approval.Decision
	err error
}

func askAsync(ctx context.Context, b *broker, p *approval.Pending) <-chan askOutcome {
	ch := make(chan askOutcome, 1)
	go func() {
		d, err := b.Ask(ctx, p)
		ch <- askOutcome{d, err}
	}()
	return ch
}

// next reads the next event or fails after a second.
func next(t *testing.T, events <-chan event) approval.Message {
	t.Helper()
	select {
	case m, ok := <-events:
		if !ok {
			t.Fatal("event stream closed")
		}
		return m.Message
	case <-time.After(30 * time.Second):
		t.Fatal("no event within 30s")
	}
	return approval.Message{}
}

// nextPending returns the next pending event for request id, skipping any
// other event: events of earlier requests may still be on their way when a
// test moves on (drain only takes what has arrived).
func nextPendingOf(t *testing.T, events <-chan event, id string) approval.Message {
	t.Helper()
	for {
		if m := next(t, events); m.Type == approval.MsgPending && m.ID == id {
			return m
		}
	}
}

func TestBrokerOrderAndFirstDecisionWins(t *testing.T) {
	b := newBroker(time.Hour, nil)
	_, events, cancel := b.Subscribe()
	defer cancel()
	ctx := context.Background()

	r1 := askAsync(ctx, b, pending("r1"))
	m1 := next(t, events)
	r2 := askAsync(ctx, b, pending("r2", "systemctl", "restart", "nginx"))
	m2 := next(t, events)
	if m1.Type != approval.MsgPending || m1.ID != "r1" || m2.ID != "r2" {
		t.Fatalf("events %+v then %+v, want pending r1 then r2", m1, m2)
	}
	// A console that connects late sees both, in arrival order.
	waiting, _, cancel2 := b.Subscribe()
	defer cancel2()
	if len(waiting) != 2 || waiting[0].ID != "r1" || waiting[1].ID != "r2" {
		t.Fatalf("late subscriber saw %+v", waiting)
	}

	if err := b.Decide("r2", m2.Hash, approval.DenyOnce, "not now", "console uid=0 tty=/dev/pts/1"); err != nil {
		t.Fatal(err)
	}
	if err := b.Decide("r2", m2.Hash, approval.AllowOnce, "", "console uid=0 tty=/dev/pts/2"); !errors.Is(err, approval.ErrNotPending) {
		t.Fatalf("second decision: %v, want ErrNotPending", err)
	}
	got := <-r2
	if got.err != nil || got.d.Verdict != approval.Deny || got.d.By != "console uid=0 tty=/dev/pts/1" ||
		got.d.Message != "denied by console uid=0 tty=/dev/pts/1: not now" {
		t.Fatalf("r2 askOutcome %+v", got)
	}
	if res := next(t, events); res.Type != approval.MsgResolved || res.ID != "r2" || res.Verdict != approval.Deny {
		t.Fatalf("resolved event %+v", res)
	}
	if err := b.Decide("r1", m1.Hash, approval.AllowOnce, "", "console uid=0 tty=/dev/pts/2"); err != nil {
		t.Fatal(err)
	}
	if got := <-r1; got.err != nil || got.d.Verdict != approval.Allow {
		t.Fatalf("r1 askOutcome %+v", got)
	}
	if b.Waiting() != 0 {
		t.Errorf("Waiting() = %d after both decided", b.Waiting())
	}
}

func TestBrokerRejectsBadDecisions(t *testing.T) {
	b := newBroker(time.Hour, nil)
	_, events, cancel := b.Subscribe()
	defer cancel()
	r := askAsync(context.Background(), b, pending("r1"))
	m := next(t, events)
	tests := []struct {
		name       string
		id, hash   string
		choice     approval.Choice
		wantErr    error
		wantErrMsg string
	}{
		{"unknown id", "nope", m.Hash, approval.AllowOnce, approval.ErrNotPending, ""},
		{"hash of something else", "r1", pending("r1", "rm", "-rf", "/").Shown().Hash(), approval.AllowOnce, approval.ErrHashMismatch, ""},
		{"empty hash", "r1", "", approval.AllowOnce, approval.ErrHashMismatch, ""},
		{"unknown choice", "r1", m.Hash, "yes", approval.ErrBadChoice, `unknown decision "yes": want "allow_once", "allow_session" or "deny"`},
	}
	for _, tt := range tests {
		err := b.Decide(tt.id, tt.hash, tt.choice, "", "console")
		if !errors.Is(err, tt.wantErr) || (tt.wantErrMsg != "" && err.Error() != tt.wantErrMsg) {
			t.Errorf("%s: Decide = %v, want %v", tt.name, err, tt.wantErr)
		}
	}
	if b.Waiting() != 1 {
		t.Fatal("a rejected decision removed the request")
	}
	_ = b.Decide("r1", m.Hash, approval.DenyOnce, "", "console")
	<-r
}

func TestBrokerTimeoutAndWithdrawal(t *testing.T) {
	b := newBroker(time.Hour, nil)
	_, events, cancel := b.Subscribe()
	defer cancel()

	tctx, tcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer tcancel()
	rt := askAsync(tctx, b, pending("t1"))
	mt := nextPendingOf(t, events, "t1")

	wctx, wcancel := context.WithCancelCause(context.Background())
	rw := askAsync(wctx, b, pending("w1"))
	// t1 may time out before w1 is even pending (a loaded machine): read
	// the events in whatever order they come.
	hashes := map[string]string{"t1": mt.Hash}
	resolved := map[string]string{}
	for hashes["w1"] == "" {
		switch m := next(t, events); m.Type {
		case approval.MsgPending:
			hashes[m.ID] = m.Hash
		case approval.MsgResolved:
			resolved[m.ID] = string(m.Verdict) + " by " + m.By
		}
	}
	wcancel(approval.ErrWithdrawn)

	got := <-rw
	if !errors.Is(got.err, context.Canceled) {
		t.Fatalf("withdrawn Ask returned %+v", got)
	}
	got = <-rt
	if !errors.Is(got.err, context.DeadlineExceeded) {
		t.Fatalf("timed-out Ask returned %+v", got)
	}
	for len(resolved) < 2 {
		if m := next(t, events); m.Type == approval.MsgResolved {
			resolved[m.ID] = string(m.Verdict) + " by " + m.By
		}
	}
	if resolved["t1"] != "timeout by approval_timeout" || resolved["w1"] != "withdrawn by client" {
		t.Fatalf("resolved %v, want t1 timeout by approval_timeout and w1 withdrawn by client", resolved)
	}
	mw := approval.Message{Hash: hashes["w1"]}
	// Decisions after the end do nothing.
	if err := b.Decide("t1", mt.Hash, approval.AllowOnce, "", "late"); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("decision after timeout: %v", err)
	}
	if err := b.Decide("w1", mw.Hash, approval.AllowOnce, "", "late"); !errors.Is(err, approval.ErrNotPending) {
		t.Errorf("decision after withdrawal: %v", err)
	}
}

func TestBrokerSessionGrants(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	b := newBroker(time.Hour, clock)
	_, events, cancel := b.Subscribe()
	defer cancel()

	r := askAsync(context.Background(), b, pending("g1"))
	m := next(t, events)
	if err := b.Decide("g1", m.Hash, approval.AllowSession, "", "console uid=0 tty=/dev/pts/1"); err != nil {
		t.Fatal(err)
	}
	if got := <-r; got.d.Verdict != approval.Allow || got.d.By != "console uid=0 tty=/dev/pts/1 (new session grant g1)" {
		t.Fatalf("askOutcome %+v", got)
	}
	if gs, _ := b.Grants(); len(gs) != 1 || gs[0].ID != "g1" || gs[0].Session != "s1" || gs[0].UID != 1000 || gs[0].EnvKeys[0] != "LANG" {
		t.Fatalf("grants %+v", gs)
	}

	// The exact same request from the same session and uid is allowed
	// without asking.
	ctx, cancelAsk := context.WithTimeout(context.Background(), time.Second)
	d, err := b.Ask(ctx, pending("g2"))
	cancelAsk()
	if err != nil || d.Verdict != approval.Allow || d.By != "session grant g1 (console uid=0 tty=/dev/pts/1)" {
		t.Fatalf("same request: %+v %v", d, err)
	}

	variants := []struct {
		name   string
		change func(p *approval.Pending)
	}{
		{"different argument", func(p *approval.Pending) { p.Request.Pipeline = [][]string{{"apt", "install", "nginx-full"}} }},
		{"extra argument", func(p *approval.Pending) { p.Request.Pipeline = [][]string{{"apt", "install", "nginx", "-y"}} }},
		{"extra stage", func(p *approval.Pending) { p.Request.Pipeline = append(p.Request.Pipeline, []string{"cat"}) }},
		{"different env value", func(p *approval.Pending) { p.Request.Env = map[string]string{"LANG": "C.UTF-8"} }},
		{"extra env", func(p *approval.Pending) { p.Request.Env = map[string]string{"LANG": "C", "TZ": "UTC"} }},
		{"unprivileged", func(p *approval.Pending) { p.Request.Privileged = false }},
		{"other session", func(p *approval.Pending) { p.Request.Session = "s2" }},
		{"other uid", func(p *approval.Pending) { p.Peer.UID = 1001 }},
		{"other cwd", func(p *approval.Pending) { p.Request.Cwd = "/tmp" }},
		{"other program path", func(p *approval.Pending) {
			p.Programs = []approval.Program{{Chain: []string{"/usr/local/bin/apt"}, SHA256: "00"}}
		}},
		{"other target user", func(p *approval.Pending) { p.RunAs = "alice" }},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			p := pending("v-" + v.name)
			v.change(p)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			defer cancel()
			d, err := b.Ask(ctx, p)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%s was not asked again: %+v %v", v.name, d, err)
			}
		})
	}
	drain(events)

	// Expiry: an hour later the grant is gone.
	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	ctx, cancelAsk = context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancelAsk()
	if _, err := b.Ask(ctx, pending("g3")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("expired grant still allowed: %v", err)
	}
	if gs, _ := b.Grants(); len(gs) != 0 {
		t.Fatalf("expired grant listed: %+v", gs)
	}
}

func drain(events <-chan event) {
	for {
		select {
		case <-events:
		default:
			return
		}
	}
}

func TestBrokerRevoke(t *testing.T) {
	b := newBroker(time.Hour, nil)
	_, events, cancel := b.Subscribe()
	defer cancel()
	r := askAsync(context.Background(), b, pending("g1"))
	m := next(t, events)
	_ = b.Decide("g1", m.Hash, approval.AllowSession, "", "console")
	<-r
	if err := b.Revoke("g9"); !errors.Is(err, approval.ErrNoGrant) {
		t.Errorf("Revoke(g9) = %v", err)
	}
	if err := b.Revoke("g1"); err != nil {
		t.Fatal(err)
	}
	ctx, cancelAsk := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancelAsk()
	if _, err := b.Ask(ctx, pending("g2")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("revoked grant still allowed: %v", err)
	}
}

func TestBrokerDropsSlowSubscriber(t *testing.T) {
	b := newBroker(time.Hour, nil)
	_, events, cancel := b.Subscribe()
	defer cancel()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	// Requests that keep waiting cannot be coalesced away: a subscriber
	// that reads none of them is dropped once subscriberLimit are queued
	// (the feeder holds one more in hand).
	for i := range subscriberLimit + 2 {
		askAsync(ctx, b, pending(fmt.Sprintf("p%d", i)))
	}
	for b.Waiting() < subscriberLimit+2 {
		time.Sleep(time.Millisecond)
	}
	deadline := time.After(10 * time.Second)
	for n := 0; ; n++ {
		select {
		case _, ok := <-events:
			if !ok {
				if n > subscriberLimit+1 {
					t.Fatalf("closed after %d events", n)
				}
				return
			}
		case <-deadline:
			t.Fatal("a subscriber that never reads was not dropped")
		}
	}
}

// hugeArg is an argument of n bytes.
func hugeArg(n int) string { return strings.Repeat("x", n) }

// TestBrokerSummarisesLargeRequests: a request larger than
// MaxInlineRequest is announced as a bounded summary; its full text comes
// from Detail, only for the right hash, and hashes to the announced hash,
// which the decision still binds.
func TestBrokerSummarisesLargeRequests(t *testing.T) {
	b := newBroker(time.Hour, nil)
	_, events, cancel := b.Subscribe()
	defer cancel()
	for _, size := range []int{approval.MaxInlineRequest + 1, 990 << 10, proto.MaxRequestBytes} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			p := pending("big-"+strconv.Itoa(size), "echo", hugeArg(size), "<&>")
			r := askAsync(context.Background(), b, p)
			m := next(t, events)
			line, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if len(line) > approval.MaxInlineRequest {
				t.Errorf("pending line is %d bytes; want at most %d", len(line), approval.MaxInlineRequest)
			}
			full := p.Shown()
			if m.Summary == nil || m.Summary.Stages != 1 || m.Summary.Args != 3 || m.Summary.EnvVars != 1 ||
				m.Summary.Bytes != fullSize(full) || m.Request == nil || m.Request.Pipeline != nil || m.Request.Env != nil {
				t.Fatalf("pending %+v summary %+v; want a summary without pipeline and env", m.Request, m.Summary)
			}
			if m.Hash != full.Hash() {
				t.Fatalf("announced hash %s, want the full request's %s", m.Hash, full.Hash())
			}
			wrong := "0" + m.Hash[1:]
			if wrong == m.Hash {
				wrong = "1" + m.Hash[1:]
			}
			if _, err := b.Detail(m.ID, wrong); !errors.Is(err, approval.ErrHashMismatch) {
				t.Errorf("Detail with a wrong hash: %v, want ErrHashMismatch", err)
			}
			s, err := b.Detail(m.ID, m.Hash)
			if err != nil || s.Hash() != m.Hash || s.Pipeline[0][1] != hugeArg(size) {
				t.Fatalf("Detail: %v; want the full request", err)
			}
			if err := b.Decide(m.ID, m.Hash, approval.AllowOnce, "", "test"); err != nil {
				t.Fatal(err)
			}
			if got := <-r; got.err != nil || got.d.Verdict != approval.Allow {
				t.Fatalf("askOutcome %+v", got)
			}
			if _, err := b.Detail(m.ID, m.Hash); !errors.Is(err, approval.ErrNotPending) {
				t.Errorf("Detail after the decision: %v, want ErrNotPending", err)
			}
			next(t, events) // resolved
		})
	}
	// A small request is still announced in full.
	r := askAsync(context.Background(), b, pending("small"))
	if m := next(t, events); m.Summary != nil || m.Request == nil || len(m.Request.Pipeline) != 1 {
		t.Errorf("small request announced as %+v", m)
	}
	_ = b.Decide("small", pending("small").Shown().Hash(), approval.DenyOnce, "", "test")
	<-r
}

// TestBrokerCoalescesWithdrawn: requests withdrawn before a slow console
// read their pending message cost it nothing: the console is not dropped,
// and it never hears of them.
func TestBrokerCoalescesWithdrawn(t *testing.T) {
	b := newBroker(time.Hour, nil)
	_, events, cancel := b.Subscribe()
	defer cancel()
	for i := range subscriberLimit + 10 {
		ctx, stop := context.WithCancelCause(context.Background())
		r := askAsync(ctx, b, pending(fmt.Sprintf("w%d", i), "echo", hugeArg(1<<10)))
		for b.Waiting() == 0 {
			runtime.Gosched()
		}
		stop(approval.ErrWithdrawn)
		<-r
	}
	// One request that stays: the console, reading at last, gets at most
	// the one pending message the feeder held in hand (and its resolved),
	// then the live request.
	r := askAsync(context.Background(), b, pending("live"))
	var got []approval.Message
	for {
		m := next(t, events)
		got = append(got, m)
		if m.ID == "live" {
			break
		}
	}
	if len(got) > 3 {
		t.Errorf("console got %d messages for %d withdrawn requests; want them coalesced away", len(got)-1, subscriberLimit+10)
	}
	_ = b.Decide("live", got[len(got)-1].Hash, approval.DenyOnce, "", "test")
	<-r
}

// TestBrokerDuplicateIDRefused: a second request with the id of one that
// waits is refused, so the two can never be confused and decisions on the
// first still work (issue 10 L6).
func TestBrokerDuplicateIDRefused(t *testing.T) {
	b := newBroker(time.Hour, nil)
	_, events, cancel := b.Subscribe()
	defer cancel()
	r := askAsync(context.Background(), b, pending("same"))
	m := next(t, events)
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if _, err := b.Ask(ctx, pending("same", "rm", "-rf", "/")); !errors.Is(err, approval.ErrDuplicateID) {
		t.Fatalf("second Ask with the same id: %v, want ErrDuplicateID", err)
	}
	if b.Waiting() != 1 {
		t.Errorf("Waiting() = %d, want 1", b.Waiting())
	}
	if err := b.Decide("same", m.Hash, approval.AllowOnce, "", "test"); err != nil {
		t.Fatalf("decision on the first request: %v", err)
	}
	if got := <-r; got.err != nil || got.d.Verdict != approval.Allow {
		t.Fatalf("askOutcome %+v", got)
	}
}

// TestBrokerGrantListingBounded: a grant whose pipeline is long is listed
// with its size and SHA-256 instead, and a listing holds at most
// MaxGrantsListed grants; matching still uses the full request.
func TestBrokerGrantListingBounded(t *testing.T) {
	b := newBroker(time.Hour, nil)
	_, events, cancel := b.Subscribe()
	defer cancel()
	argv := []string{"echo", hugeArg(990 << 10)}
	r := askAsync(context.Background(), b, pending("long", argv...))
	m := next(t, events)
	if err := b.Decide("long", m.Hash, approval.AllowSession, "", "test"); err != nil {
		t.Fatal(err)
	}
	<-r
	var gm approval.Message
	for gm.Type != approval.MsgGrants {
		gm = next(t, events)
	}
	line, _ := json.Marshal(gm)
	if len(line) > approval.MaxGrantPipeline+4096 {
		t.Errorf("grants line is %d bytes", len(line))
	}
	pj, _ := json.Marshal([][]string{argv})
	sum := sha256.Sum256(pj)
	if len(gm.Grants) != 1 || gm.Grants[0].Pipeline != nil || gm.Grants[0].Elided == nil ||
		gm.Grants[0].Elided.Bytes != len(pj) || gm.Grants[0].Elided.SHA256 != hex.EncodeToString(sum[:]) || gm.Grants[0].Elided.Args != 2 {
		t.Fatalf("listed grant %+v", gm.Grants)
	}
	// The grant still covers the exact same request.
	ctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	if d, err := b.Ask(ctx, pending("long-again", argv...)); err != nil || d.Verdict != approval.Allow {
		t.Fatalf("same request under the grant: %+v, %v", d, err)
	}

	for i := range approval.MaxGrantsListed + 2 {
		id := fmt.Sprintf("many-%d", i)
		r := askAsync(context.Background(), b, pending(id, "echo", id))
		m := next(t, events)
		for m.Type != approval.MsgPending {
			m = next(t, events)
		}
		if err := b.Decide(id, m.Hash, approval.AllowSession, "", "test"); err != nil {
			t.Fatal(err)
		}
		<-r
	}
	gs, omitted := b.Grants()
	if len(gs) != approval.MaxGrantsListed || omitted != 3 {
		t.Errorf("Grants() listed %d, omitted %d; want %d and 3", len(gs), omitted, approval.MaxGrantsListed)
	}
}

func fullSize(s *approval.Shown) int {
	n, _, err := s.Canonical()
	if err != nil {
		panic(err)
	}
	return n
}

// TestBrokerShutdownEndsQuestions: a question ended by the daemon's
// shutdown is resolved for consoles as an error by "daemon shutting down",
// the decision Unanswered gives the daemon to record.
func TestBrokerShutdownEndsQuestions(t *testing.T) {
	b := newBroker(time.Hour, nil)
	_, events, cancel := b.Subscribe()
	defer cancel()
	ctx, shutdown := context.WithCancel(context.Background())
	r := askAsync(ctx, b, pending("s1"))
	next(t, events)
	shutdown()
	if got := <-r; !errors.Is(got.err, context.Canceled) {
		t.Fatalf("Ask returned %+v", got)
	}
	m := next(t, events)
	if m.Type != approval.MsgResolved || m.Verdict != approval.Failed || m.By != approval.ByShutdown {
		t.Errorf("resolved %+v, want %s by %q", m, approval.Failed, approval.ByShutdown)
	}
	if d := approval.Unanswered(ctx); d.Verdict != m.Verdict || d.By != m.By {
		t.Errorf("Unanswered = %+v, but consoles were told %s by %q", d, m.Verdict, m.By)
	}
}

// TestBrokerCountsApprovers: a waiting request is told the approvers
// connected when it starts waiting and again each time they change:
// consoles, and web approvers (a subscription marked by signed_only).
func TestBrokerCountsApprovers(t *testing.T) {
	b := newBroker(time.Minute, nil)
	counts := make(chan approval.Approvers, 64)
	p := pending("r1")
	p.Waiting = func(a approval.Approvers) { counts <- a }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := askAsync(ctx, b, p)
	waitFor := func(want approval.Approvers) {
		t.Helper()
		for got := range counts {
			if got == want {
				return
			}
		}
	}
	waitFor(approval.Approvers{})
	_, _, cancelConsole, _ := b.subscribe()
	waitFor(approval.Approvers{Consoles: 1})
	_, _, cancelWeb, web := b.subscribe()
	b.markWeb(web)
	waitFor(approval.Approvers{Consoles: 1, Web: 1})
	cancelConsole()
	waitFor(approval.Approvers{Web: 1})
	cancelWeb()
	waitFor(approval.Approvers{})
	if got := b.Approvers(); got != (approval.Approvers{}) {
		t.Errorf("Approvers() = %+v after both left, want none", got)
	}
	cancel()
	<-done
}

// TestBrokerNonInteractive: a non-interactive request is refused at once
// with ErrNoApprover, and never announced, when no approver is connected;
// with one connected it waits, announced to it, as any other.
func TestBrokerNonInteractive(t *testing.T) {
	b := newBroker(time.Minute, nil)
	p := pending("r1")
	p.NonInteractive = true
	if _, err := b.Ask(context.Background(), p); !errors.Is(err, approval.ErrNoApprover) {
		t.Fatalf("Ask with no approver = %v, want ErrNoApprover", err)
	}
	if n := b.Waiting(); n != 0 {
		t.Fatalf("%d requests wait after the refusal, want none", n)
	}
	_, events, unsubscribe, web := b.subscribe()
	defer unsubscribe()
	b.markWeb(web)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := askAsync(ctx, b, pending("r2"))
	p2 := pending("r3")
	p2.NonInteractive = true
	done2 := askAsync(ctx, b, p2)
	seen := map[string]bool{}
	for len(seen) < 2 {
		m := <-events
		if m.Type == approval.MsgPending {
			seen[m.ID] = true
		}
	}
	if !seen["r3"] {
		t.Fatalf("the non-interactive request was not announced to the web approver: %v", seen)
	}
	cancel()
	for _, ch := range []<-chan askOutcome{done, done2} {
		if o := <-ch; !errors.Is(o.err, context.Canceled) {
			t.Errorf("Ask ended with %v, want the context's end", o.err)
		}
	}
}

// TestBrokerFinishedOnlyToWebApprovers: how an allowed request ended
// (finished: status and exit codes) reaches the web approvers, whose
// receipts say it, and no console, which never asked for the message.
func TestBrokerFinishedOnlyToWebApprovers(t *testing.T) {
	b := newBroker(time.Minute, nil)
	_, console, cancelConsole, _ := b.subscribe()
	defer cancelConsole()
	_, web, cancelWeb, w := b.subscribe()
	defer cancelWeb()
	b.markWeb(w)
	b.Finished("r1", "ok", []int{0, 3})
	// A marker every subscriber gets, after it.
	b.mu.Lock()
	b.broadcast(approval.Message{Type: approval.MsgGrants})
	b.mu.Unlock()
	if m := <-web; m.Type != approval.MsgFinished || m.ID != "r1" || m.Status != "ok" || !slices.Equal(m.ExitCodes, []int{0, 3}) {
		t.Fatalf("the web approver got %+v first, want r1's finished with its exit codes", m.Message)
	}
	if m := <-web; m.Type != approval.MsgGrants {
		t.Fatalf("the web approver got %+v, want the marker", m.Message)
	}
	if m := <-console; m.Type != approval.MsgGrants {
		t.Fatalf("the console got %+v, want only the marker", m.Message)
	}
}
