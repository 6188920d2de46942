package console

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// openPty opens a new pseudo-terminal of cols×rows and returns its
// terminal side, closed when the test ends.
func openPty(t *testing.T, cols, rows uint16) *os.File {
	t.Helper()
	_, tty, _ := testenv.Pty(t, cols, rows)
	return tty
}

// TestFirstFrameFitsTheTerminal: the console's first frame, drawn before
// bubbletea reports the terminal's size, is drawn at the terminal's real
// size (read from the terminal), not at 80×24: in a narrower terminal it
// would wrap. A file that is not a terminal gives no size, and the model
// keeps 80×24.
func TestFirstFrameFitsTheTerminal(t *testing.T) {
	tty := openPty(t, 40, 12)
	cols, rows := terminalSize(tty)
	if cols != 40 || rows != 12 {
		t.Fatalf("terminalSize = %dx%d, want 40x12", cols, rows)
	}
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	m := newModel(config{cols: cols, rows: rows, renderer: r, version: "test"})
	checkFits(t, "the first frame", 40, m.View())

	f, err := os.CreateTemp(t.TempDir(), "not-a-terminal")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if cols, rows := terminalSize(f); cols != 0 || rows != 0 {
		t.Errorf("terminalSize of a plain file = %dx%d, want 0x0", cols, rows)
	}
	if m := newModel(config{renderer: r}); m.width != defaultCols || m.height != defaultRows {
		t.Errorf("without a size the model is %dx%d, want %dx%d", m.width, m.height, defaultCols, defaultRows)
	}
}

// TestHeaderKeepsOneLine: the header is one line of the first screen's
// budget: the daemon's version and host where they fit, the version left
// out where it does not (the pseudo-version of a go install), then the
// host.
func TestHeaderKeepsOneLine(t *testing.T) {
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.Ascii)
	const pseudo = "v0.0.0-20261127222217-243e9ad01ba2"
	for _, tc := range []struct {
		cols               int
		version, want, not string
	}{
		{120, pseudo, "· agent-sudod " + pseudo + " on build-01", ""},
		{100, "1.4.2", "· agent-sudod 1.4.2 on build-01", ""},
		{100, pseudo, "· agent-sudod on build-01", pseudo},
		{80, pseudo, "0 session grants", "agent-sudod"},
	} {
		m := newModel(config{cols: tc.cols, rows: 24, renderer: r, version: tc.version})
		m.daemons[0].host = "build-01"
		h := m.header()
		if len(h) != 1 || !strings.Contains(h[0], tc.want) || tc.not != "" && strings.Contains(h[0], tc.not) {
			t.Errorf("%d columns, version %s: header %q, want one line with %q", tc.cols, tc.version, h, tc.want)
		}
	}
}
