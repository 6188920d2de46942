package console

import (
	"github.com/charmbracelet/huh"
	"github.com/charmbracelet/lipgloss"
)

// styles are the console's own text styles. They are made by one renderer,
// the console's output, and use only the basic ANSI colours: an adaptive
// colour would make lipgloss query the terminal's background (OSC 11) while
// bubbletea reads the same terminal. Every message the console shows also
// says in words what the colour stresses, so a terminal without colour
// loses nothing.
type styles struct {
	header, label, cont, dim, bold lipgloss.Style
	// danger: "as root", the multiplexer banner, the escaping notice.
	danger lipgloss.Style
	// warn: the SSH agent warning, errors from the daemon.
	warn lipgloss.Style
	// notice: requests resolved elsewhere and other one-line news.
	notice lipgloss.Style
	key    lipgloss.Style
	theme  *huh.Theme
}

func newStyles(r *lipgloss.Renderer) *styles {
	red, yellow, cyan, grey := lipgloss.Color("1"), lipgloss.Color("3"), lipgloss.Color("6"), lipgloss.Color("8")
	s := &styles{
		header: r.NewStyle().Bold(true),
		label:  r.NewStyle().Bold(true),
		cont:   r.NewStyle().Foreground(grey),
		dim:    r.NewStyle().Foreground(grey),
		bold:   r.NewStyle().Bold(true),
		danger: r.NewStyle().Bold(true).Foreground(red),
		warn:   r.NewStyle().Bold(true).Foreground(yellow),
		notice: r.NewStyle().Foreground(cyan),
		key:    r.NewStyle().Bold(true),
	}
	s.theme = newTheme(r)
	return s
}

// newTheme is a huh theme built from scratch with r, so that no field falls
// back to huh's default theme (ThemeCharm uses adaptive colours). Fields the
// console does not use stay zero: a zero style renders text unchanged.
func newTheme(r *lipgloss.Renderer) *huh.Theme {
	var t huh.Theme
	t.Form.Base = r.NewStyle()
	t.Group.Base = r.NewStyle()
	t.Group.Title = r.NewStyle().Bold(true)
	t.Group.Description = r.NewStyle()
	t.FieldSeparator = r.NewStyle().SetString("\n")

	f := &t.Focused
	f.Base = r.NewStyle()
	f.Card = f.Base
	f.Title = r.NewStyle().Bold(true)
	f.NoteTitle = f.Title
	f.Description = r.NewStyle().Foreground(lipgloss.Color("8"))
	f.ErrorIndicator = r.NewStyle().Foreground(lipgloss.Color("1")).SetString(" *")
	f.ErrorMessage = r.NewStyle().Foreground(lipgloss.Color("1"))
	f.SelectSelector = r.NewStyle().Bold(true).SetString("> ")
	f.Option = r.NewStyle()
	f.NextIndicator = r.NewStyle()
	f.PrevIndicator = r.NewStyle()
	f.MultiSelectSelector = r.NewStyle().SetString("> ")
	f.SelectedOption = r.NewStyle().Bold(true).Reverse(true)
	f.SelectedPrefix = r.NewStyle().SetString("[x] ")
	f.UnselectedOption = r.NewStyle()
	f.UnselectedPrefix = r.NewStyle().SetString("[ ] ")
	f.TextInput.Cursor = r.NewStyle().Reverse(true)
	f.TextInput.CursorText = r.NewStyle()
	f.TextInput.Placeholder = r.NewStyle().Foreground(lipgloss.Color("8"))
	f.TextInput.Prompt = r.NewStyle().Bold(true)
	f.TextInput.Text = r.NewStyle()
	f.FocusedButton = r.NewStyle().Reverse(true)
	f.BlurredButton = r.NewStyle()
	f.Next = f.FocusedButton

	t.Blurred = t.Focused
	t.Blurred.SelectSelector = r.NewStyle().SetString("  ")
	t.Blurred.SelectedOption = r.NewStyle().Bold(true)
	// Help stays zero: the console shows its own key help and turns huh's
	// off (help.New's styles are adaptive).
	return &t
}
