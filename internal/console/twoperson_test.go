package console

import (
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
)

// TestTwoPersonShown: a request that needs two people says so on its
// first screen, and after one person's allow (the daemon's approved
// message, or this console's own allow answered with a note) it says
// "1 of 2", who allowed (escaped), and that it waits for another person,
// also when the allow came while only its summary was held and its full
// text came after; on 80×24, with three notices, the prompt stays on the second-last line.
func TestTwoPersonShown(t *testing.T) {
	const alice = "console uid=0 tty=/dev/pts/3 pid=4242"
	tests := []struct {
		name string
		// then acts after the request is announced; hash is its hash.
		then      func(h *harness, s *approval.Shown)
		want, not []string
		// summary: the request is announced as a summary (its full text
		// comes by a detail message in then).
		summary bool
	}{{
		name: "no one has allowed yet",
		then: func(*harness, *approval.Shown) {},
		want: []string{"NEEDS 2 DIFFERENT PEOPLE: 0 of 2 approvals so far"},
		not:  []string{"waiting for another person"},
	}, {
		name: "another console allowed",
		then: func(h *harness, s *approval.Shown) {
			h.daemon(approval.Message{Type: approval.MsgApproved, ID: s.ID, Hash: s.Hash(), ApprovedBy: []string{alice}})
		},
		want: []string{"1 of 2 approvals · waiting for another person · allowed by " + alice},
		not:  []string{"0 of 2"},
	}, {
		name: "the approver's name is escaped",
		then: func(h *harness, s *approval.Shown) {
			h.daemon(approval.Message{Type: approval.MsgApproved, ID: s.ID, Hash: s.Hash(), ApprovedBy: []string{"passkey \"al\x1b[2Jice\u202e\" (via web)"}})
		},
		want: []string{`1 of 2 approvals · waiting for another person · allowed by passkey "al\x1b[2Jice\u202e" (via web)`},
		not:  []string{"\x1b[2J", "\u202e"},
	}, {
		name: "an approved message for another version of the request changes nothing",
		then: func(h *harness, s *approval.Shown) {
			h.daemon(approval.Message{Type: approval.MsgApproved, ID: s.ID, Hash: strings.Repeat("0", 64), ApprovedBy: []string{alice}})
		},
		want: []string{"0 of 2 approvals so far"},
		not:  []string{"1 of 2", alice},
	}, {
		name: "this console's allow counted: the request stays",
		then: func(h *harness, s *approval.Shown) {
			h.pastGuard()
			h.press("a")
			h.takeSent()
			h.daemon(approval.Message{Type: approval.MsgResult, ID: s.ID, OK: true, Note: "allowed: 1 of 2; waiting for another person"})
			h.daemon(approval.Message{Type: approval.MsgApproved, ID: s.ID, Hash: s.Hash(), ApprovedBy: []string{alice}})
		},
		want: []string{
			"request r1: your allow counted: allowed: 1 of 2; waiting for another person",
			"1 of 2 approvals · waiting for another person · allowed by " + alice,
			"command apt-get install -y nginx | tee '/var/log/x y.log'",
		},
		not: []string{"was recorded"},
	}, {
		name:    "announced as a summary, allowed by another console, then its full text: the allow still shows",
		summary: true,
		then: func(h *harness, s *approval.Shown) {
			h.daemon(approval.Message{Type: approval.MsgApproved, ID: s.ID, Hash: s.Hash(), ApprovedBy: []string{alice}})
			h.daemon(approval.Message{Type: approval.MsgDetail, ID: s.ID, Hash: s.Hash(), Request: s})
		},
		want: []string{
			"1 of 2 approvals · waiting for another person · allowed by " + alice,
			"command apt-get install -y nginx | tee '/var/log/x y.log'",
		},
		not: []string{"0 of 2", "NOT SHOWN YET"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := harness80x24(t)
			s := shown("r1")
			s.Approvals = 2
			if tt.summary {
				h.summarised(s)
			} else {
				h.pending(s)
			}
			tt.then(h, s)
			lines := strings.Split(h.view(), "\n")
			screen := strings.Join(lines, "\n")
			if len(lines) > 24 {
				t.Errorf("%d lines on a screen of 24:\n%s", len(lines), screen)
			}
			if !strings.HasPrefix(lines[len(lines)-2], "Your decision:") {
				t.Errorf("the prompt is not on the second-last line:\n%s", screen)
			}
			// The texts are compared with the screen's line breaks and
			// runs of spaces as one space: a long name wraps.
			flat := strings.Join(strings.Fields(screen), " ")
			for _, w := range tt.want {
				if !strings.Contains(flat, w) {
					t.Errorf("the screen lacks %q:\n%s", w, screen)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(screen, n) {
					t.Errorf("the screen has %q:\n%s", n, screen)
				}
			}
		})
	}
}

// TestTwoPersonNoSessionGrant: a request that needs two people cannot be
// allowed for the session (the daemon refuses it, approval.Decide, for
// the reason approval.Shown.GrantRefusal gives): its screen says why, and
// neither s nor Enter on "Allow for this session" asks or sends anything;
// the console says why instead. Allow once still goes.
func TestTwoPersonNoSessionGrant(t *testing.T) {
	h := newHarness(t, "")
	s := shown("r1")
	s.Approvals = 2
	h.pending(s)
	h.wantView("needs 2 different people, so it is not granted for the session")
	h.pastGuard()
	for _, keys := range [][]string{{"s"}, {"up", "enter"}} {
		for _, k := range keys {
			h.press(k)
		}
		if h.m.mode() == modeConfirm {
			t.Fatalf("%v asked to confirm a session grant", keys)
		}
		if got := h.takeSent(); len(got) != 0 {
			t.Fatalf("%v sent %+v; want nothing", keys, got)
		}
		h.wantView("request r1 cannot be allowed for the session: this request needs 2 different people")
	}
	h.press("a")
	if got := h.takeSent(); len(got) != 1 || got[0].Type != approval.MsgDecide || got[0].Decision != approval.AllowOnce {
		t.Fatalf("allow once sent %+v; want one allow_once decision", got)
	}
}
