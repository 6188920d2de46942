package console

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// hostileWidths are strings whose width the tables of the console's
// libraries and of terminals disagree on, or that try to break the layout.
var hostileWidths = []struct{ name, s string }{
	{"three-em dashes (4 columns in uniseg)", strings.Repeat("\u2e3b", 30) + "; id > /tmp/pwned"},
	{"two-em dashes", strings.Repeat("\u2e3a", 40) + "; id"},
	{"Yijing hexagrams (2 columns in glibc)", strings.Repeat("\u4dc0", 74)},
	{"circled numbers on black squares", strings.Repeat("\u3248", 50)},
	{"East Asian Ambiguous", strings.Repeat("é─·•", 30)},
	{"Cyrillic look-alike", "/usr/bin/p\u0430sswd"},
	{"emoji", strings.Repeat("😀☺⚠", 20)},
	{"emoji with selectors and joiners", strings.Repeat("❤\ufe0f👨\u200d👩\u200d👧", 10)},
	{"flags", strings.Repeat("🇫🇷", 30)},
	{"skin tones", strings.Repeat("👍🏽", 30)},
	{"Hangul jamo", strings.Repeat("\u1100\u1161\u11a8", 30)},
	{"Hangul syllables", strings.Repeat("한국어", 30)},
	{"CJK", strings.Repeat("日本語", 40)},
	{"wide at the last column", strings.Repeat("a", 27) + strings.Repeat("日", 40)},
	{"fullwidth", strings.Repeat("ｒｍ", 40)},
	{"combining stack", "a" + strings.Repeat("\u0301", 40) + "b"},
	{"spacing marks", strings.Repeat("कि", 40)},
	{"tabs", strings.Repeat("\t", 40) + "x"},
	{"soft hyphens and zero-width", strings.Repeat("a\u00ad\u200b", 40)},
	{"halfwidth katakana sound marks", strings.Repeat("ｶﾞ", 40)},
	{"newer than glibc", strings.Repeat("\U0001fa75\U00031350\U0002b739", 20)},
	{"supplementary marks", strings.Repeat("a\U0001d165", 30)},
}

// TestHostileWidthsFit renders each hostile string as an argument, the
// directory, an environment value, the reason, the session and the host,
// at several terminal sizes, and checks that every line of the screen fits
// in the terminal by termtext.Width and by bubbletea's own measure (so
// bubbletea never cuts a line), that the command line is on screen and
// holds every character of the command in order, and that the escaping
// notice is shown when anything was escaped.
func TestHostileWidthsFit(t *testing.T) {
	for _, tt := range hostileWidths {
		for _, size := range [][2]int{{40, 30}, {80, 40}, {132, 50}, {24, 60}} {
			h := newHarness(t, "")
			h.update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			s := shown("r1")
			s.Pipeline = [][]string{{"bash", "-c", tt.s}}
			s.Programs = []approval.Program{{Chain: []string{"/usr/bin/bash"}}}
			s.Reason, s.Session, s.Host = tt.s, tt.s, tt.s
			s.Env = map[string]string{"LANG": tt.s}
			h.pending(s)
			screen := h.view()
			checkFits(t, tt.name, size[0], screen)
			line, escaped := termtext.CommandLine(s.Pipeline)
			if !strings.Contains(screen, "\ncommand") {
				t.Errorf("%s at %dx%d: the command is not on screen:\n%s", tt.name, size[0], size[1], screen)
			}
			// The body, which the screen shows a page at a time (scrolling
			// is tested elsewhere), holds the whole command line.
			_, body, _ := h.m.layout(-1)
			if got := fieldText(strings.Join(body, "\n"), "command", size[0]); got != line {
				t.Errorf("%s at %dx%d: the command field reads\n%q\nwant\n%q\nscreen:\n%s", tt.name, size[0], size[1], got, line, screen)
			}
			if escaped && !strings.Contains(strings.Join(strings.Fields(screen), " "), "they are shown escaped") {
				t.Errorf("%s at %dx%d: escaped, but no notice:\n%s", tt.name, size[0], size[1], screen)
			}
		}
	}
}

