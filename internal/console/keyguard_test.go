package console

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agent-sudo/agent-sudo/approval"
)

// readyHarness is a harness with request r1 on screen, past its guard,
// and a keyboard that has been quiet for a while.
func readyHarness(t *testing.T) (*harness, *approval.Shown) {
	t.Helper()
	h := newHarness(t, "")
	s := shown("r1")
	h.pending(s)
	h.pastGuard()
	return h, s
}

// burst returns the key events bubbletea makes of text that arrived in one
// read: runs of characters up to a space or control character are one
// event, each space and each Enter (CR, as a terminal sends a newline) one
// more.
func burst(text string) []tea.KeyMsg {
	var out []tea.KeyMsg
	var run []rune
	flush := func() {
		if len(run) > 0 {
			out = append(out, tea.KeyMsg{Type: tea.KeyRunes, Runes: run})
			run = nil
		}
	}
	for _, r := range text {
		switch r {
		case ' ':
			flush()
			out = append(out, tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}})
		case '\n', '\r':
			flush()
			out = append(out, tea.KeyMsg{Type: tea.KeyEnter})
		default:
			run = append(run, r)
		}
	}
	flush()
	return out
}

func TestBurstSplitsLikeBubbletea(t *testing.T) {
	got := burst("hello a\n")
	want := []tea.KeyMsg{
		{Type: tea.KeyRunes, Runes: []rune("hello")},
		{Type: tea.KeySpace, Runes: []rune{' '}},
		{Type: tea.KeyRunes, Runes: []rune("a")},
		{Type: tea.KeyEnter},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("burst = %+v, want %+v", got, want)
	}
}

// wantNothingDecided fails if the console sent anything or left the
// decision prompt.
func (h *harness) wantNothingDecided() {
	h.t.Helper()
	if got := h.takeSent(); len(got) != 0 {
		h.t.Fatalf("sent %+v", got)
	}
	if h.m.quitting || h.m.mode() != modeDecide {
		h.t.Fatalf("the console changed: quitting=%v mode=%v", h.m.quitting, h.m.mode())
	}
	if v := h.m.screen.(*decideScreen).hovered(); v != approval.DenyOnce {
		h.t.Fatalf("the cursor is on %q, want Deny", v)
	}
}

func TestLoneKeyActsAfterTheQuietWindow(t *testing.T) {
	tests := []struct {
		keys   []string
		choice approval.Choice // "" when the key opens the note
	}{
		{[]string{"a"}, approval.AllowOnce},
		{[]string{"s", "wait", "y"}, approval.AllowSession},
		{[]string{"d"}, ""},
		{[]string{"enter"}, ""},
		{[]string{"up", "enter", "wait", "y"}, approval.AllowSession},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.keys, " "), func(t *testing.T) {
			h, s := readyHarness(t)
			for _, k := range tt.keys[:len(tt.keys)-1] {
				if k == "wait" { // past the guard of a new prompt
					h.pastGuard()
					continue
				}
				h.press(k)
			}
			h.key(tt.keys[len(tt.keys)-1])
			// Held, not dropped and not yet acted on.
			h.advance(QuietWindow - time.Nanosecond)
			h.wantNothingDeciding(t)
			h.advance(time.Nanosecond)
			if tt.choice == "" {
				if h.m.mode() != modeNote {
					t.Fatalf("mode = %v after the quiet window, want the note", h.m.mode())
				}
				return
			}
			if got, want := h.takeSent(), []approval.Message{decideMsg(s, tt.choice, "")}; !reflect.DeepEqual(got, want) {
				t.Fatalf("sent %+v, want %+v", got, want)
			}
		})
	}
}

// wantNothingDeciding: nothing sent and still at the prompt (the cursor
// may have been moved on purpose).
func (h *harness) wantNothingDeciding(t *testing.T) {
	t.Helper()
	if got := h.takeSent(); len(got) != 0 {
		t.Fatalf("sent %+v within the quiet window", got)
	}
	if m := h.m.mode(); m != modeDecide && m != modeConfirm {
		t.Fatalf("mode = %v within the quiet window", m)
	}
}

