package console

import (
	"fmt"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// grantsScreen lists the session grants (the model's grants) with the
// highlighted one's details; a grant can be revoked. Nothing here decides
// a request.
type grantsScreen struct {
	m    *model
	list pickList[heldGrant]
}

func newGrantsScreen(m *model) *grantsScreen {
	g := &grantsScreen{m: m, list: pickList[heldGrant]{title: "Session grants", key: heldGrant.key}}
	g.build("")
	return g
}

// build makes the grant list from the model's grants, with the cursor on
// the grant keep when it still exists.
func (g *grantsScreen) build(keep string) {
	m := g.m
	g.list.build(m, m.grants, func(gr heldGrant) string {
		label := fmt.Sprintf("%s  uid %d  session %s  expires %s",
			termtext.Esc(gr.ID), gr.UID, termtext.Esc(gr.Session), shownExpiry(gr.Grant, m.cfg.now()).Format("2006-01-02 15:04:05"))
		if len(m.daemons) > 1 {
			label += "  on " + m.label(gr.link)
		}
		return label
	}, keep)
}

// grantsChanged rebuilds the list after the model's grants changed,
// keeping the cursor on the grant it was on.
func (g *grantsScreen) grantsChanged(old []heldGrant) {
	g.build(g.list.hoveredKey(old))
}

// SetSize fits the list to the new width.
func (g *grantsScreen) SetSize(int, int) {
	g.list.setSize(g.m)
}

// classify: scrolling and moving the cursor act at once; q, g, r, x, Esc,
// Delete and Enter are held; nothing else does anything.
func (g *grantsScreen) classify(k tea.KeyMsg) keyKind {
	if movesKey(k) {
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
	k, isKey := msg.(tea.KeyMsg)
	if cmd, done := g.list.update(m, msg); done || !isKey {
		return cmd
	}
	switch r := singleRune(k); {
	case r == 'q':
		return m.quit()
	case r == 'g' || k.Type == tea.KeyEsc && !k.Alt:
		return m.showPrompt()
	case r == 'r' || r == 'x' || k.Type == tea.KeyDelete || isEnter(k):
		if gr, ok := g.list.hovered(m.grants); ok {
			m.revoke(gr)
		}
	}
	return nil
}

// View renders the list and the highlighted grant's details.
func (g *grantsScreen) View() (top, body, bottom []string) {
	m := g.m
	st := m.st
	top = append(top, "", st.bold.Render("SESSION GRANTS"))
	top = append(top, wrapText("A grant lets the same request (pipeline, environment, directory, user, session and uid) run without asking until it expires.", m.width)...)
	if g.list.form == nil {
		body = append(body, "", "no session grants")
	} else {
		body = append(body, g.list.view(m.width, m.grantsOmitted, "grant", approval.MaxGrantsListed)...)
		if gr, ok := g.list.hovered(m.grants); ok {
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
	l.field("command", commandText(g.Pipeline, g.Elided), &st.bold)
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
	l.field("expires", fmt.Sprintf("%s (%s)", shownExpiry(g, now).Format(time.DateTime), left), nil)
	return l.out
}

// shownExpiry is when g ends, on the wall clock as it reads now: now plus
// the time left, measured on the elapsed-time clock that setGrants counted
// it on, so that a clock step since cannot make the two disagree.
func shownExpiry(g approval.Grant, now time.Time) time.Time {
	return now.Round(0).Add(g.Expires.Sub(now)).In(now.Location())
}
