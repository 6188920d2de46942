package cli

import (
	"bytes"
	"fmt"
	"io"
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

// visibleLines is an io.Writer that writes what it is given to w one line
// at a time, each made visible: for the output of a process that must not
// hold the terminal itself (the enrolment page's, which runs as another
// user). A line longer than maxVisibleLine is written in parts; a last
// line without its newline is kept back until Flush.
type visibleLines struct {
	w    io.Writer
	line []byte
}

const maxVisibleLine = 4096

func (v *visibleLines) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		end := i < 0
		if end {
			i = len(p)
		}
		v.line = append(v.line, p[:i]...)
		for len(v.line) >= maxVisibleLine {
			if err := v.emit(v.line[:maxVisibleLine]); err != nil {
				return 0, err
			}
			v.line = append(v.line[:0], v.line[maxVisibleLine:]...)
		}
		if end {
			break
		}
		p = p[i+1:]
		err := v.emit(v.line) // an empty line too
		v.line = v.line[:0]
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Flush writes the line kept back, if any.
func (v *visibleLines) Flush() error {
	if len(v.line) == 0 {
		return nil
	}
	err := v.emit(v.line)
	v.line = v.line[:0]
	return err
}

// emit writes line made visible, and a newline.
func (v *visibleLines) emit(line []byte) error {
	_, err := io.WriteString(v.w, visible(string(line))+"\n")
	return err
}
