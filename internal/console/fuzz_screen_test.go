package console

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// FuzzScreen drives the console's render path with random Unicode at random
// terminal sizes: a request whose argument, environment value, reason,
// session and host are the fuzzer's strings goes into the model, and its
// View is sent to a terminal the way bubbletea's renderer sends a frame.
// Every line must fit by termtext.Width and by bubbletea's measure (so
// bubbletea cuts nothing). The terminal is tmux, the console's most common
// host, read back with capture-pane: it must show exactly the rows View
// meant, none wrapped, so no character is drawn outside its field; and the
// command field, if on screen, must read back as the command line, every
// character in order (as far as the page shows it). Without tmux, with
// -short, or with FUZZ_NO_TMUX set (to fuzz faster) only the checks on
// View's lines run.
//
// A terminal emulator library would be faster, but none usable is
// published on the Go module proxy (charmbracelet/x/vt is not), and tmux
// is the terminal the end-to-end tests and the red team used.
func FuzzScreen(f *testing.F) {
	for _, s := range [][2]string{
		{strings.Repeat("\u2e3b", 30) + "; id > /tmp/pwned", "update"},
		{"id", strings.Repeat(strings.Repeat("\u4dc0", 74)+"\n", 4) + "command    apt-get update\nruns       as asudo-agent (unprivileged)"},
		{strings.Repeat("日本", 20), strings.Repeat("é─·•", 20)},
		{"❤\ufe0f👨\u200d👩🇫🇷👍🏽☺", "\u1100\u1161\u11a8 a\u0301\u0302\u0303\u0304 \t\u00ad\u200b"},
		{"a b  c   d", "x\ny\n\nz"},
		{"\x1b[2J\x1b]0;t\x07\u202e", "\r\n\x00\xff"},
		{strings.Repeat("ｶﾞ", 30), strings.Repeat("\U0001fa75\U00031350", 10)},
	} {
		for _, size := range [][2]uint8{{40, 30}, {80, 24}, {132, 50}, {24, 40}, {10, 12}} {
			f.Add(s[0], s[1], size[0], size[1])
		}
	}
	tm := newFuzzTmux(f)
	f.Fuzz(func(t *testing.T, arg, text string, cols, rows uint8) {
		if len(arg) > 512 || len(text) > 1024 {
			t.Skip()
		}
		width, height := max(int(cols), 8), max(int(rows), 8)
		h := newHarness(t, "")
		r := lipgloss.NewRenderer(io.Discard)
		r.SetColorProfile(termenv.ANSI)
		h.m.cfg.renderer, h.m.st = r, newStyles(r)
		h.update(tea.WindowSizeMsg{Width: width, Height: height})
		s := shown("r1")
		s.Pipeline = [][]string{{"bash", "-c", arg}, {"tee", text}}
		s.Programs = []approval.Program{{Chain: []string{"/usr/bin/bash"}}, {Chain: []string{"/usr/bin/tee"}}}
		s.Env = map[string]string{"LANG": text}
		s.Reason, s.Session, s.Host = text, text, text
		h.pending(s)
		view := h.m.View()
		checkFits(t, "fuzz", width, view)

		// What View means the terminal to show: the last height lines,
		// without styling.
		want := strings.Split(view, "\n")
		want = want[max(len(want)-height, 0):]
		for i, l := range want {
			want[i] = strings.TrimRight(ansi.Strip(l), " ")
		}
		// As received: JSON turned invalid UTF-8 into U+FFFD.
		line, _ := termtext.CommandLine(h.m.current().shown.Pipeline)
		if got, ok := readField(want, "command", width); ok && !got.readsAs(line) {
			t.Errorf("at %dx%d the command field reads %q, not the command line %q:\n%s", width, height, got.rows, line, strings.Join(want, "\n"))
		}
		if n := slices.IndexFunc(want, func(l string) bool { return strings.HasPrefix(l, "command") }); n >= 0 &&
			slices.IndexFunc(want[n+1:], func(l string) bool { return strings.HasPrefix(l, "command") }) >= 0 {
			t.Errorf("at %dx%d two rows start with \"command\":\n%s", width, height, strings.Join(want, "\n"))
		}
		if tm == nil {
			return
		}
		screen, joined := tm.show(t, frame(view, width, height), width, height)
		if !slices.Equal(screen, joined) {
			t.Errorf("at %dx%d tmux wrapped a row:\n%s\njoined:\n%s", width, height, strings.Join(screen, "\n"), strings.Join(joined, "\n"))
		}
		for len(screen) > 0 && screen[len(screen)-1] == "" {
			screen = screen[:len(screen)-1]
		}
		for len(want) > 0 && want[len(want)-1] == "" {
			want = want[:len(want)-1]
		}
		if !slices.Equal(screen, want) {
			t.Errorf("at %dx%d tmux shows\n%s\ninstead of\n%s", width, height, strings.Join(screen, "\n"), strings.Join(want, "\n"))
		}
	})
}

// frame is what bubbletea's standard renderer writes for view as a first
// frame on a terminal of width x height: the last height lines, each cut to
// the width by bubbletea's own measure and followed by erase-to-end-of-line
// when shorter, separated by CR LF. The screen is cleared first.
func frame(view string, width, height int) []byte {
	lines := strings.Split(view, "\n")
	lines = lines[max(len(lines)-height, 0):]
	var b bytes.Buffer
	b.WriteString("\x1b[H\x1b[2J")
	for i, l := range lines {
		l = ansi.Truncate(l, width, "")
		if ansi.StringWidth(l) < width {
			l += ansi.EraseLineRight
		}
		b.WriteString(l)
		if i < len(lines)-1 {
			b.WriteString("\r\n")
		}
	}
	return b.Bytes()
}

