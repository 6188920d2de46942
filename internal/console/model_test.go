package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/agent-sudo/agent-sudo/approval"
)

func TestIdleScreen(t *testing.T) {
	h := newHarness(t, "")
	h.wantView(idleText, "0 session grants", "g session grants", "q quit")
	h.notView("WARNING", "REQUEST")
	h.daemon(approval.Message{Type: approval.MsgGrants, Grants: []approval.Grant{{ID: "g1"}, {ID: "g2"}}})
	h.wantView("2 session grants", "press g to list or revoke them")
	if got := h.takeSent(); len(got) != 0 {
		t.Errorf("idle console sent %+v", got)
	}
}

func TestMultiplexerBannerIsPermanent(t *testing.T) {
	h := newHarness(t, "tmux")
	want := "⚠ WARNING: in tmux, " + muxWarning
	h.wantView(want)
	h.pending(shown("r1"))
	h.wantView(want, "REQUEST WAITING")
	h.pastGuard()
	h.press("g")
	h.wantView(want, "SESSION GRANTS")
}

func TestRequestScreenShowsEverything(t *testing.T) {
	h := newHarness(t, "")
	s := shown("r1")
	s.Pipeline = [][]string{{"iptables", "-L", "-n"}, {"grep", "DROP it"}}
	s.Programs = []approval.Program{{Chain: []string{"/usr/sbin/iptables", "/usr/sbin/xtables-legacy-multi"}}, {Chain: []string{"/usr/bin/grep"}}}
	h.pending(s)
	h.pending(shown("r2"))
	h.pending(shown("r3"))
	first := []string{
		"REQUEST WAITING FOR YOUR DECISION · times out in 2m0s · 2 more after it",
		"command    iptables -L -n | grep 'DROP it'",
		// A program reached through a symbolic link is not what the
		// command line says: its stage stays on the first screen.
		"stage 1    /usr/sbin/iptables -> /usr/sbin/xtables-legacy-multi -L -n",
		"runs       as root",
		"cwd        /",
		"reason     install nginx for the web tests",
		"requester  uid 1000 (alice) · pid 4242 · exe /usr/bin/python3 · kernel-verified",
		"Your decision:   Allow once (a)   Allow for this session (s) > Deny (d)",
		"keys: ↑/↓ enter · v ", " · PgUp/PgDn page · g grants · q quit",
		"(keys enabled in 0.5s)",
	}
	// The first screen has the environment's names; the details (v) have
	// the values, the host, the id and the times too.
	h.wantView(append(first, "env        DEBIAN_FRONTEND (values: press v)", "v details",
		"agent      session build-42 · host devbox · claimed by the agent")...)
	// grep in /usr/bin is what the command line says (TestFirstScreenDropsRepeatedStages).
	h.notView("SSH AGENT", escapedNotice, "noninteractive", "id         r1", "time       sent", "stage 2")
	h.wantFull(append(first,
		"stage 2    /usr/bin/grep 'DROP it'",
		"REQUEST WAITING FOR YOUR DECISION · times out in 2m0s · 2 more after it · ALL DETAILS",
		"env        DEBIAN_FRONTEND=noninteractive",
		"session    build-42 (claimed by the agent)",
		"host       devbox (claimed by the agent)",
		"id         r1",
		"time       sent ",
		"v summary",
	)...)
	h.advance(65 * time.Second)
	h.update(tickMsg{})
	h.wantView("times out in 55s")
	h.notView("keys enabled")
	h.advance(time.Minute)
	h.wantView("timing out now")
}

func TestUnprivilegedAndForwardAgent(t *testing.T) {
	h := newHarness(t, "")
	s := shown("r1")
	s.Privileged, s.RunAs, s.ForwardAgent = false, "alice", true
	h.pending(s)
	h.wantView("runs       as alice (unprivileged)", "ssh agent  ⚠ SSH AGENT FORWARDED")
	h.notView("as root")
}

// TestStdinSection checks that a request's stdin is shown with its size and
// SHA-256, text as escaped text line by line, binary as a hexdump, and a
// count of what the bounded preview leaves out.
func TestStdinSection(t *testing.T) {
	h := newHarness(t, "")
	s := shown("r1")
	s.Pipeline, s.Programs = [][]string{{"tee", "/etc/x"}}, []approval.Program{{Chain: []string{"/usr/bin/tee"}}}
	s.Stdin = approval.NewStdinShown([]byte("nameserver 192.0.2.53\nsearch \x1b[2Jlan\n"))
	h.pending(s)
	h.wantView("stdin      37 bytes · sha256 "+s.Stdin.SHA256, "nameserver 192.0.2.53", `search \x1b[2Jlan`)

	h = newHarness(t, "")
	s = shown("r2")
	s.Stdin = approval.NewStdinShown(append([]byte{0, 0xff}, bytes.Repeat([]byte("x"), 200)...))
	h.pending(s)
	h.wantView("stdin      202 bytes · sha256 "+s.Stdin.SHA256, "00000000  00 ff 78 78", "… 154 more bytes not shown")
	h.wantFull("00000000  00 ff 78 78", "… 74 more bytes not shown")
}

func TestBellRingsForEachNewRequest(t *testing.T) {
	h := newHarness(t, "")
	h.pending(shown("r1"))
	h.pending(shown("r2"))
	h.pending(shown("r1")) // a repeat is not new
	if h.bells != 2 {
		t.Errorf("bells = %d, want 2", h.bells)
	}
}

// decideMsg is the decide message a console must send for s.
func decideMsg(s *approval.Shown, c approval.Choice, note string) approval.Message {
	return approval.Message{Type: approval.MsgDecide, ID: s.ID, Hash: s.Hash(), Decision: c, Note: note}
}

func TestDecisionKeys(t *testing.T) {
	tests := []struct {
		name     string
		keys     []string
		choice   approval.Choice
		note     string
		wantNote bool // the note prompt was shown
	}{
		{"a allows once", []string{"a"}, approval.AllowOnce, "", false},
		{"s then y allows for the session", []string{"s", "wait", "y"}, approval.AllowSession, "", false},
		{"d then enter denies", []string{"d", "enter"}, approval.DenyOnce, "", true},
		{"d then esc denies without a note", []string{"d", "n", "o", "esc"}, approval.DenyOnce, "", true},
		{"d with a note", []string{"d", "n", "o", "t", " ", "n", "o", "w", " ", "enter"}, approval.DenyOnce, "not now", true},
		{"enter denies by default", []string{"enter", "enter"}, approval.DenyOnce, "", true},
		{"up enter y allows for the session", []string{"up", "enter", "wait", "y"}, approval.AllowSession, "", false},
		{"k k enter allows once", []string{"k", "k", "enter"}, approval.AllowOnce, "", false},
		{"up past the top stays on allow once", []string{"up", "up", "up", "up", "enter"}, approval.AllowOnce, "", false},
		{"down on deny does not wrap to allow", []string{"down", "j", "enter", "enter"}, approval.DenyOnce, "", true},
		{"up then down is deny again", []string{"up", "down", "enter", "enter"}, approval.DenyOnce, "", true},
		{"keys typed in the note do not decide", []string{"d", "a", "s", "enter"}, approval.DenyOnce, "as", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "")
			s := shown("r1")
			h.pending(s)
			h.pastGuard()
			sawNote := false
			for _, k := range tt.keys {
				if k == "wait" { // past the guard of a new prompt
					h.pastGuard()
					continue
				}
				h.press(k)
				if strings.Contains(h.view(), "Note for the agent") {
					sawNote = true
				}
			}
			want := []approval.Message{decideMsg(s, tt.choice, tt.note)}
			if got := h.takeSent(); !reflect.DeepEqual(got, want) {
				t.Errorf("sent %+v\nwant %+v", got, want)
			}
			if sawNote != tt.wantNote {
				t.Errorf("note prompt shown = %v, want %v", sawNote, tt.wantNote)
			}
			h.wantView("Your decision (" + choiceText(tt.choice) + ") was sent")
			// Nothing more can be sent for it.
			for _, k := range []string{"a", "s", "d", "enter"} {
				h.key(k)
			}
			if got := h.takeSent(); len(got) != 0 {
				t.Errorf("after the decision, keys sent %+v", got)
			}
		})
	}
}

