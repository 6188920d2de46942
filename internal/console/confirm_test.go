package console

import (
	"reflect"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
)

// TestSessionGrantNeedsConfirmation: s (or Enter on "Allow for this
// session") creates no grant by itself: it asks, with a fresh guard, and
// only y confirms; s again, or any other key, goes back to the prompt with
// Deny preselected. Allow once stays one key.
func TestSessionGrantNeedsConfirmation(t *testing.T) {
	for _, first := range [][]string{{"s"}, {"up", "enter"}} {
		h := newHarness(t, "")
		s := shown("r1")
		h.pending(s)
		h.pastGuard()
		for _, k := range first {
			h.press(k)
		}
		if got := h.takeSent(); len(got) != 0 {
			t.Fatalf("%v sent %+v before any confirmation", first, got)
		}
		h.wantView("Allow for this session? It runs now, and the same request from session build-42 (uid 1000)",
			"y create the grant", "(keys enabled in 0.5s)")
		// A key typed at once is dropped by the guard.
		h.press("y")
		if got := h.takeSent(); len(got) != 0 {
			t.Fatalf("y within the guard sent %+v", got)
		}
		// The same key again goes back, deciding nothing.
		h.pastGuard()
		h.press("s")
		if got := h.takeSent(); len(got) != 0 || h.m.mode() != modeDecide {
			t.Fatalf("s twice: sent %+v, mode %v", got, h.m.mode())
		}
		h.wantView("> Deny (d)")
		h.pastGuard()
		for _, k := range first {
			h.press(k)
		}
		h.pastGuard()
		h.press("y")
		if got, want := h.takeSent(), []approval.Message{decideMsg(s, approval.AllowSession, "")}; !reflect.DeepEqual(got, want) {
			t.Fatalf("%v then y sent %+v, want %+v", first, got, want)
		}
	}

	h := newHarness(t, "")
	s := shown("r1")
	h.pending(s)
	h.pastGuard()
	h.press("a")
	if got, want := h.takeSent(), []approval.Message{decideMsg(s, approval.AllowOnce, "")}; !reflect.DeepEqual(got, want) {
		t.Fatalf("a sent %+v, want %+v", got, want)
	}
}

// TestConfirmationLeavesWithItsRequest: when the request changes while its
// grant waits for a confirmation, the question goes with it; y then
// decides nothing.
func TestConfirmationLeavesWithItsRequest(t *testing.T) {
	h := newHarness(t, "")
	h.pending(shown("r1"))
	h.pending(shown("r2"))
	h.pastGuard()
	h.press("s")
	h.pastGuard()
	h.resolved("r1", approval.Deny, "console uid=0 tty=/dev/pts/3 pid=7")
	if h.m.mode() != modeDecide || h.m.current().id != "r2" {
		t.Fatalf("mode %v on %s after r1 was resolved", h.m.mode(), h.m.current().id)
	}
	h.press("y")
	if got := h.takeSent(); len(got) != 0 {
		t.Fatalf("y after the request changed sent %+v", got)
	}
}

// TestDaemonConsoleConfirmsStopping: on agent-sudod's own terminal, q and
// Ctrl-C stop the daemon, and say so; with requests waiting they ask
// first (y stops, any other key goes back; Ctrl-C twice stops). With
// nothing waiting, q stops at once. An ordinary console quits at once.
func TestDaemonConsoleConfirmsStopping(t *testing.T) {
	h := newHarness(t, "")
	h.m.cfg.stopsDaemon = true
	h.wantView("q stop agent-sudod")
	h.pending(shown("r1"))
	h.pending(shown("r2"))
	h.pastGuard()
	h.wantView("q stop agent-sudod")
	h.notView("decides nothing")
	h.press("q")
	if h.m.quitting {
		t.Fatal("q with requests waiting stopped the daemon at once")
	}
	h.wantView("Stop agent-sudod? 2 requests waiting will not run; their agents are told the daemon was stopped at its terminal.",
		"y stop agent-sudod")
	h.pastGuard()
	h.press("q")
	if h.m.quitting || h.m.mode() != modeDecide {
		t.Fatalf("q twice: quitting %v, mode %v", h.m.quitting, h.m.mode())
	}
	h.pastGuard()
	h.key("ctrl+c")
	if h.m.quitting || h.m.mode() != modeConfirm {
		t.Fatalf("Ctrl-C with requests waiting: quitting %v, mode %v", h.m.quitting, h.m.mode())
	}
	h.key("ctrl+c")
	if !h.m.quitting {
		t.Fatal("Ctrl-C twice did not stop the daemon")
	}

	h = newHarness(t, "")
	h.m.cfg.stopsDaemon = true
	h.pending(shown("r1"))
	h.pastGuard()
	h.press("q")
	h.pastGuard()
	h.press("y")
	if !h.m.quitting {
		t.Fatal("q then y did not stop the daemon")
	}
	if got := h.takeSent(); len(got) != 0 {
		t.Fatalf("stopping sent %+v", got)
	}

	h = newHarness(t, "")
	h.m.cfg.stopsDaemon = true
	h.press("q")
	if !h.m.quitting {
		t.Fatal("q with nothing waiting did not stop the daemon")
	}

	h = newHarness(t, "")
	h.wantView("q quit (decides nothing)")
	h.pending(shown("r1"))
	h.pastGuard()
	h.wantView("q quit")
	h.notView("stop agent-sudod")
	h.press("q")
	if !h.m.quitting {
		t.Fatal("q at an ordinary console did not quit")
	}
}

// TestNextRequestAfterOwnDecisionIsGuarded: the request revealed by this
// console's own decision (allow once, a confirmed grant, a denial with a
// note) starts with a fresh guard: keys typed for the previous one, right
// after the decision, do not act on it.
func TestNextRequestAfterOwnDecisionIsGuarded(t *testing.T) {
	for _, decide := range [][]string{{"a"}, {"s", "wait", "y"}, {"d", "enter"}} {
		h := newHarness(t, "")
		h.pending(shown("r1"))
		h.pending(shown("r2"))
		h.pastGuard()
		for _, k := range decide {
			if k == "wait" {
				h.pastGuard()
				continue
			}
			h.press(k)
		}
		sent := h.takeSent()
		if len(sent) != 1 {
			t.Fatalf("%v sent %+v", decide, sent)
		}
		h.daemon(approval.Message{Type: approval.MsgResult, ID: "r1", OK: true})
		if h.m.current().id != "r2" {
			t.Fatalf("%v: r2 not on screen", decide)
		}
		for _, k := range []string{"a", "s", "y", "enter", "d"} {
			h.press(k)
		}
		if got := h.takeSent(); len(got) != 0 || h.m.mode() != modeDecide {
			t.Fatalf("%v: keys typed on after the decision sent %+v, mode %v", decide, got, h.m.mode())
		}
		h.wantView("ignored a key pressed within 0.5s of the prompt appearing")
	}
}
