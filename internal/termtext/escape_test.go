package termtext

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
)

func TestEscape(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		escaped bool
	}{
		// Nothing to do.
		{"empty", "", "", false},
		{"plain command", "apt-get install -y curl", "apt-get install -y curl", false},
		{"printable ASCII", " !\"#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}~", " !\"#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}~", false},

		// Rule 1: backslashes are doubled, without setting the flag.
		{"backslash", `C:\Windows`, `C:\\Windows`, false},
		{"literal \\x1b text", `\x1b[2J`, `\\x1b[2J`, false},
		{"literal \\u202e text", `\u202e`, `\\u202e`, false},
		{"two backslashes", `\\`, `\\\\`, false},
		{"trailing backslash", `a\`, `a\\`, false},

		// Rules 2 and 3: C0 controls and DEL.
		{"tab newline CR", "a\tb\nc\rd", `a\tb\nc\rd`, true},
		{"NUL", "a\x00b", `a\x00b`, true},
		{"BEL", "\a", `\x07`, true},
		{"backspace", "rm -rf /\b\b\b\b\b\b\b\bls -l   ", `rm -rf /\x08\x08\x08\x08\x08\x08\x08\x08ls -l   `, true},
		{"CR overwrite", "safe\rrm -rf /", `safe\rrm -rf /`, true},
		{"form feed, vertical tab", "\f\v", `\x0c\x0b`, true},
		{"unit separator", "\x1f", `\x1f`, true},
		{"DEL", "a\x7fb", `a\x7fb`, true},

		// Terminal escape sequences: escaping ESC and the C1 introducers
		// neutralises them.
		{"CSI clear screen", "\x1b[2J", `\x1b[2J`, true},
		{"CSI colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`, true},
		{"CSI cursor up and erase line", "ok\x1b[1A\x1b[2K", `ok\x1b[1A\x1b[2K`, true},
		{"CSI hidden text", "\x1b[8mhidden\x1b[28m", `\x1b[8mhidden\x1b[28m`, true},
		{"OSC title BEL", "\x1b]0;title\x07", `\x1b]0;title\x07`, true},
		{"OSC title ST", "\x1b]2;title\x1b\\", `\x1b]2;title\x1b\\`, true},
		{"OSC 8 hyperlink", "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\", `\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\`, true},
		{"OSC 52 clipboard", "\x1b]52;c;cm0gLXJmIC8=\x07", `\x1b]52;c;cm0gLXJmIC8=\x07`, true},
		{"DCS", "\x1bP+q544e\x1b\\", `\x1bP+q544e\x1b\\`, true},
		{"APC", "\x1b_Gf=100;\x1b\\", `\x1b_Gf=100;\x1b\\`, true},
		{"C1 CSI as UTF-8", "\u009b2J", `\u009b2J`, true},
		{"C1 OSC DCS ST as UTF-8", "\u009d0;t\u009c\u0090x\u009c", `\u009d0;t\u009c\u0090x\u009c`, true},
		{"C1 NEL", "a\u0085b", `a\u0085b`, true},
		{"C1 CSI as a raw byte", "\x9b2J", `\x9b2J`, true},

		// Rule 4: invalid UTF-8, one escape per byte.
		{"invalid bytes", "\xff\xfe", `\xff\xfe`, true},
		{"invalid byte inside text", "a\xffb", `a\xffb`, true},
		{"overlong slash", "\xc0\xaf", `\xc0\xaf`, true},
		{"overlong NUL", "\xc0\x80", `\xc0\x80`, true},
		{"encoded surrogate", "\xed\xa0\x80", `\xed\xa0\x80`, true},
		{"above U+10FFFF", "\xf4\x90\x80\x80", `\xf4\x90\x80\x80`, true},
		{"truncated sequence", "\xe2\x80", `\xe2\x80`, true},
		{"truncated then ASCII", "\xe2\x80x", `\xe2\x80x`, true},
		{"stray continuation", "\x80", `\x80`, true},
		{"literal U+FFFD passes", "\ufffd", "\ufffd", false},

		// Rule 5: bidi controls.
		{"RLO", "rm -rf / #\u202etxt.exe", `rm -rf / #\u202etxt.exe`, true},
		{"LRE RLE PDF LRO", "\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`, true},
		{"isolates", "\u2066a\u2067b\u2068c\u2069", `\u2066a\u2067b\u2068c\u2069`, true},
		{"marks LRM RLM ALM", "\u200e\u200f\u061c", `\u200e\u200f\u061c`, true},

		// Rule 5: zero-width and invisible format characters.
		{"zero-width space", "rm\u200b -rf", `rm\u200b -rf`, true},
		{"ZWNJ ZWJ", "\u200c\u200d", `\u200c\u200d`, true},
		{"ZWJ emoji sequence", "👨\u200d👩", `👨\u200d👩`, true},
		{"word joiner and invisible operators", "\u2060\u2061\u2062\u2063\u2064", `\u2060\u2061\u2062\u2063\u2064`, true},
		{"BOM", "\ufeffls", `\ufeffls`, true},
		{"soft hyphen", "pass\u00adwd", `pass\u00adwd`, true},
		{"Mongolian vowel separator", "\u180e", `\u180e`, true},
		{"tag characters", "a\U000e0001\U000e0041\U000e007f", `a\U000e0001\U000e0041\U000e007f`, true},
		{"interlinear annotation", "\ufff9a\ufffab\ufffb", `\ufff9a\ufffab\ufffb`, true},

		// Rule 5: private use, unassigned, noncharacters.
		{"private use BMP", "\ue000", `\ue000`, true},
		{"private use plane 15", "\U000f0000", `\U000f0000`, true},
		{"unassigned", "\u0378", `\u0378`, true},
		{"noncharacter", "\ufffe\uffff\ufdd0", `\ufffe\uffff\ufdd0`, true},
		{"last code point", "\U0010ffff", `\U0010ffff`, true},
		{"unassigned default-ignorable", "\u2065", `\u2065`, true},

		// Rule 5: separators other than SPACE.
		{"line separator", "a\u2028b", `a\u2028b`, true},
		{"paragraph separator", "a\u2029b", `a\u2029b`, true},
		{"no-break space", "rm\u00a0-rf", `rm\u00a0-rf`, true},
		{"ideographic space", "a\u3000b", `a\u3000b`, true},
		{"en quad to hair space", "\u2000\u200a", `\u2000\u200a`, true},
		{"narrow no-break and math space", "\u202f\u205f", `\u202f\u205f`, true},
		{"ogham space mark", "\u1680", `\u1680`, true},

		// Rule 5: variation selectors and other invisible characters.
		{"emoji presentation selector", "❤\ufe0f", `❤\ufe0f`, true},
		{"text presentation selector", "a\ufe0e", `a\ufe0e`, true},
		{"supplementary variation selector", "a\U000e0100", `a\U000e0100`, true},
		{"Mongolian free variation selectors", "\u180b\u180f", `\u180b\u180f`, true},
		{"combining grapheme joiner", "a\u034fb", `a\u034fb`, true},
		{"hangul fillers", "\u115f\u1160\u3164\uffa0", `\u115f\u1160\u3164\uffa0`, true},
		{"Khmer inherent vowels", "\u17b4\u17b5", `\u17b4\u17b5`, true},
		{"braille blank", "rm\u2800-rf", `rm\u2800-rf`, true},

		// Rule 6: combining marks.
		{"lone combining mark", "\u0301", `\u0301`, true},
		{"leading combining mark", "\u0338abc", `\u0338abc`, true},
		{"mark on a letter", "e\u0301", "e\u0301", false},
		{"two marks (Vietnamese)", "e\u0323\u0302", "e\u0323\u0302", false},
		{"three marks", "a\u0300\u0301\u0302", "a\u0300\u0301\u0302", false},
		{"five marks", "a\u0300\u0301\u0302\u0303\u0304b\u0300", "a\u0300\u0301\u0302" + `\u0303\u0304` + "b\u0300", true},
		{"mark on space", "a \u0338b", `a \u0338b`, true},
		{"mark on apostrophe", "'\u0308", `'\u0308`, true},
		{"mark on backslash", "\\\u0338", `\\\u0338`, true},
		{"mark after an escape", "\x1b\u0301", `\x1b\u0301`, true},
		{"mark after an escaped mark", "\u0301\u0302", `\u0301\u0302`, true},
		{"mark after variation selector", "a\ufe0f\u0301", `a\ufe0f\u0301`, true},
		{"mark on a symbol", "/\u0338", "/\u0338", false},
		{"enclosing mark", "1\u20e3", "1\u20e3", false},
		{"spacing mark (Devanagari)", "कि", "कि", false},
		{"Devanagari", "नमस्ते", "नमस्ते", false},

		// Rule 7: everything else passes.
		{"Latin-1", "café naïve", "café naïve", false},
		{"CJK", "日本語のテキスト", "日本語のテキスト", false},
		{"Hangul", "한국어", "한국어", false},
		{"emoji", "😀🎉", "😀🎉", false},
		{"Yijing hexagrams (counted 2 columns)", "\u4dc0\u4dc1", "\u4dc0\u4dc1", false},

		// Rule 6: characters no width can be given to.
		{"emoji skin tone modifier", "👍🏽", `👍\U0001f3fd`, true},
		{"flag", "🇫🇷", `\U0001f1eb\U0001f1f7`, true},
		{"three-em dash (4 columns in uniseg)", "a\u2e3b\u2e3ab", `a\u2e3b\u2e3ab`, true},
		{"Hangul conjoining jamo", "\u1100\u1161\u11a8", `\u1100\u1161\u11a8`, true},
		{"Hangul jamo extended", "\ua960\ud7b0", `\ua960\ud7b0`, true},
		{"ideographic tone marks", "日\u302a", `日\u302a`, true},
		{"supplementary-plane mark", "a\U0001d165", `a\U0001d165`, true},
		{"Greek and Cyrillic", "Ελληνικά Привет", "Ελληνικά Привет", false},
		{"Arabic and Hebrew letters", "مرحبا שלום", "مرحبا שלום", false},
		{"fullwidth letters", "ｒｍ", "ｒｍ", false},
		{"box drawing", "│─┼", "│─┼", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, escaped := Escape(tt.in)
			if got != tt.want || escaped != tt.escaped {
				t.Errorf("Escape(%q)\n got  %q, %v\n want %q, %v", tt.in, got, escaped, tt.want, tt.escaped)
			}
			checkEscape(t, tt.in, got, escaped)
		})
	}
}

// checkEscape checks the properties every result of Escape must have.
func checkEscape(t *testing.T, in, got string, escaped bool) {
	t.Helper()
	if err := checkSafe(got); err != nil {
		t.Errorf("Escape(%q) = %q: %v", in, got, err)
	}
	back, err := unescape(got)
	if err != nil {
		t.Errorf("Escape(%q) = %q, which does not unescape: %v", in, got, err)
	} else if back != in {
		t.Errorf("unescape(Escape(%q)) = %q", in, back)
	}
	// The flag is false exactly when doubling backslashes was all.
	if doubled := strings.ReplaceAll(in, `\`, `\\`); escaped != (got != doubled) {
		t.Errorf("Escape(%q) = %q, %v: flag disagrees with the output", in, got, escaped)
	}
	// The output has nothing left to escape but its backslashes.
	again, escapedAgain := Escape(got)
	if escapedAgain || again != strings.ReplaceAll(got, `\`, `\\`) {
		t.Errorf("Escape(Escape(%q)) = %q, %v; want only backslashes doubled", in, again, escapedAgain)
	}
}

// TestEscapeEveryRune runs code points through Escape: all of planes 0 to 3
// and the tags and variation selectors of plane 14, and every 61st of the
// rest (unassigned and private use). Each is checked alone against the
// rules, and between two letters against every property of Escape's output
// (every mark, and one code point in eight).
func TestEscapeEveryRune(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if 0xd800 <= r && r <= 0xdfff {
			continue // not encodable; see the invalid UTF-8 cases
		}
		if r >= 0x40000 && (r < 0xe0000 || r > 0xe0fff) && r%61 != 0 && r != unicode.MaxRune {
			continue
		}
		alone := string(r)
		got, escaped := Escape(alone)
		mark := unicode.Is(unicode.M, r)
		wantEscaped := unsafeRune(r) != nil || mark
		if escaped != wantEscaped {
			t.Errorf("Escape(%q) = %q, %v; want escaped %v", alone, got, escaped, wantEscaped)
		}
		if escaped {
			if want := oracleEscape(r); got != want {
				t.Errorf("Escape(%q) = %q, want %q", alone, got, want)
			}
		}
		if in := "a" + alone + "b"; r%8 == 0 || mark {
			got, escaped := Escape(in)
			checkEscape(t, in, got, escaped)
		}
		if t.Failed() {
			return
		}
	}
}

// oracleEscape is the escape of one rune, written from the rules.
func oracleEscape(r rune) string {
	switch r {
	case '\t':
		return `\t`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\\':
		return `\\`
	}
	const hex = "0123456789abcdef"
	var prefix string
	var digits int
	switch {
	case r < 0x80:
		prefix, digits = `\x`, 2
	case r <= 0xffff:
		prefix, digits = `\u`, 4
	default:
		prefix, digits = `\U`, 8
	}
	b := []byte(prefix)
	for i := digits - 1; i >= 0; i-- {
		b = append(b, hex[r>>(4*i)&0xf])
	}
	return string(b)
}

// TestEscapeEveryByte checks every byte that cannot start a valid UTF-8
// encoding on its own.
func TestEscapeEveryByte(t *testing.T) {
	for c := 0x80; c <= 0xff; c++ {
		in := string([]byte{byte(c)})
		got, escaped := Escape(in)
		want := fmt.Sprintf(`\x%02x`, c)
		if got != want || !escaped {
			t.Errorf("Escape(%q) = %q, %v; want %q, true", in, got, escaped, want)
		}
		checkEscape(t, in, got, escaped)
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{
		"", "ls -l", `C:\x1b`, "\x1b[2J", "\x1b]0;t\x07", "\u009b2J", "\x9b", "safe\rrm -rf /",
		"\u202e", "\u2066\u2069", "\u200b", "\ufeff", "\u00ad", "\U000e0041", "\u2028",
		"\xff\xfe", "\xc0\xaf", "\xed\xa0\x80", "\u0301a", "a\u0301\u0302\u0303\u0304",
		"'\u0301", "\\\u0301", "café", "日本語", "😀", "❤\ufe0f",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxFuzzLen {
			t.Skip()
		}
		// checkEscape checks that the output is valid UTF-8 with no C0, DEL,
		// C1, bidi, Cf, Co, Cs, Cn, Zl, Zp or other invisible rune and no
		// mark without a base, that it unescapes to s byte for byte, and
		// that the flag is right.
		got, escaped := Escape(s)
		checkEscape(t, s, got, escaped)
		for _, line := range Wrap(got, 7) {
			if err := checkSafe(line); err != nil {
				t.Fatalf("Wrap(Escape(%q)): %v", s, err)
			}
		}
	})
}