func TestGuardDropsEarlyKeys(t *testing.T) {
	h := newHarness(t, "")
	s := shown("r1")
	h.pending(s)
	h.wantView("(keys enabled in 0.5s)")
	for _, k := range []string{"a", "s", "enter", "d", "up", "g", "q"} {
		h.key(k)
	}
	if got := h.takeSent(); len(got) != 0 {
		t.Fatalf("keys within the guard sent %+v", got)
	}
	if h.m.quitting || h.m.mode() != modeDecide {
		t.Fatalf("keys within the guard changed the console: quitting=%v mode=%v", h.m.quitting, h.m.mode())
	}
	h.wantView("ignored a key pressed within 0.5s of the prompt appearing", "> Deny")

	// A dropped key starts the guard over: 499ms after it, keys are still
	// dropped, and they are dropped, not queued.
	h.advance(499 * time.Millisecond)
	h.wantView("(keys enabled in 0.1s)")
	h.key("a")
	h.advance(499 * time.Millisecond)
	h.key("a")
	if got := h.takeSent(); len(got) != 0 {
		t.Fatalf("keys within the restarted guard sent %+v", got)
	}
	h.pastGuard()
	h.notView("keys enabled in")
	h.press("a")
	if got, want := h.takeSent(), []approval.Message{decideMsg(s, approval.AllowOnce, "")}; !reflect.DeepEqual(got, want) {
		t.Errorf("after the guard, a sent %+v, want %+v", got, want)
	}
}

func TestGuardBoundary(t *testing.T) {
	h := newHarness(t, "")
	s := shown("r1")
	h.pending(s)
	h.advance(DefaultGuard - time.Nanosecond)
	h.key("a")
	if got := h.takeSent(); len(got) != 0 {
		t.Fatalf("a key 1ns before the guard ended sent %+v", got)
	}
	h.advance(DefaultGuard)
	h.press("a")
	if got := h.takeSent(); len(got) != 1 {
		t.Fatalf("a key right at the end of the guard sent %+v, want the decision", got)
	}
}

func TestCtrlCQuitsEvenDuringTheGuard(t *testing.T) {
	h := newHarness(t, "")
	h.pending(shown("r1"))
	cmd := h.update(keyMsg("ctrl+c"))
	if cmd == nil || !h.m.quitting {
		t.Fatalf("ctrl+c did not quit")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Errorf("ctrl+c returned %T, want tea.Quit", cmd())
	}
	if len(h.sent) != 0 {
		t.Errorf("quitting sent %+v", h.sent)
	}
	if v := h.m.View(); v != "" {
		t.Errorf("View after quitting = %q, want empty", v)
	}
}

func TestQuitDecidesNothing(t *testing.T) {
	h := newHarness(t, "")
	h.pending(shown("r1"))
	h.pastGuard()
	h.press("q")
	if !h.m.quitting || len(h.sent) != 0 {
		t.Errorf("q: quitting=%v sent=%+v", h.m.quitting, h.sent)
	}
}

func TestPastesAndBurstsNeverDecide(t *testing.T) {
	h := newHarness(t, "")
	h.pending(shown("r1"))
	h.pastGuard()
	for _, k := range []tea.KeyMsg{
		{Type: tea.KeyRunes, Runes: []rune("a"), Paste: true},
		{Type: tea.KeyRunes, Runes: []rune("s"), Paste: true},
		{Type: tea.KeyRunes, Runes: []rune("ad")},
		{Type: tea.KeyRunes, Runes: []rune("aaaa")},
		{Type: tea.KeyRunes, Runes: []rune("a"), Alt: true},
		{Type: tea.KeyEnter, Alt: true},
		{Type: tea.KeyEnter, Paste: true, Runes: []rune("\r")},
		{Type: tea.KeyTab},
	} {
		h.update(k)
	}
	if h.m.mode() != modeDecide {
		t.Errorf("mode = %v, want the decision prompt", h.m.mode())
	}
	if got := h.takeSent(); len(got) != 0 {
		t.Errorf("pastes and bursts sent %+v", got)
	}
}

func TestArrivalOrderAndResolvedElsewhere(t *testing.T) {
	h := newHarness(t, "")
	r1, r2, r3 := shown("r1"), shown("r2"), shown("r3")
	h.pending(r1)
	h.pending(r2)
	h.pastGuard()
	// A later arrival does not replace the request on screen.
	h.pending(r3)
	h.wantFull("id         r1", "2 more after it")
	h.key("up") // the human was about to allow r1...

	h.resolved("r1", approval.Allow, "console uid=0 tty=/dev/pts/3 pid=77")
	h.wantFull("request r1 was allowed by console uid=0 tty=/dev/pts/3 pid=77", "id         r2", "1 more after it", "> Deny")
	// ...and the key meant for r1 cannot approve r2: the guard is back.
	h.key("enter")
	h.key("a")
	if got := h.takeSent(); len(got) != 0 {
		t.Fatalf("keys right after the switch sent %+v", got)
	}
	h.pastGuard()

	// A request behind the current one that goes away just leaves.
	h.resolved("r3", approval.Timeout, "approval_timeout")
	h.wantFull("request r3 timed out: nobody decided in time (it was waiting behind the one on screen)", "id         r2")
	h.notView("more waiting")

	h.resolved("r2", approval.Withdrawn, approval.ByClient)
	h.wantView("request r2 was withdrawn by the client (it disconnected)", idleText)
	h.resolved("r2", approval.Withdrawn, approval.ByClient) // again: nothing
	h.resolved("nope", approval.Deny, "x")
	if got := h.takeSent(); len(got) != 0 {
		t.Errorf("sent %+v", got)
	}
}

func TestResolvedTexts(t *testing.T) {
	tests := []struct {
		v    approval.Verdict
		by   string
		want string
	}{
		{approval.Allow, "console uid=0 tty=/dev/pts/3 pid=9 (new session grant g1)", "request X was allowed by console uid=0 tty=/dev/pts/3 pid=9 (new session grant g1)"},
		{approval.Deny, "console uid=0 tty=/dev/pts/4 pid=8", "request X was denied by console uid=0 tty=/dev/pts/4 pid=8"},
		{approval.Timeout, "approval_timeout", "request X timed out: nobody decided in time"},
		{approval.Withdrawn, "client", "request X was withdrawn by the client (it disconnected)"},
		{approval.Failed, "daemon shutting down", "request X ended without a decision (daemon shutting down); it will not run"},
		{approval.Failed, "approver", "request X ended without a decision (approver); it will not run"},
		{"weird\x1b[2J", "by\u202e", `request X is no longer waiting (weird\x1b[2J, by\u202e)`},
		{approval.Allow, "evil\x1b]0;t\x07", `request X was allowed by evil\x1b]0;t\x07`},
	}
	for _, tt := range tests {
		if got := resolvedText("X", tt.v, tt.by); got != tt.want {
			t.Errorf("resolvedText(%q, %q) = %q, want %q", tt.v, tt.by, got, tt.want)
		}
	}
}

