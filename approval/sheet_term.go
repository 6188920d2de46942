package approval

import "github.com/agent-sudo/agent-sudo/internal/termtext"

// TermPart escapes a part of a sheet for a terminal, by its kind (the
// console, `agent-sudo audit show`), and reports whether anything had to
// be escaped. The sheet itself escapes nothing; this is the terminal's
// renderer of it, shared so that every terminal surface escapes alike.
func TermPart(p Part) (string, bool) {
	switch p.Kind {
	case PartWords:
		return p.Text, false
	case PartFree:
		return termtext.Escape(p.Text)
	case PartArg:
		return termtext.Quote(p.Text)
	case PartProgram:
		return termtext.QuoteProgram(p.Text)
	case PartASCII:
		return termtext.EscapeASCII(p.Text)
	case PartCommand:
		return termtext.QuoteCommand(p.Text)
	default: // PartExact, and any kind added later: the strictest
		return termtext.EscapeStrict(p.Text)
	}
}

// TermText is an item's value escaped for a terminal (TermPart of each
// part), and whether anything had to be escaped.
func TermText(it Item) (string, bool) {
	var out string
	escaped := false
	for _, p := range it.Parts {
		s, e := TermPart(p)
		out += s
		escaped = escaped || e
	}
	return out, escaped
}
