package console

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// Texts the human must not miss; tests look for them.
const (
	escapedNotice = "⚠ this request contains control, invisible or ambiguous-width characters, or non-ASCII in a program or an option; they are shown escaped (\\x1b, \\u202e, ...)"
	// muxWarning follows "⚠ WARNING: in tmux, " on one line of 80
	// columns.
	muxWarning = "an agent typing into it could approve its own requests"
	idleText   = "waiting for requests…"
	// The warnings' words are the sheet's (approval.NewSheet), which every
	// surface shares; the tests name them by these.
	writableWarning  = approval.WritableWarning
	writableMeans    = approval.WritableMeans
	cwdWritableMeans = approval.CwdWritableMeans
	sshWarning       = approval.SSHWarning
)

// View renders the screen: a fixed top (header, warnings, notices), a body
// that scrolls when it does not fit, and a fixed bottom (the prompt and the
// keys).
func (m *model) View() string {
	if m.quitting {
		return ""
	}
	top, body, bottom, avail := m.frame()
	lines := make([]string, 0, len(top)+avail+len(bottom)+1)
	lines = append(lines, top...)
	if len(body) <= avail {
		lines = append(lines, body...)
	} else {
		show := avail - 1 // the last line says where the view is
		scroll := min(max(m.scroll, 0), len(body)-show)
		lines = append(lines, body[scroll:scroll+show]...)
		where := fmt.Sprintf("-- lines %d-%d of %d - PgUp/PgDn scroll --", scroll+1, scroll+show, len(body))
		if termtext.Width(where) > m.width-1 {
			where = fmt.Sprintf("lines %d-%d of %d (PgUp/PgDn)", scroll+1, scroll+show, len(body))
		}
		if termtext.Width(where) > m.width-1 {
			where = fmt.Sprintf("%d-%d/%d", scroll+1, scroll+show, len(body))
		}
		lines = append(lines, fit([]string{m.st.dim.Render(where)}, m.width)...)
	}
	lines = append(lines, bottom...)
	return strings.Join(lines, "\n")
}

// frame lays the screen out and returns its parts and the lines the body
// gets. Notices are caused by agents, so when the body would get fewer than
// minBody lines they give up their room first: the header, the warnings and
// the request stay on screen.
func (m *model) frame() (top, body, bottom []string, avail int) {
	top, body, bottom = m.layout(-1)
	avail = m.bodyHeight(len(top), len(bottom))
	if need, have := min(len(body), minBody), m.height-len(top)-len(bottom); have < need && len(m.notices) > 0 {
		room := max(len(m.noticeLines(-1))-(need-have), 0)
		top, body, bottom = m.layout(room)
		avail = m.bodyHeight(len(top), len(bottom))
	}
	return top, body, bottom, avail
}

// bodyHeight is how many lines the body gets: what the top and bottom
// leave, but at least 3 (a terminal too small for that loses lines at the
// top, never the prompt).
func (m *model) bodyHeight(top, bottom int) int {
	return max(m.height-top-bottom, 3)
}

// layout renders the screen's three parts at the current width. Every
// line fits in the terminal's width less one column by termtext.Width, the
// console's one width function, so that neither lipgloss nor bubbletea nor
// the terminal ever wraps or cuts a line: the line count the body's
// scrolling is computed from is the terminal's. The components fit their
// bodies themselves (component.View): the request view and the stdin view
// once, when they are cached (r.cache, r.stdinCache), since a request of
// a megabyte has tens of thousands of lines and View runs on every tick.
func (m *model) layout(noticeRoom int) (top, body, bottom []string) {
	top, body, bottom = m.compose(noticeRoom)
	return fit(top, m.width), body, fit(bottom, m.width)
}

// fit returns lines with every line that is wider than width-1 columns
// (termtext.Width, ignoring the console's own styling) broken by termtext.Wrap,
// without its styling. The console's layout already wraps every value to
// fit, so this changes nothing unless a line escaped that: huh's forms on a
// very narrow terminal, or a bug. A line is never cut.
func fit(lines []string, width int) []string {
	limit := max(width-1, 1)
	for i, l := range lines {
		if termtext.Width(ansi.Strip(l)) <= limit {
			continue
		}
		out := slices.Clone(lines[:i])
		for _, l := range lines[i:] {
			if plain := ansi.Strip(l); termtext.Width(plain) > limit {
				out = append(out, termtext.Wrap(plain, limit)...)
			} else {
				out = append(out, l)
			}
		}
		return out
	}
	return lines
}