func TestOwnDecisionConfirmed(t *testing.T) {
	for _, order := range []string{"resolved first", "result first"} {
		t.Run(order, func(t *testing.T) {
			h := newHarness(t, "")
			r1, r2 := shown("r1"), shown("r2")
			h.pending(r1)
			h.pending(r2)
			h.pastGuard()
			h.press("s")
			h.pastGuard()
			h.press("y")
			h.wantFull("Your decision (allow for this session) was sent", "id         r1")
			resolved := approval.Message{Type: approval.MsgResolved, ID: "r1", Verdict: approval.Allow, By: "console uid=0 tty=/dev/pts/1 pid=5 (new session grant g1)"}
			result := approval.Message{Type: approval.MsgResult, ID: "r1", OK: true}
			if order == "resolved first" {
				h.daemon(resolved)
				h.daemon(result)
				h.wantView("request r1 was allowed by console uid=0 tty=/dev/pts/1 pid=5 (new session grant g1)")
			} else {
				h.daemon(result)
				h.wantView("request r1: your decision (allow for this session) was recorded")
				h.daemon(resolved)
				// The resolved message replaces the notice: it names the grant.
				h.wantView("request r1 was allowed by console uid=0 tty=/dev/pts/1 pid=5 (new session grant g1)")
				h.notView("was recorded")
				h.daemon(resolved) // a repeat changes nothing
			}
			h.wantFull("id         r2", "(keys enabled in 0.5s)")
			h.notView("was sent")
			if len(h.m.inflight) != 0 {
				t.Errorf("inflight = %+v", h.m.inflight)
			}
		})
	}
}

func TestDaemonRefusesDecision(t *testing.T) {
	h := newHarness(t, "")
	s := shown("r1")
	h.pending(s)
	h.pastGuard()
	h.press("a")
	h.takeSent()
	h.daemon(approval.Message{Type: approval.MsgResult, ID: "r1", Error: "the decision is for a different request than the one waiting (hash mismatch); nothing was decided\x1b[2J"})
	h.wantFull("the daemon refused your decision (allow once) on request r1: the decision is for a different request", `decided\x1b[2J`,
		"id         r1", "> Deny", "(keys enabled in 0.5s)")
	// The prompt is back, behind the guard, and can decide again.
	h.key("a")
	if got := h.takeSent(); len(got) != 0 {
		t.Fatalf("key in the new guard sent %+v", got)
	}
	h.pastGuard()
	h.press("d")
	h.press("esc")
	if got, want := h.takeSent(), []approval.Message{decideMsg(s, approval.DenyOnce, "")}; !reflect.DeepEqual(got, want) {
		t.Errorf("sent %+v, want %+v", got, want)
	}
	// An unsolicited error is shown too.
	h.daemon(approval.Message{Type: approval.MsgResult, Error: "invalid message: x"})
	h.wantView("the daemon reported an error: invalid message: x")
}

func TestDecisionOnResolvedRequest(t *testing.T) {
	h := newHarness(t, "")
	h.pending(shown("r1"))
	h.pastGuard()
	h.press("a")
	h.resolved("r1", approval.Deny, "console uid=0 tty=/dev/pts/9 pid=1")
	h.daemon(approval.Message{Type: approval.MsgResult, ID: "r1", Error: "the request is no longer waiting (already decided, timed out or withdrawn)"})
	h.wantView("request r1 was denied by console uid=0 tty=/dev/pts/9 pid=1",
		"the daemon refused your decision (allow once) on request r1: the request is no longer waiting", idleText)
}

func TestSendFailureKeepsThePrompt(t *testing.T) {
	h := newHarness(t, "")
	h.pending(shown("r1"))
	h.pastGuard()
	h.sendErr = errStuck
	h.press("a")
	h.wantView("could not send your decision on request r1: stuck", "> Deny")
	if h.m.submitted(h.m.current()) != "" {
		t.Errorf("a failed send marked the request decided")
	}
}

func TestHostileRequestIsEscaped(t *testing.T) {
	h := newHarness(t, "")
	s := shown("r1\u202e")
	s.Pipeline = [][]string{{"echo", "\x1b[2J", "\x1b]0;title\x07", "safe\u202etxt.exe", "a\rb"}}
	s.Programs = []approval.Program{{Chain: []string{"/usr/bin/echo"}}}
	s.Env = map[string]string{"K\x1b[1m": "v\x1b[0m", "Z": "\u200bhidden"}
	s.Reason = "looks fine\x1b[8m hidden text\nsecond line \x1b]8;;http://evil\x07link"
	s.Session = "s\u2066"
	s.Host = "h\x00"
	s.Cwd = "/tmp/\u009b"
	s.RunAs = "root"
	s.Peer.User = "ali\u202ece"
	s.Peer.Exe = "/usr/bin/py\rthon"
	h.daemon(approval.Message{Type: approval.MsgPending, ID: s.ID, Hash: s.Hash(), Request: s})
	h.wantFull(escapedNotice,
		`echo $'\x1b[2J' $'\x1b]0;title\x07' $'safe\u202etxt.exe' $'a\rb'`,
		`K\x1b[1m=$'v\x1b[0m'`, `Z=$'\u200bhidden'`,
		`looks fine\x1b[8m hidden text`, `second line \x1b]8;;http://evil\x07link`,
		`s\u2066`, `h\x00`, `/tmp/\u009b`, `ali\u202ece`, `/usr/bin/py\rthon`, `id         r1\u202e`,
	)
	h.pastGuard()
	h.press("a")
	if got, want := h.takeSent(), []approval.Message{decideMsg(s, approval.AllowOnce, "")}; !reflect.DeepEqual(got, want) {
		t.Errorf("sent %+v, want %+v", got, want)
	}
}

func TestEveryFieldCanRaiseTheNotice(t *testing.T) {
	bad := "x\x1b[2Jy"
	fields := map[string]func(*approval.Shown){
		"argument": func(s *approval.Shown) { s.Pipeline[0][1] = bad },
		"program":  func(s *approval.Shown) { s.Pipeline[0][0] = bad },
		"resolved": func(s *approval.Shown) { s.Programs[0].Chain = []string{bad} },
		"env key":  func(s *approval.Shown) { s.Env[bad] = "v" },
		"env val":  func(s *approval.Shown) { s.Env["K"] = bad },
		"reason":   func(s *approval.Shown) { s.Reason = bad },
		"session":  func(s *approval.Shown) { s.Session = bad },
		"host":     func(s *approval.Shown) { s.Host = bad },
		"id":       func(s *approval.Shown) { s.ID = bad },
		"cwd":      func(s *approval.Shown) { s.Cwd = bad },
		"run as":   func(s *approval.Shown) { s.Privileged, s.RunAs = false, bad },
		"user":     func(s *approval.Shown) { s.Peer.User = bad },
		"exe":      func(s *approval.Shown) { s.Peer.Exe = bad },
		"stdin sha256": func(s *approval.Shown) {
			s.Stdin = approval.NewStdinShown([]byte("in"))
			s.Stdin.SHA256 = bad
		},
	}
	for name, set := range fields {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, "")
			s := shown("r1")
			set(s)
			h.pending(s)
			h.wantFull(escapedNotice, `x\x1b[2Jy`)
		})
	}
	t.Run("backslashes alone", func(t *testing.T) {
		h := newHarness(t, "")
		s := shown("r1")
		s.Pipeline = [][]string{{"grep", `a\.b\\c`}}
		s.Reason = `C:\Windows`
		h.pending(s)
		h.wantView(`grep 'a\.b\\c'`, `C:\\Windows`)
		h.notView(escapedNotice)
	})
	t.Run("multi-line reason", func(t *testing.T) {
		h := newHarness(t, "")
		s := shown("r1")
		s.Reason = "first line\nsecond line"
		h.pending(s)
		h.wantView("reason     first line\n           second line")
		h.notView(escapedNotice)
	})
}