// followers are inputs that, arriving within the quiet window of a key,
// cancel it.
var followers = map[string]tea.Msg{
	"letter":          keyMsg("x"),
	"same key":        keyMsg("a"),
	"space":           tea.KeyMsg{Type: tea.KeySpace, Runes: []rune{' '}},
	"enter":           keyMsg("enter"),
	"word":            keyMsg("hello"),
	"page down":       keyMsg("pgdown"),
	"arrow":           keyMsg("down"),
	"bracketed paste": tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("x"), Paste: true},
	"alt key":         tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("x"), Alt: true},
	"mouse":           tea.MouseMsg{},
	"focus":           tea.FocusMsg{},
}

func TestKeyFollowedWithinTheWindowIsCancelled(t *testing.T) {
	for name, f := range followers {
		for _, key := range []string{"a", "s", "d", "enter", "q"} {
			t.Run(name+" after "+key, func(t *testing.T) {
				h, _ := readyHarness(t)
				h.key(key)
				h.advance(QuietWindow - time.Millisecond)
				h.update(f)
				h.advance(time.Second)
				h.wantNothingDecided()
				h.wantView("input discarded: ", "keys arrived together (paste or typing ahead); press a key on its own to decide")
			})
		}
	}
}

func TestKeyPrecededWithinTheWindowIsIgnored(t *testing.T) {
	for name, f := range followers {
		for _, key := range []string{"a", "s", "d", "enter", "q"} {
			t.Run(key+" after "+name, func(t *testing.T) {
				h, _ := readyHarness(t)
				h.update(f)
				h.advance(QuietWindow - time.Millisecond)
				h.key(key)
				h.advance(time.Second)
				h.wantNothingDecided()
				n := 1
				if k, ok := f.(tea.KeyMsg); ok {
					n = keyCount(k)
				}
				h.wantView(fmt.Sprintf("input discarded: %d keys arrived together", n+1))
			})
		}
	}
}

// TestQuietWindowBoundary: exactly QuietWindow of silence on each side is
// quiet; a nanosecond less is not.
func TestQuietWindowBoundary(t *testing.T) {
	h, s := readyHarness(t)
	h.key("x")
	h.advance(QuietWindow)
	h.key("a")
	h.advance(QuietWindow)
	// The next key arrives exactly at the end of a's window: a counted.
	h.key("x")
	if got, want := h.takeSent(), []approval.Message{decideMsg(s, approval.AllowOnce, "")}; !reflect.DeepEqual(got, want) {
		t.Fatalf("sent %+v, want %+v", got, want)
	}

	h, _ = readyHarness(t)
	h.key("x")
	h.advance(QuietWindow - time.Nanosecond)
	h.key("a")
	h.advance(time.Second)
	h.wantNothingDecided()
}

// TestLateTimerStillActs: when the quiet window's timer is late and the
// next key comes first, the held key (alone for its whole window) acts
// before the next key is handled.
func TestLateTimerStillActs(t *testing.T) {
	h, s := readyHarness(t)
	h.key("a")
	h.timers = nil // the timer never comes
	h.now = h.now.Add(QuietWindow + time.Millisecond)
	h.key("x")
	if got, want := h.takeSent(), []approval.Message{decideMsg(s, approval.AllowOnce, "")}; !reflect.DeepEqual(got, want) {
		t.Fatalf("sent %+v, want %+v", got, want)
	}
}

// prose is ordinary text with each key that acts as a word of its own.
// Texts of one key are given a neighbour where they are used.
var prose = []string{
	"hello a",
	"so I did s quick check",
	"this is a test",
	"I'd say d is fine",
	"plan b, then q to quit",
	"go to g and r or x",
	"a",
	"s\n",
	"ok\n",
	"\n",
	"line one\nline two\n",
}

func TestProseNeverDecides(t *testing.T) {
	for _, text := range prose {
		for _, gap := range []time.Duration{0, time.Millisecond, QuietWindow - time.Millisecond} {
			t.Run(fmt.Sprintf("%q %v apart", text, gap), func(t *testing.T) {
				h, _ := readyHarness(t)
				keys := burst(text)
				if len(keys) == 1 && keyCount(keys[0]) == 1 {
					// A text of one key needs a neighbour to be a burst.
					keys = append(burst("x"), keys...)
				}
				n := 0
				for _, k := range keys {
					n += keyCount(k)
					h.update(k)
					h.advance(gap)
				}
				h.advance(time.Second)
				h.wantNothingDecided()
				h.wantView(fmt.Sprintf(discardedText, n))
			})
		}
	}
}

