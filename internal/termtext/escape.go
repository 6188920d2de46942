package termtext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxMarks is the number of combining marks that may pass through on one
// base character (rule 6 of docs/approving.md, "The escaping rules").
// Three covers Vietnamese, Thai, Arabic and most Indic and Hebrew text;
// "Zalgo" text that stacks dozens of marks to draw over neighbouring lines
// is escaped from the fourth mark on.
const maxMarks = 3

// noBase is the mark state when the previous character cannot carry a
// combining mark.
const noBase = -1

const hexDigits = "0123456789abcdef"

// Escape returns s with every character that could control or deceive a
// terminal replaced by a visible escape, following rules 1 to 7 of
// docs/approving.md ("The escaping rules"), and whether anything other
// than a backslash had to be escaped.
func Escape(s string) (string, bool) {
	return escapeMode(s, false, false)
}

// EscapeStrict is Escape with the stricter rules 8 and 9 (docs/approving.md)
// for command lines, program paths, environment variables and
// directories: every character it passes has one width that every
// terminal agrees on, and no stack of combining marks.
func EscapeStrict(s string) (string, bool) {
	return escapeMode(s, true, false)
}

// EscapeASCII is EscapeStrict that also escapes every character outside
// ASCII (rule 10 of docs/approving.md, "The escaping rules"): for program
// paths and arguments that look like options, where a letter of another
// script is more likely a look-alike than an honest name.
func EscapeASCII(s string) (string, bool) {
	return escapeMode(s, true, true)
}

// escapeMode is Escape (neither flag), EscapeStrict (strict) or
// EscapeASCII (both).
func escapeMode(s string, strict, ascii bool) (string, bool) {
	var b strings.Builder
	b.Grow(len(s))
	marks, escaped := noBase, false
	for i := 0; i < len(s); {
		r, size, pass, next := scan(s[i:], marks, strict)
		if ascii && size > 1 {
			pass, next = false, noBase
		}
		if pass {
			b.WriteString(s[i : i+size])
		} else {
			writeEscape(&b, s[i], r, size)
			escaped = escaped || r != '\\'
		}
		marks = next
		i += size
	}
	return b.String(), escaped
}

// scan classifies the character at the start of s, which must not be empty:
// a rune, or one byte that does not start a valid UTF-8 encoding (then r is
// utf8.RuneError and size is 1). marks is the number of combining marks
// already on the current base, or noBase. It reports the character's size
// in bytes, whether it passes through unchanged, and the mark state after
// it. strict selects EscapeStrict's rules.
func scan(s string, marks int, strict bool) (r rune, size int, pass bool, next int) {
	if c := s[0]; c < utf8.RuneSelf {
		switch {
		case c < 0x20 || c == 0x7f || c == '\\':
			return rune(c), 1, false, noBase
		case c == ' ' || c == '\'':
			return rune(c), 1, true, noBase
		}
		return rune(c), 1, true, 0
	}
	r, size = utf8.DecodeRuneInString(s)
	switch {
	case r == utf8.RuneError && size == 1:
		return r, 1, false, noBase
	case mustEscape(r):
		return r, size, false, noBase
	case unicode.Is(unicode.M, r):
		limit := maxMarks
		if strict {
			limit = maxMarksStrict
		}
		if marks >= 0 && marks < limit && !(strict && unicode.Is(unicode.Mc, r)) {
			return r, size, true, marks + 1
		}
		return r, size, false, noBase
	case strict && !strictOK(r):
		return r, size, false, noBase
	}
	return r, size, true, 0
}

// mustEscape reports whether r is escaped wherever it appears: a control
// character, or one of the runes of rule 5. It does not cover the backslash
// (rule 1), combining marks (rule 6) nor the strict rules (8 and 9).
func mustEscape(r rune) bool {
	switch {
	case r == ' ':
		return false
	case r == 0x2800: // BRAILLE PATTERN BLANK
		return true
	case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Z):
		return true
	case unicode.In(r, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point):
		return true
	case escapedEverywhere(r):
		return true
	}
	// Unassigned (Cn): in none of the general categories. C and Z were
	// handled above.
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S)
}

// writeEscape writes the escape for the character scan returned as r and
// size; c is the character's first byte.
func writeEscape(b *strings.Builder, c byte, r rune, size int) {
	switch {
	case r == utf8.RuneError && size == 1:
		writeHex(b, `\x`, uint32(c), 2)
	case r == '\\':
		b.WriteString(`\\`)
	case r == '\t':
		b.WriteString(`\t`)
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\r':
		b.WriteString(`\r`)
	case r < utf8.RuneSelf:
		writeHex(b, `\x`, uint32(r), 2)
	case r <= 0xffff:
		writeHex(b, `\u`, uint32(r), 4)
	default:
		writeHex(b, `\U`, uint32(r), 8)
	}
}

// writeHex writes prefix and the low digits hex digits of v.
func writeHex(b *strings.Builder, prefix string, v uint32, digits int) {
	b.WriteString(prefix)
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[v>>uint(shift)&0xf])
	}
}
