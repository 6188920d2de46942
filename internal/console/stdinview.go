package console

import (
	"fmt"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// stdinKey opens the full view of the current request's stdin and, in that
// view, goes back to the request.
const stdinKey = 'i'

// hasStdin reports whether r is fully loaded and feeds input to its first
// stage: only then is the full stdin view offered.
func (r *request) hasStdin() bool {
	return r != nil && r.complete() && r.shown != nil && r.shown.Stdin != nil && len(r.shown.Stdin.Data) > 0
}

// stdinScreen shows the full stdin of the current request, scrollable;
// nothing decides here.
type stdinScreen struct {
	m *model
	// back is the request view's scroll position, for the way back.
	back int
}

// openStdin switches to the full view of the current request's stdin. The
// request view's scroll position is kept for the way back.
func (m *model) openStdin() {
	m.screen = &stdinScreen{m: m, back: m.scroll}
	m.scroll = 0
}

// close goes back to the request: Deny preselected again and the prompt's
// key guard armed, as whenever the prompt reappears.
func (s *stdinScreen) close() tea.Cmd {
	m := s.m
	m.screen = newDecideScreen(m)
	m.scroll = s.back
	m.resetKeys()
	m.clampScroll()
	if c := m.current(); c == nil || m.submitted(c) != "" {
		return nil
	}
	return m.armGuard()
}

// SetSize: the view is rendered for the width when it is drawn.
func (s *stdinScreen) SetSize(int, int) {}

// classify: scrolling acts at once; going back and quitting are held like
// g; nothing else does anything here, decision keys included.
func (s *stdinScreen) classify(k tea.KeyMsg) keyKind {
	if movesKey(k) {
		return kindNav
	}
	if r := singleRune(k); r == stdinKey || r == 'q' || k.Type == tea.KeyEsc {
		return kindAction
	}
	return kindNone
}

// Update handles a key in the stdin view: scrolling, going back, or
// quitting. No key decides anything here, and nothing else is for it.
func (s *stdinScreen) Update(msg tea.Msg) tea.Cmd {
	m := s.m
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return nil
	}
	if n, ok := scrollKey(k); ok {
		m.scrollBy(n)
		return nil
	}
	if isNavKey(k) {
		if k.Type == tea.KeyUp || singleRune(k) == 'k' {
			m.scroll--
		} else {
			m.scroll++
		}
		m.clampScroll()
		return nil
	}
	switch r := singleRune(k); {
	case r == 'q':
		return m.quit()
	case r == stdinKey || k.Type == tea.KeyEsc && !k.Alt:
		return s.close()
	}
	return nil
}

// View renders the full stdin of the current request: its lines are
// rendered once per width and cached on the request, since View runs on
// every tick and the input can be most of a megabyte.
func (s *stdinScreen) View() (top, body, bottom []string) {
	m := s.m
	r := m.current()
	if r == nil {
		// The view goes with its request (promptChanged); never shown
		// without one.
		body, bottom = m.idleView()
		return nil, fit(body, m.width), bottom
	}
	st := m.st
	in := r.shown.Stdin
	kind := "text"
	if !approval.IsText(in.Data) {
		kind = "binary, as a hexdump"
	}
	top = append(top, "")
	top = append(top, styled(st.bold, wrapText(fmt.Sprintf("STDIN OF REQUEST %s · %d bytes · %s · %s",
		termtext.Esc(r.id), in.Size, kind, m.countdown(r.shown.Deadline)), m.width))...)
	top = append(top, styled(st.warn, wrapText("sha256 "+termtext.EscStrict(in.SHA256)+" · nothing is decided on this screen", m.width))...)
	if r.stdinWidth != m.width || r.stdinCache == nil {
		r.stdinCache = fit(stdinLines(st, in, m.width), m.width)
		r.stdinWidth = m.width
	}
	body = r.stdinCache
	bottom = append(bottom, m.separator())
	bottom = append(bottom, m.keyHelp([][2]string{
		{"PgUp/PgDn Home/End ↑/↓", "scroll"}, {"esc/i", "back to the request"}, {"q", m.quitText()},
	})...)
	return top, body, bottom
}

// stdinLines renders all of in at width: text line by line, escaped like
// the preview (termtext.EscapeStrict) and wrapped with a line number, every
// continuation marked in the number's column where the input cannot write;
// anything else as a hexdump of 16 bytes a row with the printable ASCII
// beside it. The last line says where the input ends.
func stdinLines(st *styles, in *approval.StdinShown, width int) []string {
	var out []string
	if approval.IsText(in.Data) {
		text := string(in.Data)
		final := strings.HasSuffix(text, "\n")
		parts := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		numW := len(fmt.Sprint(len(parts)))
		cont := strings.Repeat(" ", numW) + st.cont.Render(contMark)
		vw := max(width-1-numW-2, 1)
		for i, line := range parts {
			e, _ := termtext.EscapeStrict(line)
			for j, part := range termtext.Wrap(e, vw) {
				if j == 0 {
					out = append(out, st.label.Render(fmt.Sprintf("%*d  ", numW, i+1))+part)
				} else {
					out = append(out, cont+part)
				}
			}
		}
		end := "no newline at the end"
		if final {
			end = "ends with a newline"
		}
		return append(out, st.dim.Render(fmt.Sprintf("-- end of stdin: %d bytes, %d %s, %s --", in.Size, len(parts), termtext.Plural(len(parts), "line"), end)))
	}
	var b strings.Builder
	for off := 0; off < len(in.Data); off += 16 {
		row := in.Data[off:min(off+16, len(in.Data))]
		b.Reset()
		fmt.Fprintf(&b, "%08x  %-47s  |", off, fmt.Sprintf("% x", row))
		for _, c := range row {
			if c >= 0x20 && c < 0x7f {
				b.WriteByte(c)
			} else {
				b.WriteByte('.')
			}
		}
		b.WriteByte('|')
		out = append(out, b.String())
	}
	return append(out, st.dim.Render(fmt.Sprintf("-- end of stdin: %d bytes --", in.Size)))
}