// checkFits fails unless every line of screen is narrower than width by
// termtext.Width and by x/ansi (bubbletea's measure).
func checkFits(t *testing.T, name string, width int, screen string) {
	t.Helper()
	for _, l := range strings.Split(screen, "\n") {
		plain := ansi.Strip(l)
		if w, a := termtext.Width(plain), ansi.StringWidth(l); w > width-1 || a > width-1 {
			t.Errorf("%s at width %d: a line is %d columns by termtext.Width, %d by bubbletea: %q", name, width, w, a, plain)
		}
	}
}

// fieldText returns the value of the field label on screen, its
// continuation lines joined, in the wide layout (label column) or the
// narrow one (label on a line of its own).
func fieldText(screen, label string, width int) string {
	var b strings.Builder
	lines := strings.Split(screen, "\n")
	narrow := width < 40
	cont := strings.Repeat(" ", labelWidth-2) + contMark
	if narrow {
		cont = contMark
	}
	for i, l := range lines {
		switch {
		case !narrow && strings.HasPrefix(l, label+strings.Repeat(" ", labelWidth-len(label))):
			b.WriteString(l[labelWidth:])
		case narrow && l == label && i+1 < len(lines):
			b.WriteString(strings.TrimPrefix(lines[i+1], "  "))
			i++
		default:
			continue
		}
		for _, c := range lines[i+1:] {
			if !strings.HasPrefix(c, cont) {
				break
			}
			b.WriteString(c[len(cont):])
		}
		return b.String()
	}
	return ""
}

// TestStrictFieldsAreFlagged: a character of disputed width is escaped and
// flagged in the fields that must be read exactly, and passes in free text.
func TestStrictFieldsAreFlagged(t *testing.T) {
	for _, tt := range []struct {
		name    string
		set     func(s *approval.Shown)
		want    string
		flagged bool
	}{
		{"argument", func(s *approval.Shown) { s.Pipeline = [][]string{{"cat", "café"}} }, `cat $'caf\u00e9'`, true},
		{"cwd", func(s *approval.Shown) { s.Cwd = "/srv/café" }, `cwd        $'/srv/caf\u00e9'`, true},
		{"env", func(s *approval.Shown) { s.Env = map[string]string{"LANG": "☺"} }, `env        LANG=$'\u263a'`, true},
		{"executable", func(s *approval.Shown) { s.Peer.Exe = "/usr/bin/p\u0430sswd" }, `exe /usr/bin/p\u0430sswd`, true},
		{"option with a Cyrillic look-alike", func(s *approval.Shown) { s.Pipeline = [][]string{{"rm", "--\u0501ry-run", "/tmp/x"}} },
			`command    rm $'--\u0501ry-run' /tmp/x`, true},
		{"program with a fullwidth letter", func(s *approval.Shown) {
			s.Pipeline = [][]string{{"/usr/bin/\uff52m", "x"}}
			s.Programs = []approval.Program{{Chain: []string{"/usr/bin/\uff52m"}}}
		}, `stage 1    $'/usr/bin/\uff52m' x`, true},
		{"executable with a non-Ambiguous look-alike", func(s *approval.Shown) { s.Peer.Exe = "/usr/bin/\u0456d" }, `exe /usr/bin/\u0456d`, true},
		{"file name with a fullwidth letter passes", func(s *approval.Shown) { s.Pipeline = [][]string{{"cat", "/tmp/\uff52"}} },
			"command    cat '/tmp/\uff52'", false},
		{"reason", func(s *approval.Shown) { s.Reason = "café ☺ Ελληνικά" }, "reason     café ☺ Ελληνικά", false},
		{"reason with a three-em dash", func(s *approval.Shown) { s.Reason = "a\u2e3bb" }, `reason     a\u2e3bb`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "")
			s := shown("r1")
			tt.set(s)
			h.pending(s)
			h.wantFull(tt.want)
			if tt.flagged {
				h.wantView(escapedNotice)
			} else {
				h.notView(escapedNotice)
			}
		})
	}
}
