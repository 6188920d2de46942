package cli

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// visible returns s with everything that could move the cursor, change the
// terminal's state or make text read differently than it is stored replaced
// by a Go-style escape:
//
//   - bytes below 0x20 (newline and tab included, so that a message stays
//     one line), DEL, and bytes that are not valid UTF-8 become \xNN;
//   - runes that are not graphic (C1 controls, bidi overrides and isolates,
//     zero-width and other format characters, line and paragraph separators,
//     private-use and unassigned code points) become \uNNNN or \UNNNNNNNN.
//
// It is for agent-sudo's own one-line diagnostics, which embed untrusted text
// (the daemon's messages) next to values already quoted with %q. Unlike
// termtext.Escape, used for the audit table and the approver's screen, it does
// not double backslashes: a %q-quoted value would otherwise be escaped twice,
// and in a diagnostic line the ambiguity that doubling prevents (a literal
// "" typed by the agent) misleads nobody about what will run.
func visible(s string) string {
	i := strings.IndexFunc(s, needsEscape)
	if i < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && needsEscape(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case needsEscape(r) && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case needsEscape(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// needsEscape reports whether a valid rune must be escaped by visible.
func needsEscape(r rune) bool {
	if r < 0x80 {
		return r < 0x20 || r == 0x7f
	}
	return !unicode.IsGraphic(r)
}
