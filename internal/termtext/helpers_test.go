package termtext

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxFuzzLen bounds the inputs the fuzz targets look at. Escape, Quote and
// Wrap keep at most a few characters of state, so short inputs reach every
// path; long ones would only make the fuzzer's minimisation of each new
// input take most of a run (golang.org/issue/48820).
const maxFuzzLen = 256

// unescape inverts Escape. It is strict: it accepts only what Escape can
// produce (every backslash starts a well-formed escape in its canonical
// form, no raw mark without a base), so that unescape(Escape(s)) == s proves
// that the rendering is unambiguous.
func unescape(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("invalid UTF-8 in %q", s)
	}
	var b []byte
	marks := noBase // as in scan: marks on the current base, or noBase
	for i := 0; i < len(s); {
		if s[i] != '\\' {
			r, size := utf8.DecodeRuneInString(s[i:])
			if err := unsafeRune(r); err != nil {
				return "", fmt.Errorf("offset %d: %v", i, err)
			}
			switch {
			case unicode.Is(unicode.M, r):
				if marks < 0 || marks >= maxMarks {
					return "", fmt.Errorf("offset %d: raw mark %U without a base", i, r)
				}
				marks++
			case r == ' ' || r == '\'':
				marks = noBase
			default:
				marks = 0
			}
			b = append(b, s[i:i+size]...)
			i += size
			continue
		}
		marks = noBase
		if i+1 >= len(s) {
			return "", fmt.Errorf("offset %d: dangling backslash", i)
		}
		var digits int
		switch s[i+1] {
		case '\\':
			b = append(b, '\\')
			i += 2
			continue
		case 't':
			b = append(b, '\t')
			i += 2
			continue
		case 'n':
			b = append(b, '\n')
			i += 2
			continue
		case 'r':
			b = append(b, '\r')
			i += 2
			continue
		case 'x':
			digits = 2
		case 'u':
			digits = 4
		case 'U':
			digits = 8
		default:
			return "", fmt.Errorf("offset %d: unknown escape %q", i, s[i:i+2])
		}
		hex := s[i+2 : min(len(s), i+2+digits)]
		v, err := strconv.ParseUint(hex, 16, 32)
		if len(hex) != digits || err != nil || strings.ToLower(hex) != hex || strings.ContainsAny(hex, "+-_") {
			return "", fmt.Errorf("offset %d: bad escape %q", i, s[i:i+2+len(hex)])
		}
		switch r := rune(v); s[i+1] {
		case 'x':
			if 0x20 <= r && r < 0x7f || r == '\t' || r == '\n' || r == '\r' {
				return "", fmt.Errorf("offset %d: non-canonical \\x%s", i, hex)
			}
			b = append(b, byte(r))
		case 'u':
			if r < 0x80 || utf8.RuneLen(r) < 0 {
				return "", fmt.Errorf("offset %d: non-canonical \\u%s", i, hex)
			}
			b = utf8.AppendRune(b, r)
		case 'U':
			if r <= 0xffff || utf8.RuneLen(r) < 0 {
				return "", fmt.Errorf("offset %d: non-canonical \\U%s", i, hex)
			}
			b = utf8.AppendRune(b, r)
		}
		i += 2 + digits
	}
	return string(b), nil
}

// bidiControls are the bidirectional formatting characters, listed here
// independently of the unicode tables Escape uses.
var bidiControls = []rune{
	0x061c, 0x200e, 0x200f,
	0x202a, 0x202b, 0x202c, 0x202d, 0x202e,
	0x2066, 0x2067, 0x2068, 0x2069,
}