// TestUnverifiedRequestIsNotShown: a pending or detail message whose
// request does not hash to its announced hash (approval.Client.Recv
// refused it: unverifiedMsg) is never shown nor decided on. A new request
// stays off the screen; a new version of a request on screen takes the
// old one off (a decision on it would be refused); a full text that does
// not match leaves a summary that can only be denied, with the announced
// hash.
func TestUnverifiedRequestIsNotShown(t *testing.T) {
	tampered := func(id string) *approval.Shown {
		s := shown(id)
		s.Reason = "TAMPERED"
		return s
	}
	for _, tc := range []struct {
		name  string
		setup func(h *harness) *approval.Shown // returns the request announced
		bad   approval.Message
		want  []string
		// deny: d then esc denies with the announced hash; otherwise no
		// key sends anything.
		deny bool
	}{
		{"new request", func(*harness) *approval.Shown { return shown("r1") },
			approval.Message{Type: approval.MsgPending, ID: "r1", Hash: shown("r1").Hash(), Request: tampered("r1")},
			[]string{"the daemon announced request r1 with contents that do not match its hash", idleText}, false},
		{"new version", func(h *harness) *approval.Shown { s := shown("r1"); h.pending(s); return s },
			approval.Message{Type: approval.MsgPending, ID: "r1", Hash: "0000", Request: tampered("r1")},
			[]string{"the daemon announced request r1 with contents that do not match its hash", idleText}, false},
		{"no details", func(*harness) *approval.Shown { return shown("r1") },
			approval.Message{Type: approval.MsgPending, ID: "r1", Hash: "0000"},
			[]string{"the daemon announced request r1 without its details", idleText}, false},
		{"detail", func(h *harness) *approval.Shown { s := shown("r1"); h.summarised(s); return s },
			approval.Message{Type: approval.MsgDetail, ID: "r1", Hash: shown("r1").Hash(), Request: tampered("r1")},
			[]string{"the full text of request r1 does not match its hash", "NOT SHOWN YET", "Allow is disabled"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "")
			s := tc.setup(h)
			h.takeSent()
			h.update(unverifiedMsg{m: tc.bad})
			h.wantView(tc.want...)
			h.notView("TAMPERED")
			h.pastGuard()
			for _, k := range []string{"a", "s", "y", "enter"} {
				h.press(k)
			}
			if got := h.takeSent(); len(got) != 0 {
				t.Fatalf("keys on an unverified request sent %+v", got)
			}
			if !tc.deny {
				return
			}
			h.press("d")
			h.press("esc")
			if got := h.takeSent(); len(got) != 1 || got[0].Decision != approval.DenyOnce || got[0].Hash != s.Hash() {
				t.Fatalf("sent %+v; want a denial with the announced hash", got)
			}
		})
	}
}

func TestChangedRequestIsShownAgain(t *testing.T) {
	h := newHarness(t, "")
	s := shown("r1")
	h.pending(s)
	h.pastGuard()
	s2 := shown("r1")
	s2.Pipeline = [][]string{{"rm", "-rf", "/"}}
	s2.Programs = []approval.Program{{Chain: []string{"/usr/bin/rm"}}}
	h.pending(s2)
	h.wantView("request r1 changed while it waited", "command    rm -rf /", "(keys enabled in 0.5s)")
	h.pastGuard()
	h.press("a")
	if got := h.takeSent(); len(got) != 1 || got[0].Hash != s2.Hash() {
		t.Errorf("sent %+v, want the hash of the new version", got)
	}
}

// A decision sent before the request changed is still in flight: the new
// version shows it sent, takes no second decision, and the prompt comes
// back only when the daemon answers the first.
func TestChangedRequestKeepsTheDecisionInFlight(t *testing.T) {
	h := newHarness(t, "")
	s := shown("r1")
	h.pending(s)
	h.pastGuard()
	h.press("a")
	if got := h.takeSent(); len(got) != 1 {
		t.Fatalf("sent %+v, want one decision", got)
	}
	s2 := shown("r1")
	s2.Pipeline = [][]string{{"rm", "-rf", "/"}}
	s2.Programs = []approval.Program{{Chain: []string{"/usr/bin/rm"}}}
	h.pending(s2)
	h.wantView("request r1 changed while it waited", "command    rm -rf /", "Your decision (allow once) was sent")
	h.pastGuard()
	h.press("a")
	if got := h.takeSent(); len(got) != 0 {
		t.Fatalf("a second decision was sent while the first was in flight: %+v", got)
	}
	h.daemon(approval.Message{Type: approval.MsgResult, ID: "r1", Error: "the decision is for a different version of the request"})
	h.wantView("the daemon refused your decision (allow once) on request r1", "command    rm -rf /", "> Deny")
	h.pastGuard()
	h.press("a")
	if got := h.takeSent(); len(got) != 1 || got[0].Hash != s2.Hash() {
		t.Errorf("sent %+v, want one decision with the hash of the new version", got)
	}
}

func TestMalformedDaemonMessages(t *testing.T) {
	h := newHarness(t, "")
	odd := &approval.Shown{ID: "odd", Pipeline: [][]string{{}, {"x"}, nil}, Programs: []approval.Program{{}, {Chain: []string{"/bin/x"}}, {Chain: []string{"/bin/y"}}, {Chain: []string{"/bin/z"}}}}
	for _, m := range []approval.Message{
		{Type: approval.MsgPending, ID: "nodetails"},
		{Type: approval.MsgPending, ID: "a", Request: &approval.Shown{ID: "b"}},
		{Type: approval.MsgPending, Request: &approval.Shown{}},
		{Type: approval.MsgPending, ID: "odd", Hash: odd.Hash(), Request: odd},
		{Type: approval.MsgResolved},
		{Type: approval.MsgResult, ID: "unknown", OK: true},
		{Type: approval.MsgResult, Grant: "g9", Error: "x"},
		{Type: approval.MsgGrants},
		{Type: approval.MsgHello, Version: "again"},
		{Type: "future-type"},
		{},
	} {
		h.daemon(m)
		h.view()
	}
	h.wantFull("request nodetails without its details", "request a with the details of request b", "command     | x | ", "stage 3 ")
	h.pastGuard()
	h.press("g")
	h.press("r")
	h.press("esc")
	h.view()
}

