package main

import (
	"fmt"
	"regexp"
	"strings"
)

// escape makes s safe as roff text: backslashes are escaped, and a line that
// would start with a control character (a dot or an apostrophe) is protected
// with \&.
func escape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	return protectLines(nonASCII(s))
}

// protectLines puts \& before each line of s that starts with a roff
// control character (a dot or an apostrophe), so that it is read as text.
func protectLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	return strings.Join(lines, "\n")
}

// nonASCII writes every non-ASCII character of s as a groff Unicode escape,
// so that the page is plain ASCII whatever preprocessor reads it.
func nonASCII(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, `\[u%04X]`, r)
		}
	}
	return b.String()
}

// preformatted is text shown as it is, in a no-fill block.
func preformatted(text string) string {
	text = strings.TrimRight(text, "\n")
	return ".nf\n" + escape(text) + "\n.fi\n"
}

var (
	reCode   = regexp.MustCompile("`([^`]+)`")
	reBold   = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	reItalic = regexp.MustCompile(`(^|[^*\w])\*([^*\s][^*]*)\*`)
	reLink   = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`)
)

// inline renders one paragraph's Markdown inline markup as roff: code and
// bold in bold, emphasis in italics, a link as its text (followed by its
// address when that is a web address). The text is escaped first, so that
// nothing in it is taken for roff.
func inline(s string) string {
	// Code spans first, so that markup inside them stays literal; they are
	// swapped for placeholders while the rest is converted.
	var spans []string
	s = reCode.ReplaceAllStringFunc(s, func(m string) string {
		spans = append(spans, m[1:len(m)-1])
		return fmt.Sprintf("\x00%d\x00", len(spans)-1)
	})
	s = escape(s)
	s = reLink.ReplaceAllStringFunc(s, func(m string) string {
		sub := reLink.FindStringSubmatch(m)
		if strings.HasPrefix(sub[2], "http://") || strings.HasPrefix(sub[2], "https://") {
			return sub[1] + " <" + sub[2] + ">"
		}
		return sub[1]
	})
	s = reBold.ReplaceAllString(s, `\fB$1\fR`)
	s = reItalic.ReplaceAllString(s, `$1\fI$2\fR`)
	for i, span := range spans {
		s = strings.Replace(s, fmt.Sprintf("\x00%d\x00", i), `\fB`+nonASCII(strings.ReplaceAll(span, `\`, `\e`))+`\fR`, 1)
	}
	// A line of the paragraph may now start with a control character.
	return protectLines(s)
}

var (
	reBullet   = regexp.MustCompile(`^(\s*)[-*] (.*)$`)
	reNumbered = regexp.MustCompile(`^(\s*)(\d+)\. (.*)$`)
	reTableSep = regexp.MustCompile(`^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$`)
)

// markdown renders the Markdown of a docs/ page as the body of a man page:
// the first-level title is dropped (the caller writes NAME), "##" headings
// become sections and deeper ones subsections, lists become indented
// paragraphs, fenced code becomes no-fill blocks, and tables become tbl
// tables (the page must then start with the '\" t preprocessor line).
// HTML comments are dropped.
func markdown(md string) string {
	var b strings.Builder
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	var para []string
	listDepth := 0 // how many .RS are open for nested list items
	flush := func() {
		if len(para) > 0 {
			b.WriteString(inline(strings.Join(para, "\n")) + "\n")
			para = nil
		}
	}
	closeLists := func() {
		for ; listDepth > 0; listDepth-- {
			b.WriteString(".RE\n")
		}
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		trimmed := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(trimmed, "<!--"):
			flush()
			for !strings.Contains(lines[i], "-->") && i+1 < len(lines) {
				i++
			}
		case strings.HasPrefix(trimmed, "```"):
			flush()
			var code []string
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				code = append(code, lines[i])
			}
			b.WriteString(".PP\n.RS 4\n" + preformatted(strings.Join(code, "\n")) + ".RE\n")
		case strings.HasPrefix(l, "# "):
			flush()
			closeLists()
		case strings.HasPrefix(l, "## "):
			flush()
			closeLists()
			b.WriteString(".SH " + inline(strings.ToUpper(strings.TrimPrefix(l, "## "))) + "\n")
		case strings.HasPrefix(l, "###"):
			flush()
			closeLists()
			b.WriteString(".SS " + inline(strings.TrimSpace(strings.TrimLeft(l, "#"))) + "\n")
		case trimmed == "":
			flush()
		case strings.HasPrefix(trimmed, "|") && i+1 < len(lines) && reTableSep.MatchString(strings.TrimSpace(lines[i+1])):
			flush()
			closeLists()
			rows := [][]string{cells(l)}
			for i += 2; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
				rows = append(rows, cells(lines[i]))
			}
			i--
			b.WriteString(table(rows))
		case reBullet.MatchString(l) || reNumbered.MatchString(l):
			flush()
			indent, mark, text := listItem(l)
			depth := indent / 2
			for ; listDepth < depth; listDepth++ {
				b.WriteString(".RS\n")
			}
			for ; listDepth > depth; listDepth-- {
				b.WriteString(".RE\n")
			}
			b.WriteString(".IP " + mark + " 4\n")
			para = append(para, text)
		default:
			if len(para) == 0 && listDepth == 0 && !strings.HasPrefix(l, " ") {
				b.WriteString(".PP\n")
			}
			if len(para) == 0 && listDepth > 0 && !strings.HasPrefix(l, " ") {
				closeLists()
				b.WriteString(".PP\n")
			}
			para = append(para, trimmed)
		}
	}
	flush()
	closeLists()
	return b.String()
}

// listItem splits a list line into its indentation, its roff mark and its
// text.
func listItem(l string) (indent int, mark, text string) {
	if m := reBullet.FindStringSubmatch(l); m != nil {
		return len(m[1]), `\(bu`, m[2]
	}
	m := reNumbered.FindStringSubmatch(l)
	return len(m[1]), m[2] + ".", m[3]
}

// cells splits a Markdown table row into its trimmed cells.
func cells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	row = strings.TrimSuffix(row, "|")
	var out []string
	for c := range strings.SplitSeq(row, "|") {
		out = append(out, strings.TrimSpace(c))
	}
	return out
}

// table renders rows (the first is the header) as a tbl table whose cells
// are text blocks, not adjusted (.na), so that long cells wrap; the last
// column takes the remaining width.
func table(rows [][]string) string {
	n := len(rows[0])
	var b strings.Builder
	b.WriteString(".PP\n.TS\nallbox tab(@);\n")
	format := make([]string, n)
	for i := range format {
		format[i] = "l"
	}
	format[n-1] = "lx"
	b.WriteString(strings.Repeat("lb ", n-1) + "lb\n")
	b.WriteString(strings.Join(format, " ") + ".\n")
	for _, r := range rows {
		for i := range n {
			c := ""
			if i < len(r) {
				c = r[i]
			}
			if i > 0 {
				b.WriteString("@")
			}
			// .na: groff 1.23 (Debian 13) would justify the text block
			// and warn "cannot adjust line" where a cell's break points
			// leave too few spaces; 1.22 did not.
			b.WriteString("T{\n.na\n" + breakable(inline(c)) + "\nT}")
		}
		b.WriteString("\n")
	}
	b.WriteString(".TE\n")
	return b.String()
}

// breakable lets groff break a table cell's long words after / : , _ and =
// (\: is a break point that prints nothing), so that a path, a list or a
// long key fits a narrow column.
func breakable(s string) string {
	return strings.NewReplacer("/", `/\:`, ":", `:\:`, ",", `,\:`, "_", `_\:`, "=", `=\:`).Replace(s)
}
