package main

import (
	"fmt"
	"regexp"
	"strings"
)

// helpDoc is a help text of agent-sudo or agent-sudod split into its parts.
// Every help has the same shape (cmd/agent-sudo/cli's usage.write, and
// agent-sudod's): "usage:" lines, paragraphs of text, then sections whose
// title line ends in a colon: "flags:", "exit status:", and others such as
// "signals:" or "commands:".
type helpDoc struct {
	usage []string // the usage lines, without "usage: "
	text  string   // the paragraphs between the usage and the sections
	flags []item   // "flags:": name with its argument, and what it does
	exits []item   // "exit status:": the status, and what it means
	other []section
}

// item is one entry of a list: a flag, an exit status, a key, a signal.
type item struct{ term, desc string }

// section is a titled list other than flags and exit statuses.
type section struct {
	title string
	items []item
}

var (
	// reSectionTitle is the title line of a help's sections: the flag
	// package's and usage.write's, and agent-sudod's signals. Other lines
	// ending in a colon belong to the text.
	reSectionTitle = regexp.MustCompile(`^(flags|exit status|signals|commands):$`)
	// reWord is a word of a command's name in a usage line.
	reWord = regexp.MustCompile(`^[a-z][a-z-]*$`)
)

// parseHelp splits a help text into its parts.
func parseHelp(help string) helpDoc {
	var d helpDoc
	lines := strings.Split(strings.TrimRight(help, "\n"), "\n")
	i := 0
	for ; i < len(lines); i++ {
		l := lines[i]
		if u, ok := strings.CutPrefix(l, "usage: "); ok {
			d.usage = append(d.usage, strings.TrimSpace(u))
		} else if len(d.usage) > 0 && strings.HasPrefix(l, "       ") && strings.TrimSpace(l) != "" {
			d.usage = append(d.usage, strings.TrimSpace(l))
		} else {
			break
		}
	}
	var text []string
	for ; i < len(lines) && !reSectionTitle.MatchString(lines[i]); i++ {
		text = append(text, lines[i])
	}
	d.text = strings.TrimSpace(strings.Join(text, "\n"))
	for i < len(lines) {
		title := strings.TrimSuffix(lines[i], ":")
		var body []string
		for i++; i < len(lines) && !reSectionTitle.MatchString(lines[i]); i++ {
			body = append(body, lines[i])
		}
		var items []item
		if title == "flags" {
			items = flagItems(body)
		} else {
			items = listItems(body)
		}
		switch title {
		case "flags":
			d.flags = items
		case "exit status":
			d.exits = items
		default:
			d.other = append(d.other, section{title, items})
		}
	}
	return d
}

// flagItems reads the flag package's defaults: "  --name arg" and, on the
// next line, a tab and what the flag does.
func flagItems(body []string) []item {
	var items []item
	for _, l := range body {
		switch {
		case strings.HasPrefix(l, "  -"):
			items = append(items, item{term: strings.TrimSpace(l)})
		case strings.TrimSpace(l) != "" && len(items) > 0:
			d := &items[len(items)-1].desc
			*d = strings.TrimSpace(*d + " " + strings.TrimSpace(l))
		}
	}
	return items
}

var reListItem = regexp.MustCompile(`^  (\S(?:.*?\S)?)(?: {2,}|\t)(\S.*)$`)

// listItems reads a two-column list: "  TERM  what it is", a line indented
// further continuing the one before. A line with a term alone is an item
// whose text follows on deeper lines; text that is not indented, after the
// list, is an item without a term.
func listItems(body []string) []item {
	var items []item
	for _, l := range body {
		switch {
		case strings.TrimSpace(l) == "":
		case strings.HasPrefix(l, "   ") && len(items) > 0:
			d := &items[len(items)-1].desc
			*d = strings.TrimSpace(*d + " " + strings.TrimSpace(l))
		case !strings.HasPrefix(l, " "):
			// Text after the list: an item without a term.
			if n := len(items); n > 0 && items[n-1].term == "" {
				items[n-1].desc += " " + l
			} else {
				items = append(items, item{desc: l})
			}
		default:
			if m := reListItem.FindStringSubmatch(l); m != nil {
				items = append(items, item{m[1], m[2]})
			} else {
				items = append(items, item{term: strings.TrimSpace(l)})
			}
		}
	}
	return items
}

// textRoff renders help paragraphs as roff: a paragraph indented by four
// spaces is an example, shown as it is; a paragraph whose first line ends
// in a colon and whose other lines are a two-column list becomes a tagged
// list under that line; any other paragraph is filled text.
func textRoff(text string) string {
	var b strings.Builder
	for p := range strings.SplitSeq(text, "\n\n") {
		p = strings.Trim(p, "\n")
		if p == "" {
			continue
		}
		lines := strings.Split(p, "\n")
		switch {
		case allIndented(lines, "    "):
			var code []string
			for _, l := range lines {
				code = append(code, strings.TrimPrefix(l, "    "))
			}
			b.WriteString(".PP\n.RS 4\n" + preformatted(strings.Join(code, "\n")) + ".RE\n")
		case len(lines) > 1 && strings.HasSuffix(lines[0], ":") && allIndented(lines[1:], "  "):
			b.WriteString(".PP\n" + escape(lines[0]) + "\n" + itemsRoff(listItems(lines[1:]), false))
		default:
			b.WriteString(".PP\n" + escape(strings.Join(lines, "\n")) + "\n")
		}
	}
	return b.String()
}

func allIndented(lines []string, indent string) bool {
	for _, l := range lines {
		if !strings.HasPrefix(l, indent) {
			return false
		}
	}
	return true
}

// itemsRoff renders items as a tagged list, each term in bold; with flags
// set, a term is a flag and its argument, the argument in italics. Lists
// other than flags are compact: no blank line between their items.
func itemsRoff(items []item, flags bool) string {
	var b strings.Builder
	if !flags {
		b.WriteString(".PD 0\n")
	}
	for _, it := range items {
		if it.term == "" {
			b.WriteString(".PP\n" + escape(it.desc) + "\n")
			continue
		}
		term := `\fB` + escape(it.term) + `\fR`
		if flags {
			name, arg, ok := strings.Cut(it.term, " ")
			term = `\fB` + strings.ReplaceAll(escape(name), "-", `\-`) + `\fR`
			if ok {
				term += ` \fI` + escape(arg) + `\fR`
			}
		}
		desc := it.desc
		if desc == "" {
			desc = " "
		}
		fmt.Fprintf(&b, ".TP\n%s\n%s\n", term, escape(desc))
	}
	if !flags {
		b.WriteString(".PD\n")
	}
	return b.String()
}

// synopsisRoff renders usage lines, each on a line of its own: the program
// and command in bold, the arguments as they are.
func synopsisRoff(usage []string) string {
	var b strings.Builder
	for i, u := range usage {
		if i > 0 {
			b.WriteString(".br\n")
		}
		words := strings.Fields(u)
		n := 0
		for n < len(words) && reWord.MatchString(words[n]) {
			n++
		}
		line := `\fB` + escape(strings.Join(words[:n], " ")) + `\fR`
		if n < len(words) {
			line += " " + escape(strings.Join(words[n:], " "))
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
