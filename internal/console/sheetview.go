package console

import (
	"fmt"

	"github.com/charmbracelet/lipgloss"

	"github.com/agent-sudo/agent-sudo/approval"
)

// details renders what the human is shown about s, wrapped to width, and
// reports whether any of it had to be escaped. It and firstScreen render
// the request's sheet (approval.NewSheet), which decides what is shown, in
// which order and with which words, for every surface: with full false its
// first screen, laid out so that at 80×24 everything needed to judge fits
// above the prompt; with full true every detail.
func details(st *styles, s *approval.Shown, width int, full bool) ([]string, bool) {
	return render(st, s, width, full, briefStart())
}

// styleOf is the style of a sheet's level; nil for plain.
func styleOf(st *styles, lv approval.Level) *lipgloss.Style {
	switch lv {
	case approval.LevelBold:
		return &st.bold
	case approval.LevelWarn:
		return &st.warn
	case approval.LevelDanger:
		return &st.danger
	case approval.LevelDim:
		return &st.dim
	}
	return nil
}

// render is details with the first screen's parts cut to lim (full
// false): the sheet's items, each escaped for the terminal; the parts the
// sheet lets a first screen cut (Item.Cut) are cut to lim, with a line
// that says so.
func render(st *styles, s *approval.Shown, width int, full bool, lim briefLimits) ([]string, bool) {
	l := newLines(st, width)
	escaped := false
	x := escapers{func(e bool) { escaped = escaped || e }}
	more := func(what string) {
		l.field("", fmt.Sprintf("%s: press %c for all details", approval.MoreText(what), detailsKey), &st.dim)
	}
	sh := approval.NewSheet(s, approval.Context{})
	items := sh.First
	if full {
		items = sh.Details
	}
	var reasonItems []approval.Item
	for _, it := range items {
		if it.Key == approval.KeyReason {
			reasonItems = append(reasonItems, it)
		}
	}
	// The reason is free text: each of its lines is shown on a line of its
	// own rather than as \n.
	reason := func() {
		left := lim.reason
		for _, it := range reasonItems {
			value := x.parts(it.Parts)
			if !full && left == 0 {
				more(it.Cut)
				break
			}
			if l.fieldMax(it.Label, value, nil, left, full) {
				more(it.Cut)
				break
			}
			left -= l.height(value)
		}
	}
	if !full && lim.reasonFirst {
		reason()
	}
	for i := 0; i < len(items); i++ {
		it := items[i]
		style := styleOf(st, it.Level)
		switch it.Key {
		case approval.KeyReason:
			if it.Label != "" && (full || !lim.reasonFirst) {
				reason()
			}
		case approval.KeyStdin:
			// Next to the command that reads it.
			j := i + 1
			for j < len(items) && (items[j].Key == approval.KeyStdinLine || items[j].Key == approval.KeyStdinMore) {
				j++
			}
			stdinDetails(l, st, s.Stdin, items[i:j], x, full, lim.stdin)
			i = j - 1
		case approval.KeyWhy:
			if l.fieldMax(it.Label, x.parts(it.Parts), style, lim.why, full) {
				more(it.Cut)
			}
		case approval.KeyChanged, approval.KeyRequester, approval.KeyContainer, approval.KeyAgent:
			n := map[string]int{approval.KeyChanged: briefChangedLines, approval.KeyRequester: lim.asked,
				approval.KeyContainer: briefContainerLines, approval.KeyAgent: briefClaimedLines}[it.Key]
			if l.fieldMax(it.Label, x.parts(it.Parts), style, n, full) {
				more(it.Cut)
			}
		case approval.KeyAskedBy:
			if full || len(it.Hops) == 0 {
				l.field(it.Label, x.parts(it.Parts), style)
			} else {
				askedByBrief(l, it, s.Peer.Ancestry, x, lim.asked, more)
			}
		case approval.KeyEnvNames:
			l.field(it.Label, fmt.Sprintf("%s (values: press %c)", x.parts(it.Parts), detailsKey), style)
		default:
			l.field(it.Label, x.parts(it.Parts), style)
		}
	}
	return l.out, escaped
}

// briefClaimedLines bounds the claims' line on the first screen.
const briefClaimedLines = 2

// stdinHashPrefix is how many hex digits of the SHA-256 the first screen
// shows when the whole hash does not fit on the stdin line.
const stdinHashPrefix = 16

// stdinDetails adds the sheet's stdin items: size and SHA-256 (what the
// decision binds), then the bounded preview the sheet gives (text line by
// line, or a hexdump), and how much was not shown. The details (full) show
// them all; the first screen the stdin line on one line (the hash
// shortened to its first stdinHashPrefix digits, or left to the details,
// when the whole does not fit) and n lines of content.
func stdinDetails(l *lines, st *styles, in *approval.StdinShown, items []approval.Item, x escapers, full bool, n int) {
	head := items[0]
	text := x.parts(head.Parts)
	if !full && len(head.Parts) == 4 {
		// The sheet's head is size, " · sha256 ", the hash, the rest.
		short := head.Parts[2]
		if r := []rune(short.Text); len(r) > stdinHashPrefix {
			short.Text = string(r[:stdinHashPrefix])
		}
		shortText := x.parts(head.Parts[:2]) + x.part(short) + "…" + x.part(head.Parts[3])
		if short.Text == head.Parts[2].Text {
			shortText = text
		}
		for _, t := range []string{text, shortText, x.part(head.Parts[0]) + x.part(head.Parts[3])} {
			text = t
			if l.height(t) <= 1 {
				break
			}
		}
	}
	l.field(head.Label, text, styleOf(st, head.Level))
	shown := 0
	for _, it := range items[1:] {
		if it.Key != approval.KeyStdinLine {
			continue
		}
		if !full && n <= 0 {
			break
		}
		value := x.parts(it.Parts)
		if l.fieldMax(it.Label, value, nil, n, full) {
			// A line cut on the first screen counts as not shown.
			break
		}
		// The first screen counts lines of the screen.
		if !full {
			n -= l.height(value)
		}
		shown += it.Bytes
	}
	if rest := in.Size - shown; rest > 0 {
		l.field("", fmt.Sprintf("%s: press %c to see all %d bytes", approval.StdinMore(rest), stdinKey, in.Size), &st.warn)
	}
}
