package console

import (
	"fmt"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// confirmScreen asks for a confirmation before a step that must not be
// taken by accident: a session grant (s, or Enter on "Allow for this
// session"), or, on agent-sudod's own terminal, stopping the daemon while
// requests wait (q or Ctrl-C). confirmKey confirms; any other key goes back
// to the decision prompt, Deny preselected. confirmKey (y, shared with the
// running commands screen) differs from the keys that ask (s, q, Ctrl-C),
// so a key pressed twice never confirms. It appears with a fresh key
// guard, like every prompt, and leaves with its request (promptChanged).
type confirmScreen struct {
	m *model
	// stop: the confirmation is for stopping the daemon, else for a
	// session grant on the current request.
	stop bool
}

// confirmGrant asks before allowing the current request for the session;
// a request whose full text is not shown yet cannot be allowed, nor one
// that cannot be granted for the session (GrantRefusal), and decide says
// so.
func (m *model) confirmGrant() tea.Cmd {
	if r := m.current(); r == nil || !r.complete() || r.shown.GrantRefusal() != "" {
		return m.decide(approval.AllowSession, "")
	}
	m.screen = &confirmScreen{m: m}
	m.resetKeys()
	return m.armGuard()
}

// confirmStop asks before stopping agent-sudod with requests waiting.
func (m *model) confirmStop() tea.Cmd {
	m.screen = &confirmScreen{m: m, stop: true}
	m.resetKeys()
	return m.armGuard()
}

// SetSize: the screen is rendered for the width when it is drawn.
func (c *confirmScreen) SetSize(int, int) {}

// classify: every key is dropped within the guard; scrolling acts at
// once; every other key is held: it confirms or goes back.
func (c *confirmScreen) classify(k tea.KeyMsg) keyKind {
	if c.m.guarded() {
		return kindEarly
	}
	if _, ok := scrollKey(k); ok {
		return kindNav
	}
	return kindAction
}

// Update confirms on confirmKey and goes back to the prompt on any other
// key.
func (c *confirmScreen) Update(msg tea.Msg) tea.Cmd {
	m := c.m
	k, ok := msg.(tea.KeyMsg)
	if !ok || m.guarded() {
		return nil
	}
	if n, ok := scrollKey(k); ok {
		m.scrollBy(n)
		return nil
	}
	if singleRune(k) != confirmKey {
		return m.showPrompt()
	}
	if c.stop {
		return m.exit()
	}
	return m.decide(approval.AllowSession, "")
}

// View renders the request and the question.
func (c *confirmScreen) View() (top, body, bottom []string) {
	m := c.m
	r := m.current()
	if r == nil {
		// Never shown without a request (promptChanged replaces it).
		body, bottom = m.idleView()
		return nil, fit(body, m.width), bottom
	}
	st := m.st
	top, body = m.requestView(r, false)
	hint := ""
	if m.guarded() {
		hint = fmt.Sprintf("(keys enabled in %s)", guardText(roundUp(m.shownAt.Add(m.cfg.guard).Sub(m.cfg.now()))))
	}
	bottom = append(bottom, m.separatorWith(hint))
	var q string
	if c.stop {
		n := len(m.queue)
		who := "their agents are"
		if n == 1 {
			who = "its agent is"
		}
		q = fmt.Sprintf("Stop agent-sudod? %d %s waiting will not run; %s told the daemon was stopped at its terminal.",
			n, termtext.Plural(n, "request"), who)
	} else {
		q = fmt.Sprintf("Allow for this session? It runs now, and the same request from session %s (uid %d) then runs without asking until the grant expires or is revoked (g).",
			termtext.Esc(r.shown.Session), r.shown.Peer.UID)
	}
	bottom = append(bottom, styled(st.warn, wrapText(q, m.width))...)
	yes := "create the grant"
	if c.stop {
		yes = "stop agent-sudod"
	}
	bottom = append(bottom, m.keyHelp([][2]string{{string(confirmKey), yes}, {"any other key", "back (Deny preselected)"}})...)
	return top, body, bottom
}
