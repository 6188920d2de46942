package console

import (
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
)

// summarised announces s the way the daemon announces a request larger than
// approval.MaxInlineRequest: the daemon's hash of the full request, a
// summary, and the request without pipeline, programs and env.
func (h *harness) summarised(s *approval.Shown) {
	h.t.Helper()
	short := *s
	short.Pipeline, short.Programs, short.Env = nil, nil, nil
	args := 0
	for _, st := range s.Pipeline {
		args += len(st)
	}
	h.daemon(approval.Message{Type: approval.MsgPending, ID: s.ID, Hash: s.Hash(), Request: &short,
		Summary: &approval.Summary{Bytes: 123456, Stages: len(s.Pipeline), Args: args, EnvVars: len(s.Env)}})
}

// TestSummarisedRequestCannotBeAllowedUnseen: a request announced as a
// summary shows that its command is not shown, asks the daemon for the full
// text, and ignores allow keys until the full text has arrived and been on
// screen past the guard; then the decision carries the hash of what was
// shown.
func TestSummarisedRequestCannotBeAllowedUnseen(t *testing.T) {
	for _, key := range []string{"a", "s", "up+enter"} {
		t.Run(key, func(t *testing.T) {
			h := newHarness(t, "")
			s := shown("big")
			s.Pipeline[0] = append(s.Pipeline[0], strings.Repeat("y", 50_000)+"TAIL")
			h.summarised(s)
			if got := h.takeSent(); len(got) != 1 || got[0].Type != approval.MsgDetail || got[0].ID != "big" || got[0].Hash != s.Hash() {
				t.Fatalf("sent %+v; want one detail request for big with the announced hash", got)
			}
			h.wantView("NOT SHOWN YET", "123456 bytes", "Allow is disabled")
			h.notView("apt-get")
			h.pastGuard()
			press := func() {
				switch key {
				case "up+enter":
					h.press("up")
					h.press("up")
					h.press("enter")
				case "s":
					h.press("s")
					if h.m.mode() == modeConfirm {
						h.pastGuard()
						h.press("y")
					}
				default:
					h.press(key)
				}
			}
			press()
			if got := h.takeSent(); len(got) != 0 {
				t.Fatalf("allow on an unseen request sent %+v", got)
			}
			h.wantView("cannot be allowed")

			// A detail for another version of the request is ignored.
			other := *s
			other.Reason = "something else"
			h.daemon(approval.Message{Type: approval.MsgDetail, ID: "big", Hash: other.Hash(), Request: &other})
			h.wantView("NOT SHOWN YET")

			h.daemon(approval.Message{Type: approval.MsgDetail, ID: "big", Hash: s.Hash(), Request: s})
			h.notView("NOT SHOWN YET", "Allow is disabled")
			h.wantView("apt-get", "lines 1-")
			// The prompt starts over: a key right away is dropped.
			h.key("a")
			if got := h.takeSent(); len(got) != 0 {
				t.Fatalf("a key within the guard after the detail sent %+v", got)
			}
			h.pastGuard()
			press()
			got := h.takeSent()
			if len(got) != 1 || got[0].Type != approval.MsgDecide || got[0].Hash != s.Hash() {
				t.Fatalf("sent %+v; want a decision carrying the full request's hash", got)
			}
		})
	}
}

// TestSummarisedRequestCanBeDenied: deny works on a request whose full text
// could not be loaded, and the screen says why it is missing.
func TestSummarisedRequestCanBeDenied(t *testing.T) {
	h := newHarness(t, "")
	s := shown("huge")
	h.summarised(s)
	h.takeSent()
	h.daemon(approval.Message{Type: approval.MsgResult, ID: "huge", Error: "the detail message for request huge would be 99999999 bytes"})
	h.wantView("could not be loaded", "99999999 bytes", "NOT SHOWN YET")
	h.pastGuard()
	h.press("d")
	h.press("esc")
	got := h.takeSent()
	if len(got) != 1 || got[0].Decision != approval.DenyOnce || got[0].Hash != s.Hash() {
		t.Fatalf("sent %+v; want a denial with the announced hash", got)
	}
}

// TestDenialSurvivesTheDetail: a denial sent while the full text was still
// on its way stays sent when the full text arrives. The console used to
// replace the request, forget the denial, show the prompt again and send a
// second decision (allow once) for the same request.
func TestDenialSurvivesTheDetail(t *testing.T) {
	h := newHarness(t, "")
	s := shown("late")
	h.summarised(s)
	h.takeSent()
	h.pastGuard()
	h.press("d")
	h.press("esc")
	if got := h.takeSent(); len(got) != 1 || got[0].Decision != approval.DenyOnce {
		t.Fatalf("sent %+v; want one denial", got)
	}
	h.wantView("Your decision (deny) was sent")

	h.daemon(approval.Message{Type: approval.MsgDetail, ID: "late", Hash: s.Hash(), Request: s})
	h.wantView("Your decision (deny) was sent")
	h.pastGuard()
	for _, k := range []string{"a", "s", "d"} {
		h.press(k)
	}
	if got := h.takeSent(); len(got) != 0 {
		t.Fatalf("after the detail of a denied request, keys sent %+v", got)
	}
}

// TestElidedGrantIsListedBySizeAndHash: a grant whose pipeline the daemon
// elided is shown with its size and SHA-256, and the count of unlisted
// grants is shown.
func TestElidedGrantIsListedBySizeAndHash(t *testing.T) {
	h := newHarness(t, "")
	h.daemon(approval.Message{Type: approval.MsgGrants, GrantsOmitted: 7, Grants: []approval.Grant{{
		ID: "g1", Session: "s", UID: 1000, Privileged: true, Cwd: "/", Expires: t0.Add(1e12),
		Elided: &approval.Elided{Bytes: 990123, SHA256: strings.Repeat("ab", 32), Stages: 1, Args: 2},
	}}})
	h.press("g")
	h.wantView("too long to list: 990123 bytes in 1 stage (2 arguments), sha256 abab", "7 more grants not listed")
}