// compose renders the screen's three parts at the current width, with at
// most noticeRoom lines of notices (-1: all of them).
func (m *model) compose(noticeRoom int) (top, body, bottom []string) {
	top = m.aboveScreen(noticeRoom)
	t, b, btm := m.screen.View()
	return append(top, t...), b, btm
}

// aboveScreen renders what is above the active component: the header, the
// daemons' state, the multiplexer warning and at most noticeRoom lines of
// notices (-1: all of them).
func (m *model) aboveScreen(noticeRoom int) []string {
	var top []string
	top = append(top, m.header()...)
	top = append(top, m.daemonLines()...)
	if m.cfg.mux != "" {
		top = append(top, styled(m.st.danger, wrapText(fmt.Sprintf("⚠ WARNING: in %s, %s", m.cfg.mux, muxWarning), m.width))...)
	}
	return append(top, m.noticeLines(noticeRoom)...)
}

// minBody is how many body lines notices may never take away: enough for
// the start of a request's command line and its first stage.
const minBody = 6

// noticeLines renders the notices, newest last, in at most room lines (-1:
// no limit): while a request is shown, the newest maxBriefNotices, one
// line each, cut with "..." (the request's details list them whole,
// noticeSection); else whole. When they do not fit, the
// newest that fit are kept after one line that says how many were left
// out.
func (m *model) noticeLines(room int) []string {
	var all [][]string
	notices := m.notices
	brief := m.current() != nil
	if brief {
		notices = notices[max(len(notices)-maxBriefNotices, 0):]
	}
	for _, n := range notices {
		s := m.st.notice
		prefix := "• "
		if n.isErr {
			s, prefix = m.st.warn, "✗ "
		}
		text := wrapText(prefix+n.text, m.width)
		if brief {
			text = []string{oneLine(prefix+n.text, m.width)}
		}
		all = append(all, styled(s, text))
	}
	flat := slices.Concat(all...)
	if room < 0 || len(flat) <= room {
		return flat
	}
	if room < 1 {
		return nil
	}
	var out []string
	kept := 0
	for i := len(all) - 1; i >= 0 && len(out)+len(all[i]) <= room-1; i-- {
		out = slices.Concat(all[i], out)
		kept++
	}
	hidden := len(all) - kept
	note := fmt.Sprintf("(%d %s not shown: the screen is too small)", hidden, termtext.Plural(hidden, "notice"))
	return append(styled(m.st.dim, wrapText(note, m.width))[:1], out...)
}

// oneLine returns s on one line of the terminal, cut with "..." when it
// is longer. Only the console's own texts are cut (notices, with escaped
// values in them), never a request's field.
func oneLine(s string, width int) string {
	lines := wrapText(s, width)
	if len(lines) <= 1 {
		return s
	}
	return termtext.Wrap(s, max(width-4, 1))[0] + "..."
}

func (m *model) header() []string {
	n := len(m.queue)
	waiting := "nothing waiting"
	if n > 0 {
		waiting = fmt.Sprintf("%d waiting", n)
	}
	h := fmt.Sprintf("agent-sudo approve · %s · %d %s", waiting, len(m.grants), termtext.Plural(len(m.grants), "session grant"))
	if len(m.daemons) != 1 {
		h += fmt.Sprintf(" · %d daemons", len(m.daemons))
		return styled(m.st.header, wrapText(h, m.width))
	}
	// The daemon's version and host, as much of them as fits on the
	// line: the header takes one line of the first screen's budget, and a
	// long version (a pseudo-version of go install) would take a second.
	// The host is on the request's FROM line too.
	d := m.daemons[0]
	if d.version == "" {
		return styled(m.st.header, wrapText(h, m.width))
	}
	on := ""
	if d.host != "" {
		on = " on " + termtext.Esc(d.host)
	}
	for _, tail := range []string{" · agent-sudod " + termtext.Esc(d.version) + on, " · agent-sudod" + on} {
		if lines := wrapText(h+tail, m.width); len(lines) == 1 {
			return styled(m.st.header, lines)
		}
	}
	return styled(m.st.header, wrapText(h, m.width))
}

func (m *model) separator() string {
	// ASCII: box drawing characters are East Asian Ambiguous, 2 columns
	// wide on some terminals.
	return m.st.dim.Render(strings.Repeat("-", max(m.width-1, 1)))
}

