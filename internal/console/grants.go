package console

import (
	"fmt"
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/huh"

	"github.com/agent-sudo/agent-sudo/internal/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// grantsScreen lists the session grants (the model's grants) with the
// highlighted one's details; a grant can be revoked. Nothing here decides
// a request.
type grantsScreen struct {
	m *model
	// form and sel list the grants; nil when there are none.
	form *huh.Form
	sel  *huh.Select[string]
}

func newGrantsScreen(m *model) *grantsScreen {
	g := &grantsScreen{m: m}
	g.build("")
	return g
}

// build makes the grant list from the model's grants, with the cursor on
// the grant keep when it still exists.
func (g *grantsScreen) build(keep string) {
	m := g.m
	if len(m.grants) == 0 {
		g.form, g.sel = nil, nil
		return
	}
	opts := make([]huh.Option[string], len(m.grants))
	for i, gr := range m.grants {
		label := fmt.Sprintf("%s  uid %d  session %s  expires %s",
			termtext.Esc(gr.ID), gr.UID, termtext.Esc(gr.Session), gr.Expires.In(m.cfg.now().Location()).Format("2006-01-02 15:04:05"))
		if len(m.daemons) > 1 {
			label += "  on " + m.label(gr.link)
		}
		opts[i] = huh.NewOption(strings.Join(termtext.Wrap(label, max(m.width-4, 1)), "\n"), gr.key())
	}
	g.sel = huh.NewSelect[string]()
	g.sel.WithTheme(m.st.theme)
	g.sel.Title("Session grants").Options(opts...)
	if keep != "" && slices.ContainsFunc(m.grants, func(gr heldGrant) bool { return gr.key() == keep }) {
		g.sel.Value(&keep)
	}
	g.form = huh.NewForm(huh.NewGroup(g.sel)).
		WithTheme(m.st.theme).WithKeyMap(m.keymap).WithShowHelp(false).WithWidth(m.formWidth())
	g.form.Init()
}

// grantsChanged rebuilds the list after the model's grants changed,
// keeping the cursor on the grant it was on.
func (g *grantsScreen) grantsChanged(old []heldGrant) {
	keep := ""
	if gr, ok := hovered(g.sel, old); ok {
		keep = gr.key()
	}
	g.build(keep)
}

// hovered returns the grant of grants under sel's cursor.
func hovered(sel *huh.Select[string], grants []heldGrant) (heldGrant, bool) {
	if sel == nil {
		return heldGrant{}, false
	}
	key, ok := sel.Hovered()
	if !ok {
		return heldGrant{}, false
	}
	i := slices.IndexFunc(grants, func(g heldGrant) bool { return g.key() == key })
	if i < 0 {
		return heldGrant{}, false
	}
	return grants[i], true
}

// SetSize fits the list to the new width.
func (g *grantsScreen) SetSize(int, int) {
	if g.form != nil {
		g.form.WithWidth(g.m.formWidth())
	}
}

// classify: scrolling and moving the cursor act at once; q, g, r, x, Esc,
// Delete and Enter are held; nothing else does anything.
func (g *grantsScreen) classify(k tea.KeyMsg) keyKind {
	if _, ok := scrollKey(k); ok {
		return kindNav
	}
	if isNavKey(k) {
		return kindNav
	}
	switch singleRune(k) {
	case 'q', 'g', 'r', 'x':
		return kindAction
	}
	switch k.Type {
	case tea.KeyEsc, tea.KeyDelete, tea.KeyEnter:
		return kindAction
	}
	return kindNone
}

// Update scrolls, moves the cursor, revokes the highlighted grant, goes
// back to the request or quits; anything that is not a key goes to the
// list.
func (g *grantsScreen) Update(msg tea.Msg) tea.Cmd {
	m := g.m
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		if g.form == nil {
			return nil
		}
		_, cmd := g.form.Update(msg)
		return cmd
	}
	if s, ok := scrollKey(k); ok {
		m.scrollBy(s)
		return nil
	}
	switch r := singleRune(k); {
	case r == 'q':
		return m.quit()
	case r == 'g' || k.Type == tea.KeyEsc && !k.Alt:
		return m.showPrompt()
	case r == 'r' || r == 'x' || k.Type == tea.KeyDelete || isEnter(k):
		if gr, ok := hovered(g.sel, m.grants); ok {
			m.revoke(gr)
		}
		return nil
	case isNavKey(k) && g.form != nil:
		_, cmd := g.form.Update(k)
		return cmd
	}
	return nil
}

// View renders the list and the highlighted grant's details.
func (g *grantsScreen) View() (top, body, bottom []string) {
	m := g.m
	st := m.st
	top = append(top, "", st.bold.Render("SESSION GRANTS"))
	top = append(top, wrapText("A grant lets the same request (pipeline, environment, directory, user, session and uid) run without asking until it expires.", m.width)...)
	if g.form == nil {
		body = append(body, "", "no session grants")
	} else {
		body = append(body, strings.Split(g.form.View(), "\n")...)
		if m.grantsOmitted > 0 {
			body = append(body, wrapText(fmt.Sprintf("%d more %s not listed (the daemon lists at most %d)", m.grantsOmitted, termtext.Plural(m.grantsOmitted, "grant"), approval.MaxGrantsListed), m.width)...)
		}
		if gr, ok := hovered(g.sel, m.grants); ok {
			body = append(body, "")
			if len(m.daemons) > 1 {
				body = append(body, wrapText("held by "+m.label(gr.link), m.width)...)
			}
			body = append(body, grantDetails(st, gr.Grant, m.width, m.cfg.now())...)
		}
	}
	bottom = append(bottom, m.separator())
	bottom = append(bottom, m.keyHelp([][2]string{{"↑/↓", "choose"}, {"r", "revoke the highlighted grant"}, {"esc/g", "back"}, {"q", m.quitShort()}})...)
	return top, fit(body, m.width), bottom
}

func grantDetails(st *styles, g approval.Grant, width int, now time.Time) []string {
	l := newLines(st, width)
	l.field("grant", termtext.Esc(g.ID), nil)
	if e := g.Elided; e != nil {
		l.field("command", fmt.Sprintf("too long to list: %d bytes in %d %s (%d %s), sha256 %s",
			e.Bytes, e.Stages, termtext.Plural(e.Stages, "stage"), e.Args, termtext.Plural(e.Args, "argument"), termtext.Esc(e.SHA256)), &st.bold)
	} else {
		line, _ := termtext.CommandLine(g.Pipeline)
		l.field("command", line, &st.bold)
	}
	if g.Privileged {
		l.field("runs", "as root", &st.danger)
	} else {
		l.field("runs", "unprivileged", nil)
	}
	l.field("cwd", termtext.EscStrict(g.Cwd), nil)
	keys := make([]string, len(g.EnvKeys))
	for i, k := range g.EnvKeys {
		keys[i] = termtext.EscStrict(k)
	}
	if len(keys) > 0 {
		l.field("env keys", strings.Join(keys, " "), nil)
	}
	l.field("session", termtext.Esc(g.Session), nil)
	l.field("uid", fmt.Sprint(g.UID), nil)
	l.field("granted", fmt.Sprintf("%s by %s", g.Created.In(now.Location()).Format(time.DateTime), termtext.Esc(g.By)), nil)
	left := "expired"
	if d := g.Expires.Sub(now); d > 0 {
		left = "in " + d.Round(time.Second).String()
	}
	l.field("expires", fmt.Sprintf("%s (%s)", g.Expires.In(now.Location()).Format(time.DateTime), left), nil)
	return l.out
}
