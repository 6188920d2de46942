package termtext

import (
	"strings"
	"testing"
)

func TestWrap(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		width int
		want  []string
	}{
		{"empty", "", 10, []string{""}},
		{"fits", "abc", 10, []string{"abc"}},
		{"exact fit", "abc", 3, []string{"abc"}},
		{"hard wrap", "abcdef", 3, []string{"abc", "def"}},
		{"hard wrap with rest", "abcdefg", 3, []string{"abc", "def", "g"}},
		{"width 1", "abc", 1, []string{"a", "b", "c"}},
		{"width 0: no wrapping", "abcdef", 0, []string{"abcdef"}},
		{"negative width: no wrapping", "abcdef", -5, []string{"abcdef"}},

		// Wide characters count 2.
		{"CJK", "日本語です", 4, []string{"日本", "語で", "す"}},
		{"CJK after ASCII", "a日本", 2, []string{"a", "日", "本"}},
		{"CJK wider than width", "日本", 1, []string{"日", "本"}},
		{"fullwidth", "ｒｍ -rf", 4, []string{"ｒｍ", " -rf"}},
		{"emoji", "😀😀😀", 4, []string{"😀😀", "😀"}},
		{"ambiguous counts 2", "éééé", 2, []string{"é", "é", "é", "é"}},
		{"ambiguous counts 2 (box drawing)", "──", 3, []string{"─", "─"}},
		{"Yijing hexagrams count 2", "\u4dc0\u4dc0\u4dc0", 4, []string{"\u4dc0\u4dc0", "\u4dc0"}},
		{"text-presentation emoji counts 2", "☺☺", 3, []string{"☺", "☺"}},
		{"three-em dash is escaped", "\u2e3b\u2e3b", 6, []string{`\u2e3b`, `\u2e3b`}},
		{"wide at the last column", "ab日", 3, []string{"ab", "日"}},

		// Escapes are never cut.
		{"\\x escape", `ab\x1bcd`, 4, []string{"ab", `\x1b`, "cd"}},
		{"\\x escape fits", `ab\x1bcd`, 6, []string{`ab\x1b`, "cd"}},
		{"\\u escape", `x\u202ey`, 3, []string{"x", `\u202e`, "y"}},
		{"\\U escape", `\U000e0041a`, 4, []string{`\U000e0041`, "a"}},
		{"\\U escape exact", `\U000e0041`, 10, []string{`\U000e0041`}},
		{"doubled backslash", `a\\b`, 2, []string{"a", `\\`, "b"}},
		{"\\n", `a\nb`, 2, []string{"a", `\n`, "b"}},
		{"escape after escape", `\x1b\x1b`, 5, []string{`\x1b`, `\x1b`}},
		{"ANSI-C apostrophe", `$'it\'s'`, 4, []string{"$'it", `\'s'`}},
		{"lone backslash is one column", `'a\.b'`, 3, []string{`'a\`, `.b'`}},
		{"not an escape: short hex", `\x1`, 2, []string{`\x`, "1"}},
		{"not an escape: bad hex", `\u12g4`, 3, []string{`\u1`, "2g4"}},

		// Combining marks stay with their base.
		{"mark with base", "ae\u0301b", 2, []string{"ae\u0301", "b"}},
		{"marks with base", "e\u0301\u0302x", 1, []string{"e\u0301\u0302", "x"}},
		{"spacing mark counts", "कि", 1, []string{"कि"}},
		{"mark on literal escape text", "'\\x1b\u0301'", 4, []string{"'", "\\x1b\u0301", "'"}},

		// Breaks prefer the last space.
		{"word wrap", "rm -rf /tmp/x", 8, []string{"rm -rf ", "/tmp/x"}},
		{"word wrap prose", "the quick brown fox", 10, []string{"the quick ", "brown fox"}},
		{"long word after space", "aa bbbbbbbbbb", 5, []string{"aa ", "bbbbb", "bbbbb"}},
		{"space that does not fit", "abcde fg", 5, []string{"abcde", " fg"}},
		{"trailing space", "ab ", 2, []string{"ab", " "}},
		{"command line", `printf %s $'\x1b[2J' | cat`, 12, []string{"printf %s ", `$'\x1b[2J' `, "| cat"}},

		// Unescaped input is escaped on the way.
		{"raw ESC", "\x1b[2J", 10, []string{`\x1b[2J`}},
		{"raw ESC wrapped", "ab\x1b[2J", 5, []string{"ab", `\x1b[`, "2J"}},
		{"raw invalid byte", "a\xffb", 10, []string{`a\xffb`}},
		{"raw RLO", "a\u202eb", 10, []string{`a\u202eb`}},
		{"raw lone mark", "\u0301a", 10, []string{`\u0301a`}},
		{"raw mark on space", "a \u0301", 10, []string{`a \u0301`}},
		{"raw newline", "a\nb", 10, []string{`a\nb`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Wrap(tt.in, tt.width)
			if strings.Join(got, "\x00") != strings.Join(tt.want, "\x00") || len(got) != len(tt.want) {
				t.Errorf("Wrap(%q, %d)\n got  %q\n want %q", tt.in, tt.width, got, tt.want)
			}
			checkWrap(t, tt.in, tt.width, got)
		})
	}
}

// checkWrap checks the properties every result of Wrap must have.
func checkWrap(t *testing.T, in string, width int, lines []string) {
	t.Helper()
	if len(lines) == 0 {
		t.Fatalf("Wrap(%q, %d) returned no line", in, width)
	}
	for _, line := range lines {
		if err := checkSafe(line); err != nil {
			t.Errorf("Wrap(%q, %d): %v", in, width, err)
		}
		if width < 1 {
			continue
		}
		units, w := 0, 0
		for i, marks := 0, noBase; i < len(line); units++ {
			var u unit
			u, i, marks = nextUnit(line, i, marks)
			w += u.width
		}
		if w > width && units != 1 {
			t.Errorf("Wrap(%q, %d): line %q is %d columns wide", in, width, line, w)
		}
	}
	// Nothing is lost: for text Escape left alone, joining gives it back.
	if e, _ := Escape(in); e == in {
		if joined := strings.Join(lines, ""); joined != in {
			t.Errorf("Wrap(%q, %d) joins to %q", in, width, joined)
		}
	}
}

func FuzzWrap(f *testing.F) {
	f.Add("rm -rf /tmp/x", uint8(8))
	f.Add("日本語 é\u0301 😀 \x1b[2J", uint8(3))
	f.Add("'\\x1b\u0301' \u0301 \xff", uint8(1))
	f.Fuzz(func(t *testing.T, s string, width uint8) {
		if len(s) > maxFuzzLen {
			t.Skip()
		}
		w := int(width%64) - 1 // -1 to 62
		e, _ := Escape(s)
		q, _ := Quote(s)
		for _, in := range []string{e, q} {
			lines := Wrap(in, w)
			checkWrap(t, in, w, lines)
			if joined := strings.Join(lines, ""); joined != in {
				t.Fatalf("Wrap(%q, %d) = %q, joins to %q", in, w, lines, joined)
			}
		}
		// Raw input comes out safe.
		checkWrap(t, s, w, Wrap(s, w))
	})
}
