package console

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// The property: whatever arrives (lone keys, bursts split as bubbletea
// splits them, bracketed pastes, mouse and focus reports, resizes, daemon
// messages) at whatever intervals, nothing acts (decides, revokes, quits,
// opens the note or the grants) unless the latest input is a lone key that
// can cause that action, with nothing else within QuietWindow before it
// and nothing within QuietWindow after it up to when it acts.

// scriptKeys are the single keys a script presses.
var scriptKeys = []string{
	"a", "s", "d", "q", "g", "r", "x", "enter", "esc", "delete", "up", "down",
	"j", "k", "pgdown", "pgup", "home", "end", "tab", "backspace", "h", " ", "y", "v",
}

// scriptGaps are the pauses a script makes, around the quiet window.
var scriptGaps = []time.Duration{
	0, time.Nanosecond, time.Millisecond, 50 * time.Millisecond,
	QuietWindow - time.Nanosecond, QuietWindow, QuietWindow + time.Nanosecond,
	300 * time.Millisecond, DefaultGuard + time.Millisecond, 2 * time.Second,
}

// causes names, per kind of action, the keys that may cause it.
var causes = map[string][]string{
	"decide " + string(approval.AllowOnce):    {"a", "enter"},
	"decide " + string(approval.AllowSession): {"y"},
	"confirm":                             {"s", "enter"},
	"decide " + string(approval.DenyOnce): {"enter", "esc"},
	"revoke":                              {"r", "x", "delete", "enter"},
	"quit":                                {"q"},
	"note":                                {"d", "enter"},
	"grants":                              {"g"},
	"back":                                {"g", "esc"},
}

type inputEvent struct {
	at  time.Time
	msg tea.Msg
}

// runKeyScript plays data against a console with a request waiting and
// checks the property after every message; it returns how many actions
// happened.
func runKeyScript(t *testing.T, data []byte) int {
	h := newHarness(t, "")
	h.pending(shown("r0"))
	var events []inputEvent
	sent, quitting, mode := 0, false, h.m.mode()
	actions := 0
	h.onUpdate = func(msg tea.Msg) {
		k, isKey := msg.(tea.KeyMsg)
		input := isKey || isInputMsg(msg)
		var acts []string
		for _, m := range h.sent[sent:] {
			if m.Type == approval.MsgDecide {
				acts = append(acts, "decide "+string(m.Decision))
			} else {
				acts = append(acts, m.Type)
			}
		}
		sent = len(h.sent)
		if h.m.quitting && !quitting && !(isKey && k.Type == tea.KeyCtrlC) {
			acts = append(acts, "quit")
		}
		quitting = h.m.quitting
		switch {
		case h.m.mode() == mode:
		case h.m.mode() == modeNote:
			acts = append(acts, "note")
		case h.m.mode() == modeGrants:
			acts = append(acts, "grants")
		case h.m.mode() == modeConfirm:
			acts = append(acts, "confirm")
		case mode == modeGrants:
			acts = append(acts, "back")
		}
		mode = h.m.mode()
		for _, act := range acts {
			actions++
			if err := causeError(events, act, h.now); err != nil {
				t.Fatal(err)
			}
		}
		if input {
			events = append(events, inputEvent{at: h.now, msg: msg})
		}
	}
	next := 0
	// Each step is four bytes: what to do, and three arguments.
	for ; len(data) >= 4 && !h.m.quitting; data = data[4:] {
		a, b, c := int(data[1]), int(data[2]), int(data[3])
		switch data[0] % 10 {
		case 0:
			h.advance(scriptGaps[a%len(scriptGaps)])
		case 1, 2:
			h.key(scriptKeys[a%len(scriptKeys)])
		case 3:
			gap := scriptGaps[a%5]
			for _, k := range burst(prose[b%len(prose)]) {
				h.update(k)
				h.advance(gap)
			}
		case 4:
			for i := range a%5 + 2 {
				h.update(keyMsg(scriptKeys[(b+i*c)%len(scriptKeys)]))
			}
		case 5:
			h.update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(prose[a%len(prose)]), Paste: true})
		case 6:
			h.update(tea.WindowSizeMsg{Width: a % 200, Height: b % 60})
		case 7:
			next++
			h.pending(shown(fmt.Sprintf("r%d", next)))
		case 8:
			switch cur := h.m.current(); {
			case len(h.m.inflight) > 0:
				in := h.m.inflight[0]
				h.daemon(approval.Message{Type: approval.MsgResult, ID: in.id, Grant: in.grant, OK: true})
			case cur != nil && a%2 == 0:
				h.resolved(cur.id, approval.Deny, "console uid=0 tty=/dev/pts/7 pid=1")
			default:
				h.daemon(approval.Message{Type: approval.MsgGrants, Grants: []approval.Grant{{ID: "g1"}, {ID: "g2"}}})
			}
		case 9:
			h.update([]tea.Msg{
				tea.MouseMsg{}, tea.FocusMsg{}, tea.BlurMsg{},
				tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("a"), Alt: true},
				tea.KeyMsg{Type: tea.KeyEnter, Alt: true},
			}[a%5])
		}
	}
	h.advance(time.Minute)
	return actions
}