func TestGrantsViewAndRevoke(t *testing.T) {
	h := newHarness(t, "")
	grants := []approval.Grant{
		{ID: "g1", Session: "build-42", UID: 1000, Pipeline: [][]string{{"apt-get", "update"}}, Privileged: true, Cwd: "/",
			By: "console uid=0 tty=/dev/pts/3 pid=7", Created: t0, Expires: t0.Add(15 * time.Minute)},
		{ID: "g2", Session: "s\u202e", UID: 1001, Pipeline: [][]string{{"echo", "\x1b[2J"}}, EnvKeys: []string{"A", "B\x1b"}, Cwd: "/tmp",
			By: "console", Created: t0, Expires: t0.Add(time.Hour)},
	}
	h.daemon(approval.Message{Type: approval.MsgGrants, Grants: grants})
	h.press("g")
	h.wantView("SESSION GRANTS", "g1  uid 1000  session build-42", `g2  uid 1001  session s\u202e`,
		"command    apt-get update", "runs       as root", "expires", "(in 15m0s)", "r revoke")
	h.press("down")
	h.wantView(`command    echo $'\x1b[2J'`, `env keys   A B\x1b`, "runs       unprivileged")
	h.press("r")
	if got, want := h.takeSent(), []approval.Message{{Type: approval.MsgRevoke, Grant: "g2"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("r sent %+v, want %+v", got, want)
	}
	h.press("r") // already on its way
	if got := h.takeSent(); len(got) != 0 {
		t.Errorf("second r sent %+v", got)
	}
	h.daemon(approval.Message{Type: approval.MsgResult, Grant: "g2", OK: true})
	h.daemon(approval.Message{Type: approval.MsgGrants, Grants: grants[:1]})
	h.wantView("session grant g2 revoked", "g1  uid 1000")
	h.notView("g2  uid")
	h.press("enter")
	if got, want := h.takeSent(), []approval.Message{{Type: approval.MsgRevoke, Grant: "g1"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("enter sent %+v, want %+v", got, want)
	}
	h.daemon(approval.Message{Type: approval.MsgResult, Grant: "g1", Error: "no such session grant \"g1\""})
	h.wantView(`could not revoke session grant g1: no such session grant "g1"`)

	// A request arriving meanwhile waits for the human to come back, and
	// its guard starts then.
	h.pending(shown("r1"))
	h.wantView("SESSION GRANTS")
	h.advance(time.Second)
	h.press("esc")
	h.wantView("REQUEST WAITING", "(keys enabled in 0.5s)")
	h.key("a")
	if got := h.takeSent(); len(got) != 0 {
		t.Errorf("key right after leaving the grants sent %+v", got)
	}
	h.daemon(approval.Message{Type: approval.MsgGrants})
	h.pastGuard()
	h.press("g")
	h.wantView("no session grants")
}

func TestLongValuesWrapAndScroll(t *testing.T) {
	h := newHarness(t, "")
	h.update(tea.WindowSizeMsg{Width: 40, Height: 30})
	long := strings.Repeat("0123456789", 30) + "END"
	s := shown("r1")
	s.Pipeline = [][]string{{"echo", long, "\x1b[2J" + strings.Repeat("x", 50)}}
	s.Programs = []approval.Program{{Chain: []string{"/usr/bin/echo"}}}
	h.pending(s)
	v := h.view()
	for _, line := range strings.Split(v, "\n") {
		if w := lipgloss.Width(line); w > 40 {
			t.Errorf("line wider than the terminal (%d): %q", w, line)
		}
	}
	if !strings.Contains(v, "lines 1-") || !strings.Contains(v, "PgUp/PgDn") {
		t.Fatalf("no scroll indicator on a screen that does not fit:\n%s", v)
	}
	// The command's lines put back together hold the whole argument.
	_, body, _ := h.m.layout(-1)
	var cmd strings.Builder
	inCmd := false
	for _, line := range body {
		switch {
		case strings.HasPrefix(line, "command    "):
			inCmd = true
			cmd.WriteString(strings.TrimPrefix(line, "command    "))
		case inCmd && strings.HasPrefix(line, "         ↳ "):
			cmd.WriteString(strings.TrimPrefix(line, "         ↳ "))
		default:
			inCmd = false
		}
	}
	if want := "echo " + long + ` $'\x1b[2J` + strings.Repeat("x", 50) + "'"; cmd.String() != want {
		t.Errorf("command lines put together:\n%q\nwant\n%q", cmd.String(), want)
	}
	// Scrolling shows every line of the body.
	h.pastGuard()
	seen := map[string]bool{}
	for range 50 {
		for _, l := range strings.Split(h.view(), "\n") {
			seen[l] = true
		}
		h.key("pgdown")
	}
	for _, l := range body {
		if !seen[l] {
			t.Errorf("scrolling never showed %q", l)
		}
	}
	h.wantView("requester")
	h.key("home")
	h.wantView("command    echo")
}

func TestNarrowTerminal(t *testing.T) {
	h := newHarness(t, "screen")
	h.update(tea.WindowSizeMsg{Width: 30, Height: 60})
	h.pending(shown("r1"))
	v := h.view()
	for _, line := range strings.Split(v, "\n") {
		if w := lipgloss.Width(line); w > 30 {
			t.Errorf("line wider than the terminal (%d): %q", w, line)
		}
	}
	h.wantView("command\n  apt-get install -y nginx | \n↳ tee '/var/log/x y.log'\nruns\n", "screen")
}

func TestNoticesExpire(t *testing.T) {
	h := newHarness(t, "")
	h.pending(shown("r1"))
	h.resolved("r1", approval.Timeout, "approval_timeout")
	h.wantView("request r1 timed out")
	h.advance(noticeTTL + time.Second)
	h.update(tickMsg{})
	h.notView("timed out")
	for i := range 10 {
		h.pending(shown(string(rune('a' + i))))
		h.resolved(string(rune('a'+i)), approval.Timeout, "")
	}
	if len(h.m.notices) != maxNotices {
		t.Errorf("%d notices kept, want %d", len(h.m.notices), maxNotices)
	}
}

func TestDisconnectEndsTheConsole(t *testing.T) {
	h := newHarness(t, "")
	h.pending(shown("r1"))
	cmd := h.update(disconnectedMsg{ErrDisconnected})
	if cmd == nil || h.m.fatal != ErrDisconnected || !h.m.quitting {
		t.Errorf("disconnect: fatal=%v quitting=%v", h.m.fatal, h.m.quitting)
	}
	if len(h.sent) != 0 {
		t.Errorf("disconnect sent %+v", h.sent)
	}
}

func FuzzDaemonMessages(f *testing.F) {
	f.Add([]byte(`{"type":"pending","id":"r1","hash":"x","request":{"id":"r1","pipeline":[["a","\u001b[2J"]],"programs":["/bin/a"]}}`),
		[]byte(`{"type":"resolved","id":"r1","verdict":"allowed","by":"c"}`), "a")
	f.Add([]byte(`{"type":"grants","grants":[{"id":"g1","pipeline":[[]]}]}`), []byte(`{"type":"result","grant":"g1","error":"\u202e"}`), "g")
	f.Add([]byte(`{"type":"pending","request":{"id":"","env":{"":""},"reason":"\n\n"}}`), []byte(`{}`), "d")
	f.Add([]byte(`{"type":"passkeys","passkeys":[{"name":"\u001b[2Jalice","rp_id":"h","origins":["x"],"credential_id":"AQ==","public_key":"Ag=="}]}`), []byte(`{"type":"passkeys","error":"\u202e"}`), "a")
	f.Fuzz(func(t *testing.T, a, b []byte, keys string) {
		h := newHarness(t, "tmux")
		for _, line := range [][]byte{a, b} {
			var m approval.Message
			if json.Unmarshal(line, &m) == nil {
				h.update(daemonMsg{m: m})
			}
			h.view()
			h.pastGuard()
			for _, r := range keys {
				h.update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
				h.view()
			}
			h.update(keyMsg("enter"))
			h.view()
		}
		for _, m := range h.sent {
			switch m.Type {
			case approval.MsgDecide:
				if m.ID == "" && m.Hash == "" {
					t.Errorf("decision without id and hash: %+v", m)
				}
			case approval.MsgRevoke:
			default:
				t.Errorf("sent %+v", m)
			}
		}
	})
}

func TestResolvedWhileTypingANote(t *testing.T) {
	h := newHarness(t, "")
	h.pending(shown("r1"))
	h.pending(shown("r2"))
	h.pastGuard()
	h.press("d")
	h.key("n")
	h.wantView("Note for the agent")
	h.resolved("r1", approval.Timeout, "approval_timeout")
	h.wantFull("request r1 timed out", "id         r2", "> Deny", "(keys enabled in 0.5s)")
	h.notView("Note for the agent")
	// The Enter that would have sent the note does nothing to r2.
	h.key("enter")
	if got := h.takeSent(); len(got) != 0 {
		t.Errorf("sent %+v", got)
	}
}

// TestNoticesNeverEvictTheHeaderOrTheRequest: notices are caused by agents
// (each withdrawn request leaves one), so on an 80×24 screen inside tmux a
// burst of them must not push the header, the multiplexer warning or the
// request's command line off the screen (red-team finding: four withdrawn
// requests hid the header and the "runs inside tmux" warning).
func TestNoticesNeverEvictTheHeaderOrTheRequest(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {60, 20}, {100, 30}} {
		h := newHarness(t, "tmux")
		h.update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
		for i := range maxNotices + 2 {
			id := strings.Repeat(string(rune('a'+i)), 36) // long, as UUIDs are
			h.pending(shown(id))
			h.resolved(id, approval.Withdrawn, "client")
		}
		s := shown("big")
		s.Pipeline = [][]string{{"bash", "-c", strings.Repeat("echo hello; ", 40) + "id > /tmp/pwned"}}
		s.Programs = []approval.Program{{Chain: []string{"/usr/bin/bash"}}}
		h.pending(s)
		v := h.view()
		lines := strings.Split(v, "\n")
		if len(lines) > size[1] {
			t.Errorf("%dx%d: the view has %d lines, more than the screen:\n%s", size[0], size[1], len(lines), v)
		}
		if !strings.HasPrefix(lines[0], "agent-sudo approve · 1 waiting") {
			t.Errorf("%dx%d: the first line is not the header:\n%s", size[0], size[1], v)
		}
		wants := []string{"in tmux", "REQUEST WAITING", "command"}
		for _, want := range wants {
			if !strings.Contains(v, want) {
				t.Errorf("%dx%d: screen lacks %q:\n%s", size[0], size[1], want, v)
			}
		}
	}
}

// TestRequestShowsWhy: the daemon's reason for asking is on the screen,
// escaped like a path.
func TestRequestShowsWhy(t *testing.T) {
	h := newHarness(t, "")
	s := shown("r1")
	s.Why = "no rule applies to stage 2 of 2: /usr/bin/tee"
	h.pending(s)
	h.wantView("why        no rule applies to stage 2 of 2: /usr/bin/tee")

	s = shown("r2")
	s.Why = "rule \"x\" asks for stage 1 of 1: /tmp/\x1b[2Jp\u0430th"
	h.pending(s)
	h.resolved("r1", approval.Deny, "console")
	h.wantView(`why        rule "x" asks for stage 1 of 1: /tmp/\x1b[2Jp\u0430th`, escapedNotice)
}

// agentAndLogin is the ancestry above an agent's request in the
// first-screen tests, newest first: Claude Code started by make in a shell
// in tmux, in alice's login through sudo -i.
var agentAndLogin = []approval.Hop{
	{PID: 812, Exe: "/usr/lib/node_modules/@anthropic-ai/claude-code/bin/claude", Comm: "claude", Argv: []string{"claude"}},
	{PID: 806, Exe: "/usr/bin/make", Comm: "make", Argv: []string{"make", "agent"}},
	{PID: 802, Exe: "/usr/bin/bash", Comm: "bash", Argv: []string{"bash"}},
	{PID: 800, Exe: "/usr/bin/tmux", Comm: "tmux", Argv: []string{"tmux"}},
	{PID: 790, Exe: "/usr/bin/bash", Comm: "bash", Argv: []string{"bash"}},
	{PID: 760, Exe: "/usr/bin/sudo", Comm: "sudo", Argv: []string{"sudo", "-u", "alice", "-i"}},
	{PID: 750, Exe: "/usr/bin/bash", Comm: "bash", Argv: []string{"-bash"}},
}

// harness80x24 is a console in tmux on an 80×24 terminal with three
// notices on screen (the newest of four withdrawn requests): the setting in
// which the first screen must hold everything needed to judge.
func harness80x24(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, "tmux")
	h.update(tea.WindowSizeMsg{Width: 80, Height: 24})
	for i := range 4 {
		id := fmt.Sprintf("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f%d", i)
		h.pending(shown(id))
		h.resolved(id, approval.Withdrawn, approval.ByClient)
	}
	return h
}