func TestProseNeverDecidesAnywhere(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		h := newHarness(t, "")
		for _, text := range prose {
			for _, k := range burst("x" + text) {
				h.update(k)
			}
			h.advance(time.Second)
		}
		if h.m.quitting || h.m.mode() != modeDecide {
			t.Fatalf("quitting=%v mode=%v", h.m.quitting, h.m.mode())
		}
	})
	t.Run("grants", func(t *testing.T) {
		h := newHarness(t, "")
		h.daemon(approval.Message{Type: approval.MsgGrants, Grants: []approval.Grant{{ID: "g1"}, {ID: "g2"}}})
		h.press("g")
		for _, text := range prose {
			for _, k := range burst("x" + text) {
				h.update(k)
			}
			h.advance(time.Second)
		}
		if got := h.takeSent(); len(got) != 0 || h.m.quitting || h.m.mode() != modeGrants {
			t.Fatalf("sent %+v quitting=%v mode=%v", got, h.m.quitting, h.m.mode())
		}
		h.wantView("input discarded")
	})
	t.Run("note", func(t *testing.T) {
		h, s := readyHarness(t)
		h.press("d")
		for _, k := range burst("not now\n") {
			h.update(k)
		}
		h.advance(time.Second)
		if got := h.takeSent(); len(got) != 0 || h.m.mode() != modeNote {
			t.Fatalf("sent %+v mode=%v", got, h.m.mode())
		}
		h.wantView("input discarded: 8 keys arrived together", "not now")
		// Enter on its own sends the note typed so far.
		h.press("enter")
		if got, want := h.takeSent(), []approval.Message{decideMsg(s, approval.DenyOnce, "not now")}; !reflect.DeepEqual(got, want) {
			t.Fatalf("sent %+v, want %+v", got, want)
		}
	})
	t.Run("stdin", func(t *testing.T) {
		h := newHarness(t, "")
		h.pending(stdinShown("r1", []byte("one\n")))
		h.pastGuard()
		h.press("i")
		for _, text := range append(prose, "look at i now") {
			for _, k := range burst("x" + text) {
				h.update(k)
			}
			h.advance(time.Second)
		}
		if got := h.takeSent(); len(got) != 0 || h.m.quitting || h.m.mode() != modeStdin {
			t.Fatalf("sent %+v quitting=%v mode=%v", got, h.m.quitting, h.m.mode())
		}
		h.wantView("input discarded", "STDIN OF REQUEST r1")
	})
}

func TestBracketedPasteNeverDecides(t *testing.T) {
	for _, text := range append(prose, "a", "s", "d", "\r", "q") {
		t.Run(fmt.Sprintf("%q", text), func(t *testing.T) {
			h, _ := readyHarness(t)
			h.update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(text), Paste: true})
			h.advance(time.Second)
			h.wantNothingDecided()
			h.wantView("input discarded")
		})
	}
}

// TestBurstPutsTheCursorBackOnDeny: a burst that moved the cursor before
// being recognised leaves Deny focused.
func TestBurstPutsTheCursorBackOnDeny(t *testing.T) {
	h, _ := readyHarness(t)
	for _, k := range burst("k k") {
		h.update(k)
	}
	h.advance(time.Second)
	h.wantNothingDecided()
	h.press("enter") // Deny: the note
	if h.m.mode() != modeNote {
		t.Fatalf("enter after the burst: mode %v, want the note", h.m.mode())
	}
}

