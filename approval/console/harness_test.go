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
}

func newHarness(t *testing.T, mux string) *harness {
	t.Helper()
	h := &harness{t: t, now: t0}
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	h.m = newModel(config{
		now:   func() time.Time { return h.now },
		guard: DefaultGuard,
		send: func(m approval.Message) error {
			if h.sendErr != nil {
				return h.sendErr
			}
			h.sent = append(h.sent, m)
			return nil
		},
		bell:     func() { h.bells++ },
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
	h.update(daemonMsg{back})
}

func (h *harness) pending(s *approval.Shown) {
	h.t.Helper()
	h.daemon(approval.Message{Type: approval.MsgPending, ID: s.ID, Hash: s.Hash(), Request: s})
}

func (h *harness) resolved(id string, v approval.Verdict, by string) {
	h.t.Helper()
	h.daemon(approval.Message{Type: approval.MsgResolved, ID: id, Verdict: v, By: by})
}

func (h *harness) advance(d time.Duration) { h.now = h.now.Add(d) }

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
		Programs: []string{"/usr/bin/apt-get", "/usr/bin/tee"},
		Env:      map[string]string{"DEBIAN_FRONTEND": "noninteractive"},
		Cwd:      "/", Privileged: true, RunAs: "root",
		Peer:     approval.PeerInfo{UID: 1000, User: "alice", PID: 4242, Exe: "/usr/bin/python3"},
		Received: t0, Deadline: t0.Add(2 * time.Minute),
	}
}
