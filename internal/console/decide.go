package console

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// choices are the decision prompt's options, in the order shown; the
// cursor starts on the last, Deny.
var choices = [...]struct {
	choice approval.Choice
	label  string
}{
	{approval.AllowOnce, "Allow once (a)"},
	{approval.AllowSession, "Allow for this session (s)"},
	{approval.DenyOnce, "Deny (d)"},
}

// denyIndex is Deny's place in choices.
const denyIndex = len(choices) - 1

// decideScreen is the current request with its decision prompt (Allow
// once / Allow for this session / Deny, Deny focused), or the idle screen
// when nothing waits. A new one is made whenever the prompt appears or
// reappears (showPrompt, or back from the stdin view), so its cursor
// starts on Deny and it shows the request's first screen.
type decideScreen struct {
	m *model
	// cursor is the focused choice (an index in choices).
	cursor int
	// full: the request's details are shown instead of its first screen
	// (detailsKey).
	full bool
}

// newDecideScreen makes the screen for the current request, with Deny
// focused, or the idle screen.
func newDecideScreen(m *model) *decideScreen {
	return &decideScreen{m: m, cursor: denyIndex}
}

// hovered is the focused choice.
func (d *decideScreen) hovered() approval.Choice {
	return choices[d.cursor].choice
}

// denyFocus puts the cursor back on Deny: input was discarded as a burst,
// which may have moved it.
func (d *decideScreen) denyFocus() {
	d.cursor = denyIndex
}

// SetSize: the prompt is rendered for the width when it is drawn.
func (d *decideScreen) SetSize(int, int) {}

// classify: with nothing waiting only q and g act. At a request, every key
// is dropped within the guard; scrolling acts at once; once the decision
// is sent only q, g, i and v act; moving the cursor acts at once when
// alone; every other key is held, even one that turns out to do nothing,
// so that a burst is always reported.
func (d *decideScreen) classify(k tea.KeyMsg) keyKind {
	c := d.m.current()
	if c == nil {
		switch singleRune(k) {
		case 'q', 'g', runningKey:
			return kindAction
		}
		return kindNone
	}
	if d.m.guarded() {
		return kindEarly
	}
	if _, ok := scrollKey(k); ok {
		return kindNav
	}
	if d.m.submitted(c) != "" {
		switch singleRune(k) {
		case 'q', 'g', stdinKey, runningKey, detailsKey:
			return kindAction
		}
		return kindNone
	}
	if isNavKey(k) {
		return kindCursor
	}
	return kindAction
}

// Update does what a key does at the prompt. Nothing else is for it.
func (d *decideScreen) Update(msg tea.Msg) tea.Cmd {
	m := d.m
	c := m.current()
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil
	}
	if c == nil {
		switch singleRune(k) {
		case 'q':
			return m.quit()
		case 'g':
			m.openGrants()
		case runningKey:
			m.openRunning()
		}
		return nil
	}
	if m.guarded() {
		return nil // key drops keys inside the guard; they never act
	}
	if scroll, ok := scrollKey(k); ok {
		m.scrollBy(scroll)
		return nil
	}
	switch singleRune(k) {
	case 'q':
		return m.quit()
	case 'g':
		m.openGrants()
		return nil
	case runningKey:
		m.openRunning()
		return nil
	case stdinKey:
		if c.hasStdin() {
			m.openStdin()
		}
		return nil
	case detailsKey:
		d.full = !d.full
		m.scroll = 0
		return nil
	}
	if d.m.submitted(c) != "" {
		return nil
	}
	switch singleRune(k) {
	case 'a':
		return m.decide(approval.AllowOnce, "")
	case 's':
		return m.confirmGrant()
	case 'd':
		return m.startNote()
	}
	switch {
	case isEnter(k):
		switch d.hovered() {
		case approval.AllowOnce:
			return m.decide(approval.AllowOnce, "")
		case approval.AllowSession:
			return m.confirmGrant()
		}
		return m.startNote()
	case isNavKey(k):
		// The cursor stops at the ends, so that "down" on Deny cannot
		// land on Allow once.
		if k.Type == tea.KeyUp || singleRune(k) == 'k' {
			d.cursor = max(d.cursor-1, 0)
		} else {
			d.cursor = min(d.cursor+1, denyIndex)
		}
	}
	return nil
}

// promptLine renders the choices on one line, the focused one marked with
// "> " and highlighted; on a terminal too narrow for that, wrapped
// without the highlight (the marker stays).
func (d *decideScreen) promptLine() []string {
	st := d.m.st
	const title = "Your decision:"
	plain, styled := []string{title}, []string{st.bold.Render(title)}
	for i, c := range choices {
		p := "  " + c.label
		s := p
		if i == d.cursor {
			p = "> " + c.label
			s = st.key.Reverse(true).Render(p)
		}
		plain, styled = append(plain, p), append(styled, s)
	}
	line := strings.Join(plain, " ")
	if termtext.Width(line) > d.m.width-1 {
		return wrapText(line, d.m.width)
	}
	return []string{strings.Join(styled, " ")}
}

// View renders the current request and its prompt, or the idle screen.
func (d *decideScreen) View() (top, body, bottom []string) {
	m := d.m
	r := m.current()
	if r == nil {
		body, bottom = m.idleView()
		return nil, fit(body, m.width), bottom
	}
	st := m.st
	top, body = m.requestView(r, d.full)
	view := [2]string{string(detailsKey), "details"}
	if d.full {
		view[1] = "summary"
	}
	switch {
	case m.submitted(r) != "":
		bottom = append(bottom, m.separator())
		bottom = append(bottom, styled(st.bold, wrapText(fmt.Sprintf("Your decision (%s) was sent; waiting for the daemon to confirm it…", choiceText(m.submitted(r))), m.width))...)
		bottom = append(bottom, m.keyHelp(m.withStdinKey(r, [][2]string{view, {"g", "session grants"}, {"w", "running"}, {"q", m.quitText()}}))...)
	case !r.complete():
		bottom = append(bottom, m.separator())
		bottom = append(bottom, styled(st.warn, wrapText("Allow is disabled until the full request has loaded and is shown.", m.width))...)
		bottom = append(bottom, m.keyHelp([][2]string{{"d", "deny"}, {"g", "session grants"}, {"w", "running"}, {"q", m.quitText()}})...)
	default:
		hint := ""
		if m.guarded() {
			left := m.shownAt.Add(m.cfg.guard).Sub(m.cfg.now())
			hint = fmt.Sprintf("(keys enabled in %s)", guardText(roundUp(left)))
		}
		bottom = append(bottom, m.separatorWith(hint))
		bottom = append(bottom, d.promptLine()...)
		// a, s and d are on the prompt's line; the keys fit one line of
		// 80 columns (the stdin key takes the room of "page").
		page := [2]string{"PgUp/PgDn", "page"}
		if r.hasStdin() {
			page[1] = ""
		}
		bottom = append(bottom, m.keyHelp(m.withStdinKey(r, [][2]string{
			{"↑/↓", "enter"}, view, page, {"g", "grants"}, {"q", m.quitShort()},
		}))...)
	}
	return top, body, bottom
}