// separatorWith is the separator with text (the console's own) at its
// start, highlighted; the separator alone when text is empty.
func (m *model) separatorWith(text string) string {
	rest := m.width - 1 - termtext.Width(text) - 1
	switch {
	case text == "":
		return m.separator()
	case rest < 3:
		return m.st.warn.Render(text)
	}
	return m.st.warn.Render(text) + " " + m.st.dim.Render(strings.Repeat("-", rest))
}

func (m *model) idleView() (body, bottom []string) {
	body = append(body, "", m.st.bold.Render(idleText), "")
	if len(m.grants) > 0 {
		body = append(body, wrapText(fmt.Sprintf("%d %s in force; press g to list or revoke them.", len(m.grants), termtext.Plural(len(m.grants), "session grant")), m.width)...)
	}
	bottom = append(bottom, m.separator())
	bottom = append(bottom, m.keyHelp([][2]string{{"g", "session grants"}, {"w", "running commands"}, {"q", m.quitText()}})...)
	return body, bottom
}

// noticeSection lists the notices whole, newest last, for the end of a
// request's details.
func (m *model) noticeSection() []string {
	l := newLines(m.st, m.width)
	for i, n := range m.notices {
		label := ""
		if i == 0 {
			label = "notices"
		}
		prefix := "• "
		if n.isErr {
			prefix = "✗ "
		}
		l.field(label, prefix+n.text, nil)
	}
	return fit(l.out, m.width)
}

// requestView renders request r, which is on screen: its title and
// warnings (top) and its first screen or, when full, its details (body,
// fitted and cached on r for the width). The screen showing it adds the
// prompt.
func (m *model) requestView(r *request, full bool) (top, body []string) {
	st := m.st
	title := "REQUEST WAITING FOR YOUR DECISION · " + m.countdown(r.shown.Deadline)
	if more := len(m.queue) - 1; more > 0 {
		title += fmt.Sprintf(" · %d more after it", more)
	}
	if full {
		title += " · ALL DETAILS"
	}
	top = append(top, styled(st.bold, wrapText(title, m.width))...)
	if len(m.daemons) > 1 || m.daemons[r.link].host != "" {
		// The daemon's own name for its host, from its greeting, and
		// the human's name for the connection: never the agent's claim.
		top = append(top, styled(st.bold, wrapText("FROM agent-sudod on "+m.label(r.link), m.width))...)
	}
	if r.shown.Approvals > 1 {
		top = append(top, styled(st.bold, wrapText(approvalsLine(r), m.width))...)
	}
	if r.escaped {
		top = append(top, styled(st.danger, wrapText(escapedNotice, m.width))...)
	}
	// The first screen is laid out for the lines the decision prompt
	// leaves it (firstScreen); 0 when the terminal's size is not known yet.
	room := 0
	if m.height > 0 {
		room = max(m.height-len(fit(m.aboveScreen(-1), m.width))-len(top)-briefBottomLines, 1)
	}
	if r.cacheWidth != m.width || r.cacheRoom != room || r.cache == nil {
		r.cache, r.fullCache = nil, nil
		r.cacheWidth, r.cacheRoom = m.width, room
	}
	c := &r.cache
	if full {
		c = &r.fullCache
	}
	if *c == nil {
		switch {
		case r.complete() && full:
			*c, _ = details(st, r.shown, m.width, true)
		case r.complete():
			*c, _ = firstScreen(st, r.shown, m.width, room)
		default:
			*c = summaryDetails(st, r, m.width)
		}
		*c = fit(*c, m.width)
	}
	if full {
		return top, append(slices.Clip(*c), m.noticeSection()...)
	}
	return top, *c
}

// approvalsLine says how many of the people a request needs have allowed
// it, and who: the sheet's words, escaped.
func approvalsLine(r *request) string {
	a := approval.NewSheet(r.shown, approval.Context{ApprovedBy: r.approvedBy}).Approvals
	if a == nil {
		return ""
	}
	return escapers{func(bool) {}}.parts(a.Parts)
}

// roundUp rounds d up to a tenth of a second, so the hint never says 0.0s
// while keys are still dropped.
func roundUp(d time.Duration) time.Duration {
	const tenth = 100 * time.Millisecond
	return (d + tenth - 1) / tenth * tenth
}

func (m *model) countdown(deadline time.Time) string {
	if deadline.IsZero() {
		return "no deadline given"
	}
	left := deadline.Sub(m.cfg.now())
	if left <= 0 {
		return "timing out now"
	}
	return "times out in " + left.Round(time.Second).String()
}