// field is a field read back from the rows of a screen.
type field struct {
	rows []string
	// cut: the field runs into the end of the page.
	cut bool
}

// readField reads the rows of the field label in screen, in the layout the
// console uses at width: the label in its column and continuation rows
// marked with contMark under it, or (narrower than 40 columns) the label
// on a row of its own, the value indented by 2 and continuation rows
// starting with contMark. It reports false when the label is not on
// screen.
func readField(screen []string, label string, width int) (field, bool) {
	first, cont := label+strings.Repeat(" ", labelWidth-len(label)), strings.Repeat(" ", labelWidth-2)+contMark
	if width < 40 {
		first, cont = label, contMark
	}
	i := slices.IndexFunc(screen, func(l string) bool { return strings.HasPrefix(l, first) })
	if i < 0 {
		return field{}, false
	}
	var f field
	if width < 40 {
		if i+1 >= len(screen) || !strings.HasPrefix(screen[i+1], "  ") {
			return field{cut: i+1 >= len(screen)}, true
		}
		i++
		f.rows = append(f.rows, screen[i][2:])
	} else {
		f.rows = append(f.rows, screen[i][labelWidth:])
	}
	for _, l := range screen[i+1:] {
		if !strings.HasPrefix(l, cont) {
			f.cut = strings.HasPrefix(l, "-- lines") || strings.HasPrefix(l, "lines ") ||
				l != "" && strings.Trim(l, "0123456789-/") == ""
			return f, true
		}
		f.rows = append(f.rows, l[len(cont):])
	}
	f.cut = true
	return f, true
}

// readsAs reports whether the field's rows, trailing blanks removed, are
// value broken into pieces (the first pieces if the field is cut): each
// row is the next piece, after the blanks a break left at the end of the
// row before.
func (f field) readsAs(value string) bool {
	pos := 0
	for i, row := range f.rows {
		if i > 0 {
			for !strings.HasPrefix(value[pos:], row) && pos < len(value) && value[pos] == ' ' {
				pos++
			}
		}
		if !strings.HasPrefix(value[pos:], row) {
			return false
		}
		pos += len(row)
	}
	return f.cut || strings.TrimRight(value[pos:], " ") == ""
}

// fuzzTmux is a private tmux server that shows frames.
type fuzzTmux struct {
	server, dir string
	n           int
}

// newFuzzTmux starts nothing yet; it returns nil when tmux is missing.
func newFuzzTmux(f *testing.F) *fuzzTmux {
	if _, err := exec.LookPath("tmux"); err != nil || os.Getenv("FUZZ_NO_TMUX") != "" || testing.Short() {
		f.Log("no tmux (not found, -short or FUZZ_NO_TMUX): only the checks on View's lines run")
		return nil
	}
	tm := &fuzzTmux{server: fmt.Sprintf("agent-sudo-fuzz-%d", os.Getpid()), dir: f.TempDir()}
	// A session that stays, so that the server does not exit (and race
	// with the next new-session) whenever a frame's session is killed.
	if b, err := tm.cmd("new-session", "-d", "-s", "keep", "exec sleep 100000").CombinedOutput(); err != nil {
		f.Fatalf("tmux new-session: %v: %s", err, b)
	}
	f.Cleanup(func() { _ = tm.cmd("kill-server").Run() })
	return tm
}

func (tm *fuzzTmux) cmd(args ...string) *exec.Cmd {
	c := exec.Command("tmux", append([]string{"-L", tm.server, "-f", "/dev/null"}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMUX=") {
			c.Env = append(c.Env, kv)
		}
	}
	c.Env = append(c.Env, "LANG=C.UTF-8", "LC_ALL=C.UTF-8")
	return c
}

// show writes out to a new tmux window of width x height, waits until it
// is written, and returns the window's rows as capture-pane reads them and
// as capture-pane -J reads them (rows tmux wrapped joined), trailing
// blanks removed.
func (tm *fuzzTmux) show(t *testing.T, out []byte, width, height int) (rows, joined []string) {
	t.Helper()
	tm.n++
	name := fmt.Sprintf("f%d", tm.n)
	file := filepath.Join(tm.dir, name)
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal(err)
	}
	// The window's program writes the frame, then says so on a wait-for
	// channel and stays, so that the pane keeps what it shows.
	script := fmt.Sprintf("cat %s; %s -L %s wait-for -S %s; exec sleep 600", file, tmux, tm.server, name)
	if b, err := tm.cmd("new-session", "-d", "-s", name, "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), script).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, b)
	}
	defer func() { _ = tm.cmd("kill-session", "-t", name).Run() }()
	if b, err := tm.cmd("wait-for", name).CombinedOutput(); err != nil {
		t.Fatalf("tmux wait-for: %v: %s", err, b)
	}
	b, err := tm.cmd("capture-pane", "-p", "-t", name, ";", "capture-pane", "-p", "-J", "-t", name).Output()
	if err != nil {
		t.Fatalf("tmux capture-pane: %v", err)
	}
	all := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i, r := range all {
		all[i] = strings.TrimRight(r, " ")
	}
	if len(all) < height {
		t.Fatalf("capture-pane returned %d rows for a %d-row window", len(all), height)
	}
	return all[:height], all[height:]
}
