package termtext

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// ASCIIJSON returns JSON text b rewritten so that it is ASCII and nothing
// in it can act on a terminal, while it means the same JSON: every
// non-ASCII character becomes a \u escape (a surrogate pair above U+FFFF),
// each byte of invalid UTF-8 becomes \ufffd, DEL becomes \u007f, and the
// other control characters become spaces (in valid JSON they can only be
// whitespace between tokens, such as the raw CR a tampered log line may
// hold). b itself is returned when there is nothing to rewrite.
func ASCIIJSON(b []byte) []byte {
	i := 0
	for i < len(b) && b[i] >= 0x20 && b[i] < 0x7f {
		i++
	}
	if i == len(b) {
		return b
	}
	out := append(make([]byte, 0, len(b)+len(b)/4), b[:i]...)
	for b = b[i:]; len(b) > 0; {
		r, size := utf8.DecodeRune(b)
		switch {
		case r < 0x20:
			out = append(out, ' ')
		case r == 0x7f:
			out = append(out, `\u007f`...)
		case r < utf8.RuneSelf:
			out = append(out, b[0])
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		b = b[size:]
	}
	return out
}