// TestFirstScreenAt80x24: on an 80×24 terminal inside tmux, with three
// notices, a typical request (two stages, environment, a two-line reason)
// shows everything needed to judge it without scrolling, each notice and
// the multiplexer warning on one line; the details are one key away.
func TestFirstScreenAt80x24(t *testing.T) {
	h := harness80x24(t)
	s := shown("r1")
	s.Why = "no rule applies to stage 2 of 2: /usr/bin/tee"
	s.Env["LC_ALL"] = "C"
	s.Reason = "install nginx for the web tests\nthe old one is broken"
	s.Peer.Exe = "/usr/bin/agent-sudo"
	s.Peer.Ancestry = &approval.Ancestry{Hops: append([]approval.Hop{
		{PID: 4242, Exe: "/usr/bin/agent-sudo", Comm: "agent-sudo", Argv: []string{"agent-sudo", "mcp"}},
	}, agentAndLogin...), End: approval.EndLoginShell}
	h.pending(s)
	v := h.view()
	lines := strings.Split(v, "\n")
	if len(lines) > 24 {
		t.Errorf("%d lines on a screen of 24:\n%s", len(lines), v)
	}
	h.wantView(
		"⚠ WARNING: in tmux, an agent typing into it could approve its own requests\n",
		"REQUEST WAITING FOR YOUR DECISION · times out in 2m0s\n",
		"command    apt-get install -y nginx | tee '/var/log/x y.log'\n",
		"runs       as root\n",
		"why        no rule applies to stage 2 of 2: /usr/bin/tee\n",
		"asked by   uid 1000 (alice), kernel-verified: … 2 older (v) → bash (pid 790)",
		"↳ → tmux (pid 800) → bash (pid 802) → make agent (pid 806) →",
		"↳ claude (pid 812, /usr/lib/…/claude) → agent-sudo mcp (pid 4242)\n",
		"reason     install nginx for the web tests\n           the old one is broken\n",
		"cwd        /\n",
		"env        DEBIAN_FRONTEND LC_ALL (values: press v)\n",
		"agent      session build-42 · host devbox · claimed by the agent\n",
		"> Deny (d)",
	)
	h.notView("PgUp/PgDn scroll --", "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "stage 1    ", "stage 2    ")
	h.wantFull("stage 1    /usr/bin/apt-get install -y nginx\n", "stage 2    /usr/bin/tee '/var/log/x y.log'\n")
	if n := len(lines); !strings.HasPrefix(lines[n-2], "Your decision:") || !strings.HasPrefix(lines[n-1], "keys: ") {
		t.Errorf("the prompt and the keys are not one line each:\n%s", v)
	}
	if n := strings.Count(v, "\n• request 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f"); n != 3 {
		t.Errorf("%d notices, want the newest 3:\n%s", n, v)
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "• ") && !strings.HasSuffix(l, "...") && !strings.HasSuffix(l, ")") {
			t.Errorf("a notice takes more than one line:\n%s", v)
		}
	}
}