// withStdinKey adds the stdin view's key to keys when r offers it, in
// few words: the decision prompt's keys then still fit one line of 80
// columns.
func (m *model) withStdinKey(r *request, keys [][2]string) [][2]string {
	if !r.hasStdin() {
		return keys
	}
	return append(keys[:len(keys)-1:len(keys)-1], [2]string{string(stdinKey), "stdin"}, keys[len(keys)-1])
}

func (m *model) keyHelp(keys [][2]string) []string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = strings.TrimSpace(k[0] + " " + k[1])
	}
	return styled(m.st.dim, wrapText("keys: "+strings.Join(parts, " · "), m.width))
}

// summaryDetails renders a request the daemon announced as a summary,
// while its full text loads: what the summary says, and that the command is
// not shown yet.
func summaryDetails(st *styles, r *request, width int) []string {
	l := newLines(st, width)
	s, sum := r.shown, r.summary
	state := "loading it from the daemon…"
	if r.detailErr != "" {
		state = "it could not be loaded: " + termtext.Esc(r.detailErr)
	}
	l.field("command", fmt.Sprintf("NOT SHOWN YET: the request is %d bytes (%d %s, %d %s, %d %s); %s",
		sum.Bytes, sum.Stages, termtext.Plural(sum.Stages, "stage"), sum.Args, termtext.Plural(sum.Args, "argument"),
		sum.EnvVars, termtext.Plural(sum.EnvVars, "environment variable"), state), &st.danger)
	if s == nil {
		return l.out
	}
	if s.Privileged {
		l.field("runs", "as root", &st.danger)
	} else {
		l.field("runs", "as "+termtext.Esc(s.RunAs)+" (unprivileged)", nil)
	}
	l.field("cwd", termtext.EscStrict(s.Cwd), nil)
	l.field("reason", termtext.Esc(s.Reason), nil)
	// Who asked and what the agent claims, as the sheet says them.
	x := escapers{func(bool) {}}
	details := approval.NewSheet(s, approval.Context{}).Details
	for _, keys := range [][]string{{approval.KeyChanged, approval.KeyRequester, approval.KeyAskedBy, approval.KeyContainer}, {approval.KeySession, approval.KeyHost}} {
		for _, it := range details {
			if slices.Contains(keys, it.Key) {
				l.field(it.Label, x.parts(it.Parts), styleOf(st, it.Level))
			}
		}
	}
	l.field("id", termtext.Esc(r.id), nil)
	return l.out
}

// Bounds of the first screen (details with full false): the why line and
// the reason get at most this many lines each, and the stdin preview
// briefStdinLines; the rest is one key (detailsKey) away. When even that
// does not fit the lines the screen leaves, firstScreen shrinks them
// further (briefLimits.shrunk).
const (
	briefWhyLines    = 3
	briefReasonLines = 3
	briefStdinLines  = 3
	// briefBottomLines is what the decision prompt takes under the first
	// screen: the separator, the choices and the keys, one line each at
	// 80 columns.
	briefBottomLines = 3
)

// detailsKey switches between a request's first screen and all its
// details.
const detailsKey = 'v'

// briefLimits bounds, in lines, the parts of the first screen that can be
// cut: each is cut with a line that says so. reasonFirst puts the reason
// before the command.
type briefLimits struct {
	stdin, why, asked, reason int
	reasonFirst               bool
}

// briefStart returns the limits of the first screen as it is when it fits.
func briefStart() briefLimits {
	return briefLimits{stdin: briefStdinLines, why: briefWhyLines, asked: briefAskedLines, reason: briefReasonLines}
}

// shrunk returns the limits after step (0, 1, ...) of giving up lines, in
// the order the first screen gives them up when it does not fit: why's last
// two, who asked's third, the reason's third, the stdin preview's third,
// the reason's second, the preview's second. Each part keeps at least its
// first line. ok is false when there is no such step.
func (b briefLimits) shrunk(step int) (_ briefLimits, ok bool) {
	switch step {
	case 0:
		b.why = 1
	case 1:
		b.asked = 2
	case 2:
		b.reason = 2
	case 3:
		b.stdin = 2
	case 4:
		b.reason = 1
	case 5:
		b.stdin = 1
	default:
		return b, false
	}
	return b, true
}