// causeError says why act, happening at now, was not caused by the latest
// input event as a lone key that can cause it, or returns nil. When the
// message being handled is itself input, it arrived at now, so checking
// that the cause is QuietWindow older than now covers it too (a held key
// whose timer was late acts before the key that came after it).
func causeError(events []inputEvent, act string, now time.Time) error {
	if len(events) == 0 {
		return fmt.Errorf("%s happened with no input at all", act)
	}
	e := events[len(events)-1]
	k, ok := e.msg.(tea.KeyMsg)
	switch {
	case !ok:
		return fmt.Errorf("%s happened after %T, not a key", act, e.msg)
	case !alone(k):
		return fmt.Errorf("%s happened after %q, which is not a key on its own", act, k.String())
	case !slices.Contains(causes[act], k.String()):
		return fmt.Errorf("%s happened after %q, which cannot cause it", act, k.String())
	case now.Sub(e.at) < QuietWindow:
		return fmt.Errorf("%s happened %v after %q, within the quiet window", act, now.Sub(e.at), k.String())
	}
	if len(events) > 1 {
		if prev := events[len(events)-2]; e.at.Sub(prev.at) < QuietWindow {
			return fmt.Errorf("%s happened after %q, which came %v after the input before it", act, k.String(), e.at.Sub(prev.at))
		}
	}
	return nil
}

// TestNothingActsWithoutALoneKey runs the property over many random
// scripts, with fixed seeds so that it is the same every run.
func TestNothingActsWithoutALoneKey(t *testing.T) {
	testenv.SkipUnderRace(t, "plays 200 random scripts against the model in one goroutine: nothing for the race detector to find")
	runs := 200
	if testing.Short() {
		runs = 50
	}
	total := 0
	for seed := range runs {
		data := randomScript(rand.New(rand.NewPCG(uint64(seed), 0x5eed)))
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			total += runKeyScript(t, data)
		})
	}
	// The scripts must also act now and then, or the property says
	// nothing.
	t.Logf("%d scripts, %d actions", runs, total)
	if total < runs/4 {
		t.Errorf("only %d actions in %d scripts: the scripts hardly ever act", total, runs)
	}
}

// TestCauseErrorCatchesAnUnguardedConsole: the property's checker fails a
// console that acts on a key at once, or on a key in a burst.
func TestCauseErrorCatchesAnUnguardedConsole(t *testing.T) {
	now := t0
	events := []inputEvent{{now, keyMsg("hello")}, {now, keyMsg(" ")}, {now, keyMsg("a")}}
	for name, tc := range map[string]struct {
		events []inputEvent
		at     time.Time
	}{
		"at once":                  {events[2:], now},
		"after a burst":            {events, now.Add(time.Second)},
		"after the wrong key":      {[]inputEvent{{now, keyMsg("x")}}, now.Add(time.Second)},
		"after a paste":            {[]inputEvent{{now, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("a"), Paste: true}}}, now.Add(time.Second)},
		"after no input":           {nil, now},
		"after a mouse report":     {[]inputEvent{{now, tea.MouseMsg{}}}, now.Add(time.Second)},
		"key preceded too closely": {[]inputEvent{{now, keyMsg("x")}, {now.Add(QuietWindow - 1), keyMsg("a")}}, now.Add(time.Second)},
	} {
		t.Run(name, func(t *testing.T) {
			if causeError(tc.events, "decide "+string(approval.AllowOnce), tc.at) == nil {
				t.Errorf("causeError accepted it")
			}
		})
	}
}

// randomScript makes a script of about a hundred steps that pauses and
// presses single keys often enough for keys to act now and then.
func randomScript(r *rand.Rand) []byte {
	// Weights of the steps, by the step's number in runKeyScript.
	weights := []int{30, 25, 0, 10, 8, 5, 4, 8, 7, 3}
	var data []byte
	for range 100 + r.IntN(200) {
		p, op := r.IntN(100), 0
		for p >= weights[op] {
			p -= weights[op]
			op++
		}
		data = append(data, byte(op), byte(r.UintN(256)), byte(r.UintN(256)), byte(r.UintN(256)))
	}
	return data
}

// FuzzKeyboard runs the property on scripts from the fuzzer.
func FuzzKeyboard(f *testing.F) {
	for seed := range 8 {
		f.Add(randomScript(rand.New(rand.NewPCG(uint64(seed), 0xf022))))
	}
	f.Add([]byte{0, 9, 1, 0, 0, 8, 1, 0}) // guard, a, quiet: decides
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		runKeyScript(t, data)
	})
}
