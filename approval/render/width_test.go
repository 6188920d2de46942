package render

import (
	"os/exec"
	"testing"
	"unicode"

	"github.com/charmbracelet/x/ansi"
	"github.com/mattn/go-runewidth"
	"github.com/rivo/uniseg"
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