// TestFirstScreenCutsLongTexts: the why and the reason show their first
// lines on the first screen, saying that more is in the details, which
// show them whole.
func TestFirstScreenCutsLongTexts(t *testing.T) {
	h := newHarness(t, "")
	h.update(tea.WindowSizeMsg{Width: 80, Height: 24})
	s := shown("r1")
	s.Why = strings.Repeat("no rule applies to stage 1 of 2: /usr/bin/apt-get; ", 6) + "END-OF-WHY"
	s.Reason = "one\ntwo\nthree\nfour\nEND-OF-REASON"
	h.pending(s)
	h.wantView("reason     one\n           two\n           three\n           … more of the reason: press v for all details",
		"… more of why: press v for all details")
	h.notView("END-OF-WHY", "four", "END-OF-REASON")
	h.wantFull("END-OF-WHY", "four", "END-OF-REASON")
	h.pastGuard()
	h.press("v")
	h.wantView("ALL DETAILS", "END-OF-WHY", "END-OF-REASON")
	h.press("v")
	h.notView("ALL DETAILS", "END-OF-WHY")
}

// TestPgDnMovesAPage: at 80×24 inside tmux with notices, PgDn and PgUp move
// the request by a page, not a line.
func TestPgDnMovesAPage(t *testing.T) {
	h := newHarness(t, "tmux")
	h.update(tea.WindowSizeMsg{Width: 80, Height: 24})
	for i := range 3 {
		id := fmt.Sprintf("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f%d", i)
		h.pending(shown(id))
		h.resolved(id, approval.Withdrawn, approval.ByClient)
	}
	s := shown("r1")
	s.Pipeline = [][]string{{"bash", "-c", strings.Repeat("echo hello; ", 160)}}
	s.Programs = []approval.Program{{Chain: []string{"/usr/bin/bash"}}}
	h.pending(s)
	h.pastGuard()
	_, _, _, avail := h.m.frame()
	h.key("pgdown")
	if page := avail - 2; h.m.scroll != page || page < 10 {
		t.Errorf("PgDn scrolled to line %d; want a page (%d lines, at least 10)", h.m.scroll, page)
	}
	h.key("pgup")
	if h.m.scroll != 0 {
		t.Errorf("PgUp scrolled to line %d, want 0", h.m.scroll)
	}
}

// TestFirstScreenKeepsTheAgent: at 80×24 with the multiplexer warning and
// three notices, a request an agent sent through shells and agent-sudo run
// names the agent on the first screen: the oldest hops are elided, and when
// that is not enough the shells between the agent and the client become one
// "… N shells", never the agent (before, "… 5 older (v) → sh → bash → bash
// → agent-sudo run" kept the shells and the client, and dropped the agent).
func TestFirstScreenKeepsTheAgent(t *testing.T) {
	h := harness80x24(t)
	s := shown("r1")
	s.Peer.Exe = "/usr/local/bin/agent-sudo"
	s.Peer.Ancestry = &approval.Ancestry{Hops: append([]approval.Hop{
		{PID: 4242, Exe: "/usr/local/bin/agent-sudo", Comm: "agent-sudo", Argv: []string{"agent-sudo", "run", "--reason", "x", "--", "apt-get", "update"}},
		// Enough shells that with them the agent no longer fits.
		{PID: 4240, Exe: "/usr/bin/bash", Comm: "bash", Argv: []string{"/bin/bash", "-c", "agent-sudo run ..."}},
		{PID: 4239, Exe: "/usr/bin/bash", Comm: "bash", Argv: []string{"bash"}},
		{PID: 4238, Exe: "/usr/bin/bash", Comm: "bash", Argv: []string{"bash", "-c", "source ~/.bashrc; eval ..."}},
		{PID: 4237, Exe: "/usr/bin/dash", Comm: "sh", Argv: []string{"sh"}},
		{PID: 4236, Exe: "/usr/bin/dash", Comm: "sh", Argv: []string{"sh", "-c", "..."}},
		{PID: 4235, Exe: "/usr/bin/bash", Comm: "bash", Argv: []string{"bash"}},
		{PID: 4234, Exe: "/usr/bin/bash", Comm: "bash", Argv: []string{"bash"}},
		{PID: 4233, Exe: "/usr/bin/dash", Comm: "sh", Argv: []string{"sh"}},
	}, agentAndLogin...), End: approval.EndLoginShell}
	h.pending(s)
	v := h.view()
	if lines := strings.Split(v, "\n"); len(lines) > 24 {
		t.Errorf("%d lines on a screen of 24:\n%s", len(lines), v)
	}
	// The asked-by field, its continuation lines joined.
	i := strings.Index(v, "asked by   ")
	if i < 0 {
		t.Fatalf("no asked-by line:\n%s", v)
	}
	var asked []string
	for n, l := range strings.Split(v[i:], "\n") {
		if n > 0 && !strings.HasPrefix(strings.TrimSpace(l), "↳") {
			break
		}
		asked = append(asked, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "↳")))
	}
	text := strings.Join(asked, " ")
	for _, want := range []string{"claude (pid 812", "→ … 8 shells (v) → agent-sudo run (pid 4242"} {
		if !strings.Contains(text, want) {
			t.Errorf("asked by %q; want it to contain %q\n%s", text, want, v)
		}
	}
	if strings.Contains(text, "make agent") && strings.Contains(text, "sudo (pid 760") {
		t.Errorf("asked by %q: nothing older was elided, yet it fits three lines only with elision\n%s", text, v)
	}
}