// unsafeRune returns an error if r must never reach a terminal raw.
func unsafeRune(r rune) error {
	switch {
	case r < 0x20 || r == 0x7f:
		return fmt.Errorf("C0 control or DEL %U", r)
	case r < 0x80:
		return nil
	case 0x80 <= r && r <= 0x9f:
		return fmt.Errorf("C1 control %U", r)
	case slices.Contains(bidiControls, r):
		return fmt.Errorf("bidi control %U", r)
	case unicode.In(r, unicode.Cf, unicode.Co, unicode.Cs):
		return fmt.Errorf("format, private-use or surrogate %U", r)
	case r != ' ' && unicode.Is(unicode.Z, r):
		return fmt.Errorf("separator %U", r)
	case unicode.In(r, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point), r == 0x2800:
		return fmt.Errorf("invisible %U", r)
	case !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Zs):
		return fmt.Errorf("unassigned %U", r)
	case 0x1100 <= r && r <= 0x11ff, 0xa960 <= r && r <= 0xa97f, 0xd7b0 <= r && r <= 0xd7ff:
		return fmt.Errorf("Hangul conjoining jamo %U", r)
	case r == 0x2e3a || r == 0x2e3b:
		return fmt.Errorf("dash wider than 2 columns in uniseg %U", r)
	case 0x1f1e6 <= r && r <= 0x1f1ff || 0x1f3fb <= r && r <= 0x1f3ff:
		return fmt.Errorf("regional indicator or emoji modifier %U", r)
	case 0x302a <= r && r <= 0x302f || r > 0xffff && unicode.Is(unicode.M, r):
		return fmt.Errorf("mark of disputed width %U", r)
	case inTable(unicode15, r):
		return fmt.Errorf("added in Unicode 15.0, unknown to terminals %U", r)
	}
	return nil
}

// checkSafe returns an error if s, meant for a terminal, is not valid
// UTF-8, holds a rune unsafeRune rejects, or holds a combining mark that is
// not on a base (a character other than a mark, SPACE, apostrophe or
// backslash) or is the fourth or later on its base.
func checkSafe(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("invalid UTF-8 in %q", s)
	}
	marks := noBase
	for i, r := range s {
		if err := unsafeRune(r); err != nil {
			return fmt.Errorf("offset %d of %q: %v", i, s, err)
		}
		switch {
		case unicode.Is(unicode.M, r):
			if marks < 0 || marks >= maxMarks {
				return fmt.Errorf("offset %d of %q: mark %U without a base", i, s, r)
			}
			marks++
		case r == ' ' || r == '\'' || r == '\\':
			marks = noBase
		default:
			marks = 0
		}
	}
	return nil
}

// shellUnquote reads back one word in the forms Quote produces: a plain
// word, apostrophe-quoted pieces joined by \', or one ANSI-C quoted $'...'.
func shellUnquote(w string) (string, error) {
	switch {
	case w == "":
		return "", fmt.Errorf("empty word")
	case isPlainWord(w):
		return w, nil
	case strings.HasPrefix(w, "$'"):
		var b strings.Builder
		for i := 2; i < len(w); i++ {
			switch {
			case w[i] == '\'':
				if i != len(w)-1 {
					return "", fmt.Errorf("text after closing quote in %q", w)
				}
				return unescape(b.String())
			case strings.HasPrefix(w[i:], `\'`):
				b.WriteByte('\'')
				i++
			case w[i] == '\\' && i+1 < len(w):
				b.WriteString(w[i : i+2])
				i++
			default:
				b.WriteByte(w[i])
			}
		}
		return "", fmt.Errorf("unterminated $'...' in %q", w)
	}
	var b strings.Builder
	for i := 0; i < len(w); {
		switch {
		case strings.HasPrefix(w[i:], `\'`):
			b.WriteByte('\'')
			i += 2
		case w[i] == '\'':
			end := strings.IndexByte(w[i+1:], '\'')
			if end < 0 {
				return "", fmt.Errorf("unterminated quote in %q", w)
			}
			b.WriteString(w[i+1 : i+1+end])
			i += end + 2
		default:
			return "", fmt.Errorf("unquoted %q in %q", w[i], w)
		}
	}
	return b.String(), nil
}
