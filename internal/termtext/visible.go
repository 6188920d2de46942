package termtext

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Visible returns s with everything that could move the cursor, change the
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
// [Escape], used for the audit table and the approver's screen, it does
// not double backslashes: a %q-quoted value would otherwise be escaped twice,
// and in a diagnostic line the ambiguity that doubling prevents (a literal
// "" typed by the agent) misleads nobody about what will run.
func Visible(s string) string {
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

// needsEscape reports whether a valid rune must be escaped by Visible.
func needsEscape(r rune) bool {
	if r < 0x80 {
		return r < 0x20 || r == 0x7f
	}
	return !unicode.IsGraphic(r)
}

// VisibleLines is an io.Writer that writes what it is given to its writer
// one line at a time, each made [Visible]: for the output of a process that
// must not hold the terminal itself (the enrolment page's, which runs as
// another user). A line longer than MaxVisibleLine is written in parts; a
// last line without its newline is kept back until Flush.
type VisibleLines struct {
	w    io.Writer
	line []byte
}

// NewVisibleLines returns a VisibleLines that writes to w.
func NewVisibleLines(w io.Writer) *VisibleLines { return &VisibleLines{w: w} }

// MaxVisibleLine is the longest part of a line VisibleLines writes as one.
const MaxVisibleLine = 4096

func (v *VisibleLines) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		end := i < 0
		if end {
			i = len(p)
		}
		v.line = append(v.line, p[:i]...)
		for len(v.line) >= MaxVisibleLine {
			if err := v.emit(v.line[:MaxVisibleLine]); err != nil {
				return 0, err
			}
			v.line = append(v.line[:0], v.line[MaxVisibleLine:]...)
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
func (v *VisibleLines) Flush() error {
	if len(v.line) == 0 {
		return nil
	}
	err := v.emit(v.line)
	v.line = v.line[:0]
	return err
}

// emit writes line made visible, and a newline.
func (v *VisibleLines) emit(line []byte) error {
	_, err := io.WriteString(v.w, Visible(string(line))+"\n")
	return err
}
