package termtext

import (
	"os/exec"
	"testing"
	"unicode"

	"github.com/charmbracelet/x/ansi"
	"github.com/mattn/go-runewidth"
	"github.com/rivo/uniseg"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// glibcWidths returns wcwidth(r) + 1 for every code point, as glibc says in
// the C.UTF-8 locale (the table tmux, xterm and VTE use), read through
// Python's ctypes; nil when that is not possible here.
func glibcWidths(t *testing.T) []byte {
	t.Helper()
	const script = `
import ctypes, locale, sys
locale.setlocale(locale.LC_ALL, "C.UTF-8")
f = ctypes.CDLL("libc.so.6").wcwidth
f.restype, f.argtypes = ctypes.c_int, [ctypes.c_uint32]
sys.stdout.buffer.write(bytes(f(r) + 1 for r in range(0x110000)))
`
	out, err := exec.Command("python3", "-c", script).Output()
	if err != nil || len(out) != unicode.MaxRune+1 {
		// .ci/run installs python3; elsewhere the other tables still run.
		t.Logf("no glibc wcwidth table (python3 with ctypes and glibc needed): %v", err)
		return nil
	}
	return out
}

// tableWidths returns the width of r by each table the console meets: as
// bubbletea and lipgloss measure it (x/ansi, that is uniseg), go-runewidth
// outside and inside East Asian locales, and glibc (-2 when unknown). A
// combining mark is measured on a base: the width it adds to "a".
func tableWidths(r rune, glibc []byte) map[string]int {
	s, base := string(r), 0
	if unicode.Is(unicode.M, r) {
		s, base = "a"+s, 1
	}
	narrow, wide := runewidth.NewCondition(), runewidth.NewCondition()
	narrow.EastAsianWidth, wide.EastAsianWidth = false, true
	w := map[string]int{
		"ansi":           ansi.StringWidth(s) - base,
		"uniseg":         uniseg.StringWidth(s) - base,
		"runewidth":      narrow.StringWidth(s) - base,
		"runewidth (EA)": wide.StringWidth(s) - base,
	}
	if glibc != nil {
		w["glibc"] = int(glibc[r]) - 1
	}
	return w
}

// TestWidthTablesAgree checks every code point that Escape passes: every
// table knows it and gives it at most the width Width counts (so a line
// that fits by Width fits everywhere, and nothing vanishes), and when
// EscapeStrict passes it too, every table gives it exactly that width.
func TestWidthTablesAgree(t *testing.T) {
	testenv.Slow(t, "compares the width of every code point with glibc's, read through python3")
	glibc := glibcWidths(t)
	fails := 0
	for r := rune(0x20); r <= unicode.MaxRune; r++ {
		if 0xd800 <= r && r <= 0xdfff {
			continue // not encodable
		}
		s := string(r)
		if unicode.Is(unicode.M, r) {
			s = "a" + s
		}
		if e, _ := Escape(s); e != s || r == '\\' {
			continue
		}
		want := Width(s)
		if unicode.Is(unicode.M, r) {
			want--
		}
		e, _ := EscapeStrict(s)
		strict := e == s
		for table, got := range tableWidths(r, glibc) {
			// got < 0: glibc does not know r, and tmux would not show it.
			if got > want || got < 0 || strict && got != want {
				if fails++; fails <= 40 {
					t.Errorf("%U (strict %v): Width counts %d, %s gives %d", r, strict, want, table, got)
				}
			}
		}
	}
	if fails > 40 {
		t.Errorf("... %d disagreements in all", fails)
	}
}

func TestEscapeStrict(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		escaped bool
	}{
		{"ASCII", "apt-get install -y curl", "apt-get install -y curl", false},
		{"backslash only doubles", `a\b`, `a\\b`, false},
		{"Ambiguous Latin", "café", `caf\u00e9`, true},
		{"Neutral Latin passes", "naïve", "naïve", false},
		{"Ambiguous punctuation and box drawing", "·•─", `\u00b7\u2022\u2500`, true},
		{"Cyrillic look-alike", "/usr/bin/p\u0430sswd", `/usr/bin/p\u0430sswd`, true},
		{"Greek", "Ελ", `\u0395\u03bb`, true},
		{"emoji", "😀", `\U0001f600`, true},
		{"text-presentation pictographs", "☺⚠↪©", `\u263a\u26a0\u21aa\u00a9`, true},
		{"Yijing hexagram", "\u4dc0", `\u4dc0`, true},
		{"circled number on black square", "\u3248", `\u3248`, true},
		{"halfwidth sound mark", "ｶﾞ", `ｶ\uff9e`, true},
		{"spacing mark", "कि", `क\u093f`, true},
		{"one mark passes", "e\u0301", "e\u0301", false},
		{"second mark escaped", "e\u0301\u0302", `e` + "\u0301" + `\u0302`, true},
		{"supplementary letters", "\U00010400", `\U00010400`, true},
		{"CJK, kana, Hangul syllables, fullwidth pass", "日本語カナ한국ｒｍ", "日本語カナ한국ｒｍ", false},
		{"CJK extension B passes", "\U00020000", "\U00020000", false},
		{"escaped everywhere: three-em dash", "\u2e3b", `\u2e3b`, true},
		{"escaped everywhere: Unicode 15 ideograph", "\U00031350", `\U00031350`, true},
		{"controls as in Escape", "\x1b[2J\u202e", `\x1b[2J\u202e`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, escaped := EscapeStrict(tt.in)
			if got != tt.want || escaped != tt.escaped {
				t.Errorf("EscapeStrict(%q)\n got  %q, %v\n want %q, %v", tt.in, got, escaped, tt.want, tt.escaped)
			}
			if back, err := unescape(got); err != nil || back != tt.in {
				t.Errorf("EscapeStrict(%q) = %q unescapes to %q, %v", tt.in, got, back, err)
			}
			if w := Width(got); w != tableWidth(got) {
				t.Errorf("Width(%q) = %d, uniseg says %d", got, w, tableWidth(got))
			}
		})
	}
}

// tableWidth is the width of s by uniseg, which bubbletea uses.
func tableWidth(s string) int {
	return uniseg.StringWidth(s)
}

// TestWidth covers Width on hostile strings: escapes count their bytes,
// characters of the strict set their agreed width, others 2.
func TestWidth(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abc", 3},
		{`\x1b[2J`, 7},
		{"日本", 4},
		{"é", 2},
		{"e\u0301", 1},
		{"☺", 2},
		{"\u4dc0", 2},
		{"\u2e3b", 6},        // escaped on the way: \u2e3b
		{"\t", 2},            // \t
		{"\u200d", 6},        // \u200d
		{"🇫🇷", 20},           // two \U escapes
		{"\u1100\u1161", 12}, // two \u escapes
		{"कि", 2},            // base 1, spacing mark 1
		{"ｒｍ", 4},
	}
	for _, tt := range tests {
		if got := Width(tt.in); got != tt.want {
			t.Errorf("Width(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
