package termtext_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

func TestVisible(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain text, with punctuation: ok!", "plain text, with punctuation: ok!"},
		{"naïve café 日本語 ✓ 🙂", "naïve café 日本語 ✓ 🙂"},
		{"a\nb\tc\rd", `a\x0ab\x09c\x0dd`},
		{"\x00\x01\x1f\x7f", `\x00\x01\x1f\x7f`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"bad \xff\xfe utf-8 \xe2\x82", `bad \xff\xfe utf-8 \xe2\x82`},
		{"c1 \u0085 \u009b", `c1 \u0085 \u009b`},
		{"bidi \u202eevil\u202c \u2066x\u2069 \u200f \u061c", `bidi \u202eevil\u202c \u2066x\u2069 \u200f \u061c`},
		{"zero\u200bwidth\u200d\ufeff\u2060", `zero\u200bwidth\u200d\ufeff\u2060`},
		{"line\u2028para\u2029", `line\u2028para\u2029`},
		{"private \ue000 \U000f0000", `private \ue000 \U000f0000`},
		{"tag \U000e0041", `tag \U000e0041`},
		{"replacement char \ufffd stays", "replacement char \ufffd stays"},
		{`backslash \x1b stays`, `backslash \x1b stays`},
	}
	for _, tt := range tests {
		if got := termtext.Visible(tt.in); got != tt.want {
			t.Errorf("Visible(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestVisibleLines: what another process writes reaches the terminal one
// line at a time, each made visible, however the writes split it; a line
// too long is written in parts, and a last line without newline at Flush.
func TestVisibleLines(t *testing.T) {
	var out bytes.Buffer
	v := termtext.NewVisibleLines(&out)
	for _, p := range []string{"ok\nan \x1b]0;ti", "tle\x07 escape\n\x9b31m", "\r\n", strings.Repeat("x", termtext.MaxVisibleLine+10), "\n\nlast"} {
		if n, err := v.Write([]byte(p)); err != nil || n != len(p) {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if err := v.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "ok\nan \\x1b]0;title\\x07 escape\n\\x9b31m\\x0d\n" + strings.Repeat("x", termtext.MaxVisibleLine) + "\n" + strings.Repeat("x", 10) + "\n\nlast\n"
	if out.String() != want {
		t.Errorf("relayed %q,\nwant %q", out.String(), want)
	}
}