// TestHeldKeyDoesNotCarryOver: a key held for one request never acts on
// the request that replaces it (issue 12: the next request must not
// inherit keystrokes typed for the previous one).
func TestHeldKeyDoesNotCarryOver(t *testing.T) {
	for _, change := range []string{"resolved elsewhere", "changed", "own decision confirmed"} {
		t.Run(change, func(t *testing.T) {
			h := newHarness(t, "")
			r1, r2 := shown("r1"), shown("r2")
			h.pending(r1)
			h.pending(r2)
			h.pastGuard()
			switch change {
			case "resolved elsewhere":
				h.key("a")
				h.advance(QuietWindow / 2)
				h.resolved("r1", approval.Deny, "console uid=0 tty=/dev/pts/9 pid=1")
			case "changed":
				h.key("a")
				h.advance(QuietWindow / 2)
				r1b := shown("r1")
				r1b.Pipeline = [][]string{{"rm", "-rf", "/"}}
				h.pending(r1b)
			case "own decision confirmed":
				h.press("d")
				h.key("enter")
				h.advance(QuietWindow)
				if got := h.takeSent(); len(got) != 1 {
					t.Fatalf("deny sent %+v", got)
				}
				// Typed ahead for the next request, before it is shown.
				h.advance(QuietWindow)
				h.key("a")
				h.advance(QuietWindow / 2)
				h.daemon(approval.Message{Type: approval.MsgResult, ID: "r1", OK: true})
			}
			h.advance(time.Minute)
			if got := h.takeSent(); len(got) != 0 {
				t.Fatalf("a key held for r1 sent %+v", got)
			}
			h.wantView("> Deny")
		})
	}
}

// TestSlowEventLoopCannotSpreadABurst: the event loop renders between key
// events, and a slow render spreads a burst that arrived in one read over
// time. The terminal's reads still show the burst.
func TestSlowEventLoopCannotSpreadABurst(t *testing.T) {
	for _, chunks := range [][]string{{"hello a"}, {"hello ", "a"}, {"hello", " a"}} {
		t.Run(fmt.Sprintf("%q", chunks), func(t *testing.T) {
			h, _ := readyHarness(t)
			log := newReadLog(func() time.Time { return h.now })
			h.alone = func(got, until time.Time, size int) bool { return log.alone(got, until, size, QuietWindow) }
			for _, c := range chunks {
				log.record(len(c))
			}
			for _, k := range burst(strings.Join(chunks, "")) {
				h.advance(QuietWindow + 50*time.Millisecond) // a slow render
				h.update(k)
			}
			h.advance(time.Second)
			h.wantNothingDecided()
			// The discards of the events are counted (each came after a
			// pause), so the prefix may say "(3×)".
			h.wantView(strings.TrimPrefix(discardedReadText, discardedPrefix))
		})
	}
	t.Run("a lone read still counts", func(t *testing.T) {
		h, s := readyHarness(t)
		log := newReadLog(func() time.Time { return h.now })
		h.alone = func(got, until time.Time, size int) bool { return log.alone(got, until, size, QuietWindow) }
		log.record(5)
		h.advance(QuietWindow)
		log.record(1)
		h.press("a")
		if got, want := h.takeSent(), []approval.Message{decideMsg(s, approval.AllowOnce, "")}; !reflect.DeepEqual(got, want) {
			t.Fatalf("sent %+v, want %+v", got, want)
		}
	})
}

func TestReadLogAlone(t *testing.T) {
	const q = QuietWindow
	ms := time.Millisecond
	type read struct {
		at time.Duration
		n  int
	}
	tests := []struct {
		name  string
		reads []read
		got   time.Duration // when the model received the key
		size  int
		want  bool
	}{
		{"lone read", []read{{0, 1}}, 0, 1, true},
		{"lone read, received a little later", []read{{0, 1}}, 10 * ms, 1, true},
		{"quiet before", []read{{0, 3}, {q, 1}}, q, 1, true},
		{"read before too close", []read{{0, 3}, {q - ms, 1}}, q - ms, 1, false},
		{"read after too close", []read{{0, 1}, {q - ms, 1}}, 0, 1, false},
		{"several bytes in the read", []read{{0, 7}}, 0, 1, false},
		{"size unknown", []read{{0, 4}}, 0, 0, true},
		{"delete key", []read{{0, 4}}, 0, 4, true},
		{"read long before the key was received", []read{{0, 1}}, q + ms, 1, false},
		{"only read is after the key was received", []read{{10 * ms, 1}}, 0, 1, false},
		{"no read at all", nil, 0, 1, false},
		{"read after the window does not matter", []read{{0, 1}, {q + ms, 5}}, 0, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var now time.Time
			log := newReadLog(func() time.Time { return now })
			for _, r := range tt.reads {
				now = t0.Add(r.at)
				log.record(r.n)
			}
			got := t0.Add(tt.got)
			if ok := log.alone(got, got.Add(q), tt.size, q); ok != tt.want {
				t.Errorf("alone = %v, want %v", ok, tt.want)
			}
		})
	}
	t.Run("forgotten reads", func(t *testing.T) {
		var now time.Time
		log := newReadLog(func() time.Time { return now })
		for i := range readLogSize + 3 {
			now = t0.Add(time.Duration(i) * time.Second)
			log.record(1)
		}
		// The newest read, a second after the one before: alone.
		if !log.alone(now, now.Add(q), 1, q) {
			t.Errorf("the newest of spaced reads is not alone")
		}
	})
}

