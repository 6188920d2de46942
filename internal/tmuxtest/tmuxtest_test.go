package tmuxtest

import (
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// TestSession types into a program on the terminal and waits for what it
// writes, for what goes away and for its size.
func TestSession(t *testing.T) {
	testenv.NeedsTmux(t)
	s := Start(t, Config{Command: `echo ready; read -r line; printf '%s\n' "got $line"; printf 'gone\n'; read -r line; clear; stty size`, Cols: 60, Rows: 20, Timeout: time.Minute})
	s.WaitFor("ready")
	s.Keys("hello there", "Enter")
	if screen := s.WaitFor("gone"); !strings.Contains(screen, "got hello there") {
		t.Errorf("the screen lacks the typed line:\n%s", screen)
	}
	s.Keys("Enter")
	s.WaitGone("gone")
	if screen := s.WaitFor("exited with status 0"); !strings.Contains(screen, "20 60") {
		t.Errorf("stty size does not say 20 60:\n%s", screen)
	}
	s.Resize(40, 10)
	if w := strings.TrimSpace(s.Run("display-message", "-p", "-t", s.Name, "#{window_width}x#{window_height}")); w != "40x10" {
		t.Errorf("the window is %s after Resize(40, 10)", w)
	}
}
