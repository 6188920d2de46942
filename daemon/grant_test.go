package daemon

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

// TestGrantBindsProgramFile: a session grant covers the program file it was
// given for (every hop of the chain, device, inode and content hash) and the
// resolved cwd; and no grant is given for a program someone other than root
// can change (issue 10 M3).
func TestGrantBindsProgramFile(t *testing.T) {
	file := func(p *approval.Pending) *approval.Pending {
		p.Programs = []approval.Program{{Chain: []string{"/usr/sbin/apt", "/usr/bin/apt"}, Dev: 2049, Ino: 77, SHA256: strings.Repeat("a", 64)}}
		p.Cwd = "/srv/app"
		return p
	}
	b := newBroker(time.Hour, nil)
	_, events, cancel := b.Subscribe()
	defer cancel()
	r := askAsync(context.Background(), b, file(pending("f1")))
	m := next(t, events)
	if err := b.Decide("f1", m.Hash, approval.AllowSession, "", "console"); err != nil {
		t.Fatal(err)
	}
	<-r
	ctx, cancelAsk := context.WithTimeout(context.Background(), time.Second)
	if d, err := b.Ask(ctx, file(pending("f2"))); err != nil || d.Verdict != approval.Allow {
		t.Fatalf("the same file: %+v %v", d, err)
	}
	cancelAsk()
	drain(events)
	for name, change := range map[string]func(p *approval.Pending){
		"other inode":        func(p *approval.Pending) { p.Programs[0].Ino = 78 },
		"other device":       func(p *approval.Pending) { p.Programs[0].Dev = 2050 },
		"other content":      func(p *approval.Pending) { p.Programs[0].SHA256 = strings.Repeat("b", 64) },
		"other hop":          func(p *approval.Pending) { p.Programs[0].Chain = []string{"/usr/sbin/apt", "/opt/apt", "/usr/bin/apt"} },
		"other resolved cwd": func(p *approval.Pending) { p.Cwd = "/srv/other" },
		"now writable":       func(p *approval.Pending) { p.Programs[0].Writable = []approval.Writable{{Path: "/usr/bin", Why: "x"}} },
	} {
		p := file(pending("v-" + name))
		change(p)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		d, err := b.Ask(ctx, p)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: not asked again: %+v %v", name, d, err)
		}
	}
	drain(events)

	// A program someone other than root can change gets no grant, and the
	// request stays pending: nothing was decided.
	w := file(pending("w1"))
	w.Programs[0].Writable = []approval.Writable{{Path: "/home/agent/bin", Why: "the directory is owned by uid 1000"}}
	if why := w.Shown().GrantRefusal(); !strings.Contains(why, "stage 1") {
		t.Errorf("GrantRefusal = %q", why)
	}
	r = askAsync(context.Background(), b, w)
	m = nextPendingOf(t, events, "w1")
	if err := b.Decide("w1", m.Hash, approval.AllowSession, "", "console"); !errors.Is(err, approval.ErrNoSessionGrant) {
		t.Fatalf("allow_session for a writable program: %v", err)
	}
	if gs, _ := b.Grants(); b.Waiting() != 1 || len(gs) != 1 {
		t.Fatalf("after the refused grant: %d waiting, %d grants", b.Waiting(), len(gs))
	}
	if err := b.Decide("w1", m.Hash, approval.AllowOnce, "", "console"); err != nil {
		t.Fatal(err)
	}
	if got := <-r; got.d.Verdict != approval.Allow {
		t.Fatalf("allow once: %+v", got)
	}
}

// TestGrantListedWithTimeLeft: a grant's listing carries the time it has
// left on the clock that ends it, so that an approver need not read the
// daemon's wall clock (which a clock step moves) to say when it ends.
func TestGrantListedWithTimeLeft(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	b := newBroker(time.Hour, func() time.Time { return now })
	_, events, cancel := b.Subscribe()
	defer cancel()
	r := askAsync(context.Background(), b, pending("g1"))
	m := next(t, events)
	if err := b.Decide("g1", m.Hash, approval.AllowSession, "", "console"); err != nil {
		t.Fatal(err)
	}
	<-r
	for _, elapsed := range []time.Duration{0, 20 * time.Minute, 59*time.Minute + 59*time.Second} {
		now = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).Add(elapsed)
		gs, _ := b.Grants()
		if len(gs) != 1 {
			t.Fatalf("after %s: grants %+v", elapsed, gs)
		}
		left := time.Hour - elapsed
		if gs[0].ExpiresInMS != left.Milliseconds() || !gs[0].Expires.Equal(now.Add(left)) {
			t.Errorf("after %s: expires %s in %dms, want %s in %dms", elapsed, gs[0].Expires, gs[0].ExpiresInMS, now.Add(left), left.Milliseconds())
		}
	}
}