// TestUnknownInputIsInput runs bubbletea on a pipe and checks that what it
// makes of input it cannot parse is recognised as input (the check goes by
// bubbletea's unexported type names).
func TestUnknownInputIsInput(t *testing.T) {
	rec := &recorder{done: make(chan struct{})}
	r, w := io.Pipe()
	p := tea.NewProgram(rec, tea.WithInput(r), tea.WithOutput(io.Discard), tea.WithoutRenderer(), tea.WithoutSignalHandler())
	errc := make(chan error, 1)
	go func() { _, err := p.Run(); errc <- err }()
	if _, err := io.WriteString(w, "\x1b[99x\x1b[1;2;3;4;5;6;7Zq"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rec.done:
	case <-time.After(10 * time.Second):
		t.Fatal("bubbletea delivered nothing within 10s")
	}
	p.Quit()
	w.Close()
	<-errc
	if len(rec.msgs) < 2 {
		t.Fatalf("messages %#v, want the unknown sequences before q", rec.msgs)
	}
	for _, m := range rec.msgs {
		if !isInputMsg(m) {
			t.Errorf("%T (%#v) is not recognised as input", m, m)
		}
	}
	for _, m := range []tea.Msg{tea.WindowSizeMsg{}, tickMsg{}, quietMsg{}, daemonMsg{}, nil} {
		if isInputMsg(m) {
			t.Errorf("%T is taken for input", m)
		}
	}
}

// recorder records the input messages before the first q.
type recorder struct {
	msgs []tea.Msg
	done chan struct{}
}

func (r *recorder) Init() tea.Cmd { return nil }
func (r *recorder) View() string  { return "" }
func (r *recorder) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	select {
	case <-r.done:
		return r, nil
	default:
	}
	if k, ok := msg.(tea.KeyMsg); ok && k.String() == "q" {
		close(r.done)
		return r, nil
	}
	if _, ok := msg.(tea.WindowSizeMsg); !ok {
		r.msgs = append(r.msgs, msg)
	}
	return r, nil
}

// TestRepeatedDiscardsAreCounted: a key pressed again and discarded again
// changes the screen. The notice of a second discarded burst, while the
// first one's notice is shown, counts them ("input discarded (2×): "),
// also where the notice is cut to one line at 80 columns; the keys of one
// burst count once; and once the notice has expired, a discard starts
// over at one.
func TestRepeatedDiscardsAreCounted(t *testing.T) {
	h, _ := readyHarness(t)
	for _, k := range burst("hello a") {
		h.update(k)
	}
	h.advance(time.Second)
	h.wantView("✗ input discarded: 7 keys arrived together")
	h.notView("×")

	for _, k := range burst("a s d") {
		h.update(k)
	}
	h.advance(time.Second)
	h.wantView("✗ input discarded (2×): 5 keys arrived together")

	// A key the terminal's reads show was not alone (readLog.alone).
	h.alone = func(time.Time, time.Time, int) bool { return false }
	h.press("a")
	h.update(tea.WindowSizeMsg{Width: 80, Height: 24})
	h.wantView("✗ input discarded (3×): the key arrived together with other input")
	h.wantNothingDecided()
	if n := strings.Count(h.view(), "input discarded"); n != 1 {
		t.Errorf("%d discard notices on screen, want 1 that replaces the others:\n%s", n, h.view())
	}

	h.advance(noticeTTL + time.Second)
	h.update(tickMsg{})
	h.notView("input discarded")
	h.alone = nil
	for _, k := range burst("ok") {
		h.update(k)
	}
	h.advance(time.Second)
	h.wantView("✗ input discarded: 2 keys arrived together")
	h.notView("×")
}