// firstScreen renders the first screen of s (details with full false) in
// at most room lines when it can (0: any number): the parts that can be
// cut are cut step by step (briefLimits.shrunk). When that is not enough
// (a long command, many stages), the reason goes first, above the
// command, so that a long command never pushes it off the first screen;
// the command is never cut, and scrolls. The details show everything.
func firstScreen(st *styles, s *approval.Shown, width, room int) ([]string, bool) {
	lim := briefStart()
	out, escaped := render(st, s, width, false, lim)
	for step := 0; room > 0 && len(out) > room; step++ {
		next, ok := lim.shrunk(step)
		if !ok {
			break
		}
		// A step that saves nothing (the line saying what was cut
		// takes the line given up) is not taken.
		if o, e := render(st, s, width, false, next); len(o) < len(out) {
			lim, out, escaped = next, o, e
		}
	}
	if room > 0 && len(out) > room {
		lim.reasonFirst = true
		out, escaped = render(st, s, width, false, lim)
	}
	return out, escaped
}

// lines lays out labelled values: the label in a column of its own, the
// value wrapped beside it, and every continuation line marked with ↳ in the
// label column, where the request cannot write. On a narrow terminal the
// label goes on a line of its own. Every line is at most width-1 columns by
// termtext.Width (the marker and the labels are one column per character).
type lines struct {
	st     *styles
	width  int
	labelW int
	out    []string
}

const labelWidth = 11

func newLines(st *styles, width int) *lines {
	l := &lines{st: st, width: width, labelW: labelWidth}
	if width > 0 && width < 40 {
		l.labelW = 0
	}
	return l
}

// field adds one value, already escaped (or our own text), under label.
func (l *lines) field(label, value string, style *lipgloss.Style) {
	l.fieldMax(label, value, style, 0, true)
}

// valueWidth is the width values are wrapped to, or 0 (one line) when the
// width is not known.
func (l *lines) valueWidth() int {
	if l.width <= 0 {
		return 0
	}
	indent := l.labelW
	if indent == 0 {
		indent = 2
	}
	return max(l.width-indent-1, 1)
}

// height is how many lines field would take for value (its label line on
// a narrow terminal aside).
func (l *lines) height(value string) int {
	return len(termtext.Wrap(value, l.valueWidth()))
}

// fieldMax is field that, unless all is set, adds at most n lines of
// value; it reports whether lines were left out.
func (l *lines) fieldMax(label, value string, style *lipgloss.Style, n int, all bool) bool {
	parts := termtext.Wrap(value, l.valueWidth())
	cut := !all && len(parts) > n
	if cut {
		parts = parts[:n]
		if n == 0 {
			return true
		}
	}
	indent := l.labelW
	if indent == 0 {
		if label != "" {
			l.out = append(l.out, l.st.label.Render(label))
		}
		indent = 2
	}
	for i, part := range parts {
		var prefix string
		switch {
		case i > 0:
			prefix = strings.Repeat(" ", indent-2) + l.st.cont.Render(contMark)
		case l.labelW > 0:
			prefix = l.st.label.Render(fmt.Sprintf("%-*s", l.labelW, label))
		default:
			prefix = strings.Repeat(" ", indent)
		}
		if style != nil {
			part = style.Render(part)
		}
		l.out = append(l.out, prefix+part)
	}
	return cut
}

// contMark marks a continuation line in the label column: U+21B3, one
// column in every width table (unlike ↪, an emoji).
const contMark = "↳ "

// wrapText wraps the console's own text (which may include escaped
// strings) to the terminal, leaving the last column free.
func wrapText(s string, width int) []string {
	return termtext.Wrap(s, max(width-1, 1))
}

func styled(s lipgloss.Style, lines []string) []string {
	for i, l := range lines {
		lines[i] = s.Render(l)
	}
	return lines
}

// clampScroll keeps the body's scroll position within the body.
func (m *model) clampScroll() {
	_, body, _, avail := m.frame()
	maxScroll := 0
	if len(body) > avail {
		maxScroll = len(body) - (avail - 1)
	}
	m.scroll = min(max(m.scroll, 0), maxScroll)
}

// scrollBy scrolls the body by a page (±1) or to an end (±2).
func (m *model) scrollBy(n int) {
	_, _, _, avail := m.frame()
	page := max(avail-2, 1)
	switch n {
	case -2:
		m.scroll = 0
	case 2:
		m.scroll = 1 << 30
	default:
		m.scroll += n * page
	}
	m.clampScroll()
}
