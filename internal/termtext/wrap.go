package termtext

import (
	"strings"
	"unicode"
)

// Wrap breaks s, the output of [Escape], [Quote] or [CommandLine], into
// lines of at most width display columns. It never drops a character:
// joining the lines gives s back. It never cuts inside a unit, where a unit
// is one escape (\\, \', \t, \n, \r, \xNN, \uNNNN, \UNNNNNNNN) or one
// character with the combining marks on it; a unit wider than width gets a
// line of its own, the only case of a line wider than width. A line breaks
// after its last SPACE when the next unit does not fit, if it has one, and
// otherwise right before that unit. Wrap returns at least one line; when
// width < 1 it does not break s at all.
//
// Widths are [Width]'s: exact for the characters EscapeStrict passes, on
// which every width table agrees, and the most any table gives for the
// others, so a line of at most width columns never takes more on any
// terminal (it may take less). Escapes are ASCII and count one column per
// byte.
//
// A break can fall anywhere, right after "rm -rf /" for instance, so the
// caller must mark continuation lines in a way the request cannot imitate
// (an indent or a prefix drawn outside the text).
//
// Wrap is not a substitute for Escape, but it is safe on any input: a
// character that Escape would escape (a control, an invalid byte, a mark
// with no base) is escaped on the way, so its lines are always safe to
// print; only then do they differ from s.
func Wrap(s string, width int) []string {
	var (
		lines []string
		line  []unit // the line being filled
		w     int    // its width
		space = -1   // index in line of its last SPACE, or -1
		marks = noBase
	)
	if width < 1 {
		var b strings.Builder
		for i := 0; i < len(s); {
			var u unit
			u, i, marks = nextUnit(s, i, marks)
			b.WriteString(u.text(s))
		}
		return []string{b.String()}
	}
	for i := 0; i < len(s); {
		var u unit
		u, i, marks = nextUnit(s, i, marks)
		for len(line) > 0 && w+u.width > width {
			n := len(line)
			if space >= 0 {
				n = space + 1
			}
			lines = append(lines, join(s, line[:n]))
			line = line[n:]
			w, space = 0, -1
			for _, v := range line {
				w += v.width
			}
		}
		if u.space {
			space = len(line)
		}
		line = append(line, u)
		w += u.width
	}
	return append(lines, join(s, line))
}

// A unit is what Wrap never cuts: s[start:end], or esc when the text had to
// be escaped on the way.
type unit struct {
	start, end int
	esc        string
	width      int
	space      bool
}

// nextUnit returns the unit that starts at s[i], where marks is the mark
// state before it (see scan), the index after the unit, and the mark state
// after it. A character that Escape would escape becomes an escaped unit.
func nextUnit(s string, i, marks int) (unit, int, int) {
	var u unit
	if s[i] == '\\' {
		// An escape, or text that reads like one. No mark follows an
		// escape in Escape's output, but between apostrophes Quote shows a
		// literal `\x1b` as is, and Escape took its last character (a
		// letter or digit) as the base of any marks after it: they attach
		// to the unit here too. After \\ and \', as after a lone
		// backslash, marks never had a base.
		n := escapeLen(s[i:])
		u = unit{start: i, end: i + n, width: n}
		marks = noBase
		if last := s[i+n-1]; n > 1 && last != '\\' && last != '\'' {
			marks = 0
		}
		i += n
	} else {
		r, size, pass, next := scan(s[i:], marks, false)
		if pass {
			u = unit{start: i, end: i + size, width: runeWidth(r), space: r == ' '}
		} else {
			var b strings.Builder
			writeEscape(&b, s[i], r, size)
			u = unit{start: i, end: i + size, esc: b.String(), width: b.Len()}
		}
		marks = next
		i += size
	}
	// The combining marks on the unit.
	for i < len(s) && marks >= 0 {
		r, size, pass, next := scan(s[i:], marks, false)
		if !pass || next <= 0 {
			break
		}
		u.end = i + size
		if unicode.Is(unicode.Mc, r) {
			u.width++
		}
		marks = next
		i += size
	}
	return u, i, marks
}

// escapeLen returns the length of the escape at the start of s, which
// starts with a backslash, or 1 if s does not start with an escape.
func escapeLen(s string) int {
	if len(s) < 2 {
		return 1
	}
	digits := 0
	switch s[1] {
	case '\\', '\'', 't', 'n', 'r':
		return 2
	case 'x':
		digits = 2
	case 'u':
		digits = 4
	case 'U':
		digits = 8
	default:
		return 1
	}
	if len(s) < 2+digits {
		return 1
	}
	for _, c := range []byte(s[2 : 2+digits]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return 1
		}
	}
	return 2 + digits
}

// text returns the text of u, which was cut from s.
func (u unit) text(s string) string {
	if u.esc != "" {
		return u.esc
	}
	return s[u.start:u.end]
}

// join returns the text of units, which were cut from s.
func join(s string, units []unit) string {
	var b strings.Builder
	for _, u := range units {
		b.WriteString(u.text(s))
	}
	return b.String()
}
