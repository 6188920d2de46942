package console

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agent-sudo/agent-sudo/approval"
)

// keyScreens sets a harness up on each screen of Keys, by its group's
// Screen, with what its keys act on: a request with stdin, a session
// grant, a running command.
func keyScreens() map[string]func(h *harness) {
	return map[string]func(h *harness){
		"at a request":                         func(h *harness) {},
		"while typing the note (after d)":      func(h *harness) { h.press("d") },
		"confirming a session grant (after s)": func(h *harness) { h.press("s"); h.pastGuard() },
		"in the session grants (g)":            func(h *harness) { h.press("g") },
		"in the running commands (w)":          func(h *harness) { h.press("w") },
		"in the stdin view (i)":                func(h *harness) { h.press("i") },
	}

}

// candidateKeys are the keys tried on every screen: every letter and
// digit, and the named keys a terminal sends.
func candidateKeys() []string {
	keys := []string{"up", "down", "pgup", "pgdown", "home", "end", "enter", "esc", "delete", "tab", "backspace", "ctrl+c", " ", "?", "/"}
	for r := 'a'; r <= 'z'; r++ {
		keys = append(keys, string(r))
	}
	for r := '0'; r <= '9'; r++ {
		keys = append(keys, string(r))
	}
	return keys
}

// keysHarness is a console at 80×24 with one request waiting (with stdin),
// a session grant and a running command, past the key guard, on the
// screen setup leads to.
func keysHarness(t *testing.T, setup func(h *harness)) *harness {
	h := newHarness(t, "")
	h.update(tea.WindowSizeMsg{Width: 80, Height: 24})
	h.daemon(approval.Message{Type: approval.MsgGrants, Grants: []approval.Grant{
		{ID: "g1", Session: "s", UID: 1000, Pipeline: [][]string{{"apt-get", "update"}}, Privileged: true, Cwd: "/", Expires: t0.Add(1e12)}}})
	s := shown("r1")
	s.Stdin = approval.NewStdinShown([]byte("line 1\nline 2\n"))
	h.pending(s)
	h.pastGuard()
	setup(h)
	h.daemon(approval.Message{Type: approval.MsgRunning, Running: testRuns()})
	h.takeSent()
	return h
}

// screenState is what a key can change: the screen (its type and its
// state), what is drawn, what was sent to the daemon.
func screenState(h *harness) string {
	return fmt.Sprintf("%T\n%s\n%d", h.m.screen, h.m.View(), len(h.takeSent()))
}

// TestKeysListEveryKey binds Keys (which "agent-sudo help approve"
// prints) to the console: on each screen, every key that does something
// (changes the screen, what it shows, or sends the daemon a message, or
// quits) is in its group, and every key in a group is one the screen acts
// on (its classify does not ignore it; ctrl+c is taken before any screen).
func TestKeysListEveryKey(t *testing.T) {
	groups, screens := Keys(), keyScreens()
	for _, g := range groups {
		if screens[g.Screen] == nil {
			t.Errorf("Keys has a group %q this test cannot set up", g.Screen)
		}
	}
	for _, g := range groups {
		setup := screens[g.Screen]
		if setup == nil {
			continue
		}
		var listed []string
		for _, k := range g.Keys {
			listed = append(listed, k.Names...)
		}
		t.Run(g.Screen, func(t *testing.T) {
			for _, name := range candidateKeys() {
				h := keysHarness(t, setup)
				if _, isNote := h.m.screen.(*noteScreen); isNote && h.m.screen.classify(keyMsg(name)) == kindText {
					continue // typed into the note
				}
				// The same time passes with and without the key.
				quiet := keysHarness(t, setup)
				quiet.advance(QuietWindow)
				before := screenState(quiet)
				h.press(name)
				acted := h.m.quitting || screenState(h) != before
				if acted && !slices.Contains(listed, name) && !slices.Contains(listed, AnyKey) {
					t.Errorf("%q acts on this screen but is not in its keys (%s)", name, strings.Join(listed, " "))
				}
			}
			h := keysHarness(t, setup)
			for _, name := range listed {
				if name != "ctrl+c" && name != AnyKey && h.m.screen.classify(keyMsg(name)) == kindNone {
					t.Errorf("%q is listed, but this screen ignores it", name)
				}
			}
		})
	}
}