// TestFirstScreenAt80x24Holds renders requests that once pushed what is
// needed to judge them below the fold (issue 22) on an 80×24 terminal in
// tmux with three notices, and checks the 24 lines on screen: a stdin's
// content is next to the command that reads it (escaped, with the size and
// the start of its hash), the reason's first lines are always there (said
// to be cut when they are), and a stage line that only repeats the command
// is left out (the details keep it).
func TestFirstScreenAt80x24Holds(t *testing.T) {
	// The ancestry of an agent's request through shells: claude, then
	// bash → bash → bash, then agent-sudo run.
	shells := &approval.Ancestry{Hops: append([]approval.Hop{
		{PID: 4242, Exe: "/usr/bin/agent-sudo", Comm: "agent-sudo", Argv: []string{"agent-sudo", "run", "--", "apt-get"}},
		{PID: 4241, Exe: "/usr/bin/bash", Comm: "bash", Argv: []string{"/bin/bash", "-c", "sudo apt-get ..."}},
		{PID: 4240, Exe: "/usr/bin/bash", Comm: "bash", Argv: []string{"bash"}},
		{PID: 4239, Exe: "/usr/bin/bash", Comm: "bash", Argv: []string{"bash", "-c", "source ~/.bashrc; eval ..."}},
	}, agentAndLogin...), End: approval.EndLoginShell}
	conf := "server {\n    listen 8081;\n    server_name test.local;\n    root /srv/test;\n}\n"
	sum := approval.NewStdinShown([]byte(conf)).SHA256
	packages := []string{"apt-get", "install", "-y", "--no-install-recommends",
		"nginx-light", "postgresql-15", "redis-server", "python3-venv", "build-essential",
		"libssl-dev", "pkg-config", "ca-certificates", "curl"}
	reason := "the web tests need a local nginx, postgres and redis\nthe build needs a compiler and libssl\n" +
		"the venv is for the test runner\ncurl fetches the fixtures\nnone of these are installed yet"
	tee := func(s *approval.Shown) {
		s.Pipeline = [][]string{{"tee", "/etc/nginx/conf.d/test.conf"}}
		s.Programs = []approval.Program{{Chain: []string{"/usr/bin/tee"}}}
		s.Stdin = approval.NewStdinShown([]byte(conf))
		s.Why = "no rule applies to stage 1 of 1: /usr/bin/tee"
	}
	for _, c := range []struct {
		name      string
		edit      func(*approval.Shown)
		want, not []string
		wantFull  []string
	}{{
		name: "stdin beside the command that reads it",
		edit: tee,
		want: []string{
			"command    tee /etc/nginx/conf.d/test.conf\n",
			fmt.Sprintf("stdin      %d bytes · sha256 %s… · the first stage reads this\n", len(conf), sum[:16]),
			"           server {\n",
			"               listen 8081;\n",
			"               server_name test.local;\n",
			fmt.Sprintf("… 22 more bytes not shown: press i to see all %d bytes", len(conf)),
			"reason     install nginx for the web tests\n",
			"keys: ↑/↓ enter · v details · PgUp/PgDn · g grants · i stdin · q quit",
		},
		not:      []string{"stage 1    ", sum},
		wantFull: []string{fmt.Sprintf("stdin      %d bytes · sha256 ", len(conf)), sum, "    root /srv/test;", "stage 1    /usr/bin/tee /etc/nginx/conf.d/test.conf"},
	}, {
		name: "stdin is escaped",
		edit: func(s *approval.Shown) {
			tee(s)
			s.Stdin = approval.NewStdinShown([]byte("listen 8081; \x1b]0;pwned\x07\u202e\nroot /srv;\n"))
		},
		want: []string{escapedNotice[:40], `           listen 8081; \x1b]0;pwned\x07\u202e` + "\n", "           root /srv;\n"},
	}, {
		name: "the reason of a long apt-get install",
		edit: func(s *approval.Shown) {
			s.Pipeline = [][]string{packages}
			s.Programs = []approval.Program{{Chain: []string{"/usr/bin/apt-get"}}}
			s.Reason = reason
			s.Why = "no rule applies to stage 1 of 1: /usr/bin/apt-get"
		},
		want: []string{
			"command    apt-get install -y --no-install-recommends nginx-light \n",
			"reason     the web tests need a local nginx, postgres and redis\n",
			"… more of the reason: press v for all details",
			"→ claude (pid",
			"env        DEBIAN_FRONTEND (values: press v)\n",
			"agent      session build-42 · host devbox · claimed by the agent\n",
		},
		not:      []string{"stage 1    ", "none of these are installed yet", "PgUp/PgDn scroll --"},
		wantFull: []string{"stage 1    /usr/bin/apt-get install -y", "none of these are installed yet"},
	}, {
		name: "a stage that only repeats the command is left out",
		edit: func(s *approval.Shown) {
			s.Pipeline = [][]string{{"/usr/bin/id", "-u"}, {"grep", "0"}, {"tr", "0", "x"}}
			s.Programs = []approval.Program{{Chain: []string{"/usr/bin/id"}}, {Chain: []string{"/usr/bin/grep"}}, {Chain: []string{"/usr/sbin/tr"}}}
		},
		want:     []string{"command    /usr/bin/id -u | grep 0 | tr 0 x\n"},
		not:      []string{"stage 1    ", "stage 2    ", "stage 3    "},
		wantFull: []string{"stage 1    /usr/bin/id -u\n", "stage 2    /usr/bin/grep 0\n", "stage 3    /usr/sbin/tr 0 x\n"},
	}, {
		name: "a stage that says more than the command stays",
		edit: func(s *approval.Shown) {
			s.Pipeline = [][]string{{"editor", "/etc/hosts"}, {"grep", "x"}, {"tee", "/etc/x"}, {"./build", "all"}}
			s.Programs = []approval.Program{
				{Chain: []string{"/usr/bin/editor", "/etc/alternatives/editor", "/usr/bin/vim.basic"}},
				{Chain: []string{"/opt/tools/bin/grep"}},
				{Chain: []string{"/usr/bin/tee"}, Writable: []approval.Writable{{Path: "/usr/bin/tee", Why: "the file is owned by uid 1000"}}},
				{Chain: []string{"/home/alice/src/build"}},
			}
		},
		want: []string{
			"stage 1    /usr/bin/editor -> /etc/alternatives/editor -> /usr/bin/vim.basic \n",
			"stage 2    /opt/tools/bin/grep x\n",
			"stage 3    /usr/bin/tee /etc/x\n",
			writableWarning,
			"stage 4    /home/alice/src/build all\n",
		},
	}, {
		name: "a command longer than the screen puts the reason first",
		edit: func(s *approval.Shown) {
			s.Pipeline = [][]string{{"bash", "-c", strings.Repeat("echo hello; ", 160)}}
			s.Programs = []approval.Program{{Chain: []string{"/usr/bin/bash"}}}
			s.Reason = reason
		},
		want: []string{
			"reason     the web tests need a local nginx, postgres and redis\n",
			"… more of the reason: press v for all details\ncommand    bash -c 'echo hello; echo hello;",
			"PgUp/PgDn scroll --",
		},
		not: []string{"stage 1    "},
	}, {
		name: "all at once",
		edit: func(s *approval.Shown) {
			tee(s)
			s.Pipeline = [][]string{{"tee", "/etc/apt/sources.list.d/test.list"}}
			s.Stdin = approval.NewStdinShown([]byte("deb http://deb.debian.org/debian bookworm-backports main\n"))
			s.Reason = reason
			s.Env["LC_ALL"] = "C"
		},
		want: []string{
			"command    tee /etc/apt/sources.list.d/test.list\n",
			"stdin      57 bytes · sha256 ",
			"           deb http://deb.debian.org/debian bookworm-backports main\n",
			"runs       as root\n",
			"why        no rule applies to stage 1 of 1: /usr/bin/tee\n",
			"→ claude (pid",
			"reason     the web tests need a local nginx, postgres and redis\n",
			"… more of the reason: press v for all details",
			"cwd        /\n",
			"env        DEBIAN_FRONTEND LC_ALL (values: press v)\n",
			"agent      session build-42 · host devbox · claimed by the agent\n",
		},
		not:      []string{"stage 1    ", "PgUp/PgDn scroll --", "none of these are installed yet", "more bytes not shown"},
		wantFull: []string{"stage 1    /usr/bin/tee /etc/apt/sources.list.d/test.list", "none of these are installed yet"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			h := harness80x24(t)
			s := shown("r1")
			s.Peer.Exe = "/usr/bin/agent-sudo"
			s.Peer.Ancestry = shells
			c.edit(s)
			h.pending(s)
			lines := strings.Split(h.view(), "\n")
			if len(lines) > 24 {
				t.Errorf("%d lines on a screen of 24", len(lines))
				lines = lines[:24]
			}
			screen := strings.Join(lines, "\n") + "\n"
			if !strings.Contains(screen, "⚠ WARNING: in tmux, ") || strings.Count(screen, " was withdrawn by the client") != 3 {
				t.Errorf("the screen lacks the multiplexer warning or the three notices:\n%s", screen)
			}
			if !strings.HasPrefix(lines[len(lines)-2], "Your decision:") {
				t.Errorf("the prompt is not on the second-last line:\n%s", screen)
			}
			for _, w := range c.want {
				if !strings.Contains(screen, w) {
					t.Errorf("the first screen lacks %q:\n%s", w, screen)
				}
			}
			for _, n := range c.not {
				if strings.Contains(screen, n) {
					t.Errorf("the first screen has %q:\n%s", n, screen)
				}
			}
			h.wantFull(c.wantFull...)
		})
	}
}
