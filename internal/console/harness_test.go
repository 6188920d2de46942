package console

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/agent-sudo/agent-sudo/approval"
)

// t0 is the fake clock's start.
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// harness drives a model without a terminal: messages and keys go into
// Update, the screen comes from View (rendered without colour, so it holds
// no escape sequence at all), and what the console sends is recorded.
type harness struct {
	t       *testing.T
	m       *model
	now     time.Time
	sent    []approval.Message
	bells   int
	sendErr error
	// timers are the model's pending timers (config.after), delivered
	// by advance when the clock reaches them.
	timers []fakeTimer
	// alone, when set, stands for the terminal's read log.
	alone func(got, until time.Time, size int) bool
	// onUpdate, when set, is called after each message the model handled.
	onUpdate func(tea.Msg)
}

// fakeTimer is a message due at a time of the fake clock.
type fakeTimer struct {
	due time.Time
	msg tea.Msg
}

func newHarness(t *testing.T, mux string) *harness {
	t.Helper()
	h := &harness{t: t, now: t0}
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	h.m = newModel(config{
		now:   func() time.Time { return h.now },
		guard: DefaultGuard,
		quiet: QuietWindow,
		after: func(d time.Duration, msg tea.Msg) tea.Cmd {
			h.timers = append(h.timers, fakeTimer{due: h.now.Add(d), msg: msg})
			return func() tea.Msg { return nil }
		},
		alone: func(got, until time.Time, size int) bool {
			return h.alone == nil || h.alone(got, until, size)
		},
		send: func(m approval.Message) error {
			if h.sendErr != nil {
				return h.sendErr
			}
			h.sent = append(h.sent, m)
			return nil
		},
		bell:     func(*approval.Shown) { h.bells++ },
		renderer: r,
		mux:      mux,
		version:  "test",
	})
	h.m.Init()
	h.update(tea.WindowSizeMsg{Width: 160, Height: 50})
	return h
}

func (h *harness) update(msg tea.Msg) tea.Cmd {
	h.t.Helper()
	m, cmd := h.m.Update(msg)
	if m != h.m {
		h.t.Fatalf("Update returned another model")
	}
	if h.onUpdate != nil {
		h.onUpdate(msg)
	}
	return cmd
}

// daemon delivers m as the daemon would: through JSON.
func (h *harness) daemon(m approval.Message) {
	h.t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		h.t.Fatal(err)
	}
	var back approval.Message
	if err := json.Unmarshal(b, &back); err != nil {
		h.t.Fatal(err)
	}
	h.update(daemonMsg{m: back})
}

func (h *harness) pending(s *approval.Shown) {
	h.t.Helper()
	h.daemon(approval.Message{Type: approval.MsgPending, ID: s.ID, Hash: s.Hash(), Request: s})
}

func (h *harness) resolved(id string, v approval.Verdict, by string) {
	h.t.Helper()
	h.daemon(approval.Message{Type: approval.MsgResolved, ID: id, Verdict: v, By: by})
}

// advance moves the fake clock d ahead, delivering each timer that falls
// due on the way at its time, in order.
func (h *harness) advance(d time.Duration) {
	h.t.Helper()
	end := h.now.Add(d)
	for {
		i := -1
		for j, tm := range h.timers {
			if !tm.due.After(end) && (i < 0 || tm.due.Before(h.timers[i].due)) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		tm := h.timers[i]
		h.timers = append(h.timers[:i], h.timers[i+1:]...)
		if tm.due.After(h.now) {
			h.now = tm.due
		}
		h.update(tm.msg)
	}
	h.now = end
}

// press presses one key on its own: the key, then a quiet keyboard for
// the quiet window, after which a key that acts has acted.
func (h *harness) press(name string) {
	h.t.Helper()
	h.key(name)
	h.advance(QuietWindow)
}

// pastGuard moves the clock past the key guard.
func (h *harness) pastGuard() { h.advance(DefaultGuard + time.Millisecond) }

// key presses one key, named as bubbletea names it ("a", "enter", "up").
func (h *harness) key(name string) {
	h.t.Helper()
	h.update(keyMsg(name))
}

func keyMsg(name string) tea.KeyMsg {
	types := map[string]tea.KeyType{
		"enter": tea.KeyEnter, "esc": tea.KeyEsc, "up": tea.KeyUp, "down": tea.KeyDown,
		"pgup": tea.KeyPgUp, "pgdown": tea.KeyPgDown, "home": tea.KeyHome, "end": tea.KeyEnd,
		"ctrl+c": tea.KeyCtrlC, "tab": tea.KeyTab, "delete": tea.KeyDelete, "backspace": tea.KeyBackspace,
	}
	if t, ok := types[name]; ok {
		return tea.KeyMsg{Type: t}
	}
	return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(name)}
}

