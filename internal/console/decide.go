package console

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/huh"

	"github.com/agent-sudo/agent-sudo/internal/approval"
)

// decideScreen is the current request with its decision prompt (Allow
// once / Allow for this session / Deny, Deny focused), or the idle screen
// when nothing waits. A new one is made whenever the prompt appears or
// reappears (showPrompt, or back from the stdin view), so its cursor
// starts on Deny.
type decideScreen struct {
	m *model
	// form and sel are the decision prompt; nil when nothing waits.
	form *huh.Form
	sel  *huh.Select[approval.Choice]
}

// newDecideScreen makes the screen for the current request, with Deny
// focused, or the idle screen.
func newDecideScreen(m *model) *decideScreen {
	d := &decideScreen{m: m}
	if m.current() != nil {
		d.buildForm()
	}
	return d
}

// buildForm makes the Allow once / Allow for this session / Deny select,
// with Deny focused.
func (d *decideScreen) buildForm() {
	m := d.m
	deny := approval.DenyOnce
	d.sel = huh.NewSelect[approval.Choice]()
	// The theme goes on before the field is grouped: huh measures fields
	// when grouping, and an unthemed field renders with adaptive colours.
	d.sel.WithTheme(m.st.theme)
	d.sel.Title("Your decision").
		Options(
			huh.NewOption("Allow once                (a)", approval.AllowOnce),
			huh.NewOption("Allow for this session    (s)", approval.AllowSession),
			huh.NewOption("Deny                      (d)", approval.DenyOnce),
		).
		Value(&deny)
	d.form = huh.NewForm(huh.NewGroup(d.sel)).
		WithTheme(m.st.theme).WithKeyMap(m.keymap).WithShowHelp(false).WithWidth(m.formWidth())
	// Init focuses the field; its commands only refresh huh's dynamic
	// titles, which this form does not use.
	d.form.Init()
}

// denyFocus puts the cursor back on Deny when the prompt is in use: input
// was discarded as a burst, which may have moved it.
func (d *decideScreen) denyFocus() {
	if c := d.m.current(); c == nil || d.m.submitted(c) != "" || d.sel == nil {
		return
	}
	if v, _ := d.sel.Hovered(); v != approval.DenyOnce {
		d.buildForm()
	}
}

// SetSize fits the prompt to the new width.
func (d *decideScreen) SetSize(int, int) {
	if d.form != nil {
		d.form.WithWidth(d.m.formWidth())
	}
}

// classify: with nothing waiting only q and g act. At a request, every key
// is dropped within the guard; scrolling acts at once; once the decision
// is sent only q, g and i act; moving the cursor acts at once when alone;
// every other key is held, even one that turns out to do nothing, so that
// a burst is always reported.
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
		case 'q', 'g', stdinKey, runningKey:
			return kindAction
		}
		return kindNone
	}
	if isNavKey(k) {
		return kindCursor
	}
	return kindAction
}

// Update does what a key does at the prompt, or passes anything else to
// the prompt's form while it is in use.
func (d *decideScreen) Update(msg tea.Msg) tea.Cmd {
	m := d.m
	c := m.current()
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		if c == nil || m.submitted(c) != "" || d.form == nil {
			return nil
		}
		_, cmd := d.form.Update(msg)
		return cmd
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
	}
	if d.m.submitted(c) != "" {
		return nil
	}
	switch singleRune(k) {
	case 'a':
		return m.decide(approval.AllowOnce, "")
	case 's':
		return m.decide(approval.AllowSession, "")
	case 'd':
		return m.startNote()
	}
	switch {
	case isEnter(k):
		v, ok := d.sel.Hovered()
		switch {
		case !ok:
			return nil
		case v == approval.DenyOnce:
			return m.startNote()
		}
		return m.decide(v, "")
	case isNavKey(k):
		// huh's select wraps around; this one stops at its ends, so that
		// "down" on Deny cannot land on Allow once.
		v, _ := d.sel.Hovered()
		up := k.Type == tea.KeyUp || singleRune(k) == 'k'
		if up && v == approval.AllowOnce || !up && v == approval.DenyOnce {
			return nil
		}
		_, cmd := d.form.Update(k)
		return cmd
	}
	return nil
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
	top, body = m.requestView(r)
	bottom = append(bottom, m.separator())
	switch {
	case m.submitted(r) != "":
		bottom = append(bottom, styled(st.bold, wrapText(fmt.Sprintf("Your decision (%s) was sent; waiting for the daemon to confirm it…", choiceText(m.submitted(r))), m.width))...)
		bottom = append(bottom, m.keyHelp(m.withStdinKey(r, [][2]string{{"g", "session grants"}, {"w", "running"}, {"q", "quit"}}))...)
	case !r.complete():
		bottom = append(bottom, styled(st.warn, wrapText("Allow is disabled until the full request has loaded and is shown.", m.width))...)
		bottom = append(bottom, m.keyHelp([][2]string{{"d", "deny"}, {"g", "session grants"}, {"w", "running"}, {"q", "quit (decides nothing)"}})...)
	default:
		if d.form != nil {
			bottom = append(bottom, strings.Split(d.form.View(), "\n")...)
		}
		bottom = append(bottom, m.keyHelp(m.withStdinKey(r, [][2]string{
			{"a", "allow once"}, {"s", "allow for this session"}, {"d", "deny"},
			{"↑/↓ enter", "choose (Deny is preselected)"}, {"PgUp/PgDn", "scroll"},
			{"g", "session grants"}, {"q", "quit (decides nothing)"},
		}))...)
		hint := ""
		if m.guarded() {
			left := m.shownAt.Add(m.cfg.guard).Sub(m.cfg.now())
			hint = st.warn.Render(fmt.Sprintf("(keys enabled in %s)", guardText(roundUp(left))))
		}
		bottom = append(bottom, hint)
	}
	return top, body, bottom
}
