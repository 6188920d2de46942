package console

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/huh"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// noteScreen asks for the optional note that goes with denying the
// current request: Enter denies with the note, Esc without one.
type noteScreen struct {
	m     *model
	form  *huh.Form
	input *huh.Input
}

// newNoteScreen makes the note's input; the form's Init (its cursor
// blink) is for the caller to run.
func newNoteScreen(m *model) *noteScreen {
	n := &noteScreen{m: m, input: huh.NewInput()}
	n.input.WithTheme(m.st.theme)
	n.input.Title("Note for the agent (optional)").
		Placeholder("why it was denied").
		CharLimit(maxNoteLen)
	n.form = huh.NewForm(huh.NewGroup(n.input)).
		WithTheme(m.st.theme).WithKeyMap(m.keymap).WithShowHelp(false).WithWidth(m.formWidth())
	return n
}

// SetSize fits the input to the new width.
func (n *noteScreen) SetSize(int, int) {
	n.form.WithWidth(n.m.formWidth())
}

// classify: Enter and Esc deny, so they are held; Tab and Shift-Tab do
// nothing (they would leave the field); every other key edits the note.
func (n *noteScreen) classify(k tea.KeyMsg) keyKind {
	switch {
	case k.Type == tea.KeyEnter, k.Type == tea.KeyEsc:
		return kindAction
	case k.Type == tea.KeyTab || k.Type == tea.KeyShiftTab:
		return kindNone
	}
	return kindText
}

// Update denies on Enter (with the note) or Esc (without), and passes
// every other key and message to the input.
func (n *noteScreen) Update(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyMsg); ok {
		switch {
		case isEnter(k):
			note, _ := n.input.GetValue().(string)
			return n.m.decide(approval.DenyOnce, strings.TrimSpace(note))
		case k.Type == tea.KeyEsc && !k.Alt:
			return n.m.decide(approval.DenyOnce, "")
		case k.Type == tea.KeyTab || k.Type == tea.KeyShiftTab:
			return nil
		}
	}
	_, cmd := n.form.Update(msg)
	return cmd
}

// View renders the request being denied and the note's input.
func (n *noteScreen) View() (top, body, bottom []string) {
	m := n.m
	r := m.current()
	if r == nil {
		// The note goes with its request (promptChanged); never shown
		// without one.
		body, bottom = m.idleView()
		return nil, fit(body, m.width), bottom
	}
	top, body = m.requestView(r, false)
	bottom = append(bottom, m.separator())
	bottom = append(bottom, styled(m.st.bold, wrapText(fmt.Sprintf("Deny request %s.", termtext.Esc(r.id)), m.width))...)
	bottom = append(bottom, strings.Split(n.form.View(), "\n")...)
	bottom = append(bottom, m.keyHelp([][2]string{{"enter", "deny with this note"}, {"esc", "deny without a note"}, {"ctrl+c", m.quitText()}})...)
	return top, body, bottom
}