func (h *harness) view() string {
	h.t.Helper()
	v := h.m.View()
	if strings.ContainsAny(v, "\x1b\u202e\x07") {
		h.t.Fatalf("View() contains a raw control character:\n%q", v)
	}
	return v
}

// wantView fails unless the screen contains every one of subs.
func (h *harness) wantView(subs ...string) {
	h.t.Helper()
	v := h.view()
	for _, s := range subs {
		if !strings.Contains(v, s) {
			h.t.Errorf("screen lacks %q:\n%s", s, v)
		}
	}
}

func (h *harness) notView(subs ...string) {
	h.t.Helper()
	v := h.view()
	for _, s := range subs {
		if strings.Contains(v, s) {
			h.t.Errorf("screen has %q but should not:\n%s", s, v)
		}
	}
}

// takeSent returns what the console sent since the last call.
func (h *harness) takeSent() []approval.Message {
	s := h.sent
	h.sent = nil
	return s
}

var errStuck = errors.New("stuck")

// shown builds a typical request.
func shown(id string) *approval.Shown {
	return &approval.Shown{
		ID: id, Session: "build-42", Host: "devbox", Reason: "install nginx for the web tests",
		Time:     t0.Add(-time.Second),
		Pipeline: [][]string{{"apt-get", "install", "-y", "nginx"}, {"tee", "/var/log/x y.log"}},
		Programs: []approval.Program{{Chain: []string{"/usr/bin/apt-get"}}, {Chain: []string{"/usr/bin/tee"}}},
		Env:      map[string]string{"DEBIAN_FRONTEND": "noninteractive"},
		Cwd:      "/", Privileged: true, RunAs: "root",
		Peer:     approval.PeerInfo{UID: 1000, User: "alice", PID: 4242, Exe: "/usr/bin/python3"},
		Received: t0, Deadline: t0.Add(2 * time.Minute),
	}
}

// mode names the component on screen, for assertions.
type mode int

const (
	modeDecide mode = iota // the decision prompt, or the idle screen
	modeNote
	modeGrants
	modeStdin
	modeConfirm
)

// mode says which component is on screen.
func (m *model) mode() mode {
	switch m.screen.(type) {
	case *noteScreen:
		return modeNote
	case *grantsScreen:
		return modeGrants
	case *stdinScreen:
		return modeStdin
	case *confirmScreen:
		return modeConfirm
	case *decideScreen:
		return modeDecide
	}
	return -1
}

// fullView is the screen with the request's details shown (as after v),
// without pressing a key: the decision prompt's state is otherwise kept.
func (h *harness) fullView() string {
	h.t.Helper()
	d, ok := h.m.screen.(*decideScreen)
	if !ok {
		return h.view()
	}
	was := d.full
	d.full = true
	defer func() { d.full = was }()
	return h.view()
}

// wantFull fails unless the screen with the request's details shown
// contains every one of subs.
func (h *harness) wantFull(subs ...string) {
	h.t.Helper()
	v := h.fullView()
	for _, s := range subs {
		if !strings.Contains(v, s) {
			h.t.Errorf("details screen lacks %q:\n%s", s, v)
		}
	}
}
