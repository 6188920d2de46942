package console

import tea "github.com/charmbracelet/bubbletea"

// component is what the keyboard talks to and what fills the terminal
// below the header, the multiplexer warning and the notices: the decision
// prompt (decideScreen, also the idle screen when nothing waits), the note
// after Deny (noteScreen), the session grants (grantsScreen) or the full
// stdin of a request (stdinScreen). The model's screen is the one active
// component. A component belongs to one model and runs on its event loop;
// it changes in place and switches to another component through the model
// (showPrompt, startNote, openGrants, openStdin).
type component interface {
	// classify says what k does on this screen now, for the key guard
	// (keyguard.go), which decides whether and when k reaches Update.
	classify(k tea.KeyMsg) keyKind
	// Update takes a key that passed the key guard, or a message that is
	// not input (the note's cursor blink, huh's own messages), and returns
	// the command to run.
	Update(msg tea.Msg) tea.Cmd
	// View renders the screen's part of the terminal: the lines under the
	// notices (top), the part that scrolls (body) and the prompt and keys
	// (bottom). The body's lines already fit the width (fit), since a
	// request's body is fitted once when it is cached; the model fits top
	// and bottom.
	View() (top, body, bottom []string)
	// SetSize tells the screen the terminal's new size.
	SetSize(width, height int)
}
