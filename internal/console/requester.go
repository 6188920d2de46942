package console

import (
	"fmt"
	"path"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// systemBinDirs are the directories whose programs the ancestry line names
// without their path when the name matches (see hopText).
var systemBinDirs = []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"}

// requesterLines adds who asked for s, as the kernel vouches for it
// (requester: uid, pid, exe; asked by: the process ancestry; container:
// namespaces and uid inside); claimedLines adds what the agent merely
// claims. note is told whether anything had to be escaped. Program paths
// and names are escaped with EscapeASCII, the rest strictly. It is the one
// place that renders the requester, so a layout only chooses where its
// lines go.
func requesterLines(l *lines, s *approval.Shown, note func(bool)) {
	x := escapers{note}
	es, ea := x.strict, x.ascii
	p := s.Peer
	if changed := changedOf(p); changed != "" {
		l.field("warning", changedText(changed, es), &l.st.warn)
		l.field("requester", uidText(p, es)+fmt.Sprintf(" · pid %d · exe %s when it connected · not verified since", p.PID, ea(p.Exe)), nil)
	} else {
		l.field("requester", uidText(p, es)+fmt.Sprintf(" · pid %d · exe %s · kernel-verified", p.PID, ea(p.Exe)), nil)
	}
	if a := p.Ancestry; a != nil {
		l.field("asked by", ancestryText(a, es, ea), nil)
	}
	if c := p.Container; c != nil {
		l.field("container", containerText(c, es), &l.st.warn)
	}
}

// changedOf is what changed of the requester between its connection and
// the walk of its ancestry (approval.Ancestry.Changed), "" when nothing did
// or no ancestry was read.
func changedOf(p approval.PeerInfo) string {
	if p.Ancestry == nil {
		return ""
	}
	return p.Ancestry.Changed
}

// changedText is the warning shown when the requester is not the process
// that connected: what changed, and that the ancestry is not who asked.
func changedText(changed string, es func(string) string) string {
	return es(changed) + "; the processes shown were read later and are not verified to be who asked"
}

// uidText is the requester's uid as the daemon's kernel maps it, its user
// name, and its uid inside its container when it has one.
func uidText(p approval.PeerInfo, es func(string) string) string {
	t := fmt.Sprintf("uid %d", p.UID)
	if p.User != "" {
		t += " (" + es(p.User) + ")"
	}
	if c := p.Container; c != nil && c.InnerUID != nil {
		t += fmt.Sprintf(" = uid %d inside its container", *c.InnerUID)
	}
	if c := p.Container; c != nil && c.Controller != nil {
		t += fmt.Sprintf(", counted as uid %d (its user namespace's owner)", *c.Controller)
	}
	return t
}

// escapers are the termtext escapers, each telling note whether it had to
// escape (the screen then says so).
type escapers struct{ note func(bool) }

func (x escapers) use(out string, escaped bool) string {
	x.note(escaped)
	return out
}

// free escapes free text (termtext.Escape).
func (x escapers) free(s string) string { return x.use(termtext.Escape(s)) }

// strict escapes what must be shown exactly (termtext.EscapeStrict).
func (x escapers) strict(s string) string { return x.use(termtext.EscapeStrict(s)) }

// ascii escapes every non-ASCII character too (termtext.EscapeASCII).
func (x escapers) ascii(s string) string { return x.use(termtext.EscapeASCII(s)) }

// quote shell-quotes an argument (termtext.Quote).
func (x escapers) quote(s string) string { return x.use(termtext.Quote(s)) }

// program quotes a program path, every non-ASCII character escaped
// (termtext.QuoteProgram).
func (x escapers) program(s string) string { return x.use(termtext.QuoteProgram(s)) }

// Bounds of who asked on the first screen: the ancestry (with the
// requester's uid) gets at most briefAskedLines lines; the container line
// briefContainerLines.
const (
	briefAskedLines     = 3
	briefContainerLines = 1
	// briefChangedLines bounds the warning that the requester exec'd or
	// exited after connecting (approval.Ancestry.Changed).
	briefChangedLines = 2
)

// requesterBrief adds who asked for s on the first screen, in at most
// briefAskedLines+briefContainerLines lines: the requester's uid, marked as
// the kernel's, then its ancestry oldest first, ending with the requester
// itself; when that does not fit, long executable paths are shortened,
// then the oldest hops elided, and more is told only if even that does not
// fit. Without an ancestry it is the requester line of requesterLines.
// A requester that exec'd or exited after connecting is warned about first,
// and neither its ancestry nor its exe is called kernel-verified.
func requesterBrief(l *lines, s *approval.Shown, n int, note func(bool), more func(string)) {
	x := escapers{note}
	es, ea := x.strict, x.ascii
	p := s.Peer
	who := uidText(p, es)
	a := p.Ancestry
	changed := changedOf(p)
	if changed != "" {
		// Before who asked: it says the rest is not the kernel's word.
		if l.fieldMax("warning", changedText(changed, es), &l.st.warn, briefChangedLines, false) {
			more("of who asked")
		}
	}
	switch {
	case changed != "" && (a == nil || len(a.Hops) == 0):
		if l.fieldMax("requester", who+fmt.Sprintf(" · pid %d · exe %s when it connected", p.PID, ea(p.Exe)), nil, briefAskedLines, false) {
			more("of who asked")
		}
	case a == nil || len(a.Hops) == 0:
		if l.fieldMax("requester", who+fmt.Sprintf(" · pid %d · exe %s · kernel-verified", p.PID, ea(p.Exe)), nil, briefAskedLines, false) {
			more("of who asked")
		}
	default:
		if changed != "" {
			who += ", read later, NOT verified: "
		} else {
			who += ", kernel-verified: "
		}
		fits := func(text string) bool { return len(termtext.Wrap(text, l.valueWidth())) <= n }
		text := who + ancestryText(a, es, ea)
		parts := ancestryParts(a, es, ea, true)
		if !fits(text) {
			text = who + strings.Join(parts, " → ")
		}
		// Elide until it fits. The requester and the agent behind it (the
		// nearest ancestor that is neither our client nor a shell) matter
		// most and always stay (elideAncestry).
		if !fits(text) {
			text = who + strings.Join(elideAncestry(a, parts, fits, who), " → ")
		}
		if l.fieldMax("asked by", text, nil, n, false) {
			more("of who asked")
		}
	}
	if c := p.Container; c != nil {
		if l.fieldMax("container", containerText(c, es), &l.st.warn, briefContainerLines, false) {
			more("of the container")
		}
	}
}

// claimedLines adds the fields the agent merely claims, marked as such:
// session, host (warned when it is not the daemon's own host name) and the
// agent's clock. e escapes free text and notes the escape.
func claimedLines(l *lines, s *approval.Shown, e func(string) string) {
	l.field("session", e(s.Session)+" (claimed by the agent)", nil)
	switch {
	case s.DaemonHost == "":
		l.field("host", e(s.Host)+" (claimed by the agent)", nil)
	case s.Host == s.DaemonHost:
		l.field("host", e(s.Host)+" (claimed by the agent; matches this daemon's host)", nil)
	default:
		l.field("host", fmt.Sprintf("%s (claimed by the agent) ≠ this daemon's host %s", e(s.Host), e(s.DaemonHost)), &l.st.warn)
	}
}

// briefClaimedLines bounds the claims' line on the first screen.
const briefClaimedLines = 2

// claimedBrief adds the agent's claims on the first screen, on one line
// when they are short: session and host, marked as claims; a host that is
// not the daemon's own is warned about and followed by the daemon's
// (`host prod-db-1 (≠ vm)`; the header's FROM line and the details say it
// in words).
func claimedBrief(l *lines, s *approval.Shown, e func(string) string, more func(string)) {
	text := "session " + e(s.Session) + " · host " + e(s.Host)
	var style *lipgloss.Style
	if s.DaemonHost != "" && s.Host != s.DaemonHost {
		text += " (≠ " + e(s.DaemonHost) + ")"
		style = &l.st.warn
	}
	if l.fieldMax("agent", text+" · claimed by the agent", style, briefClaimedLines, false) {
		more("of the agent's claims")
	}
}

// ancestryText renders an ancestry on one logical line, oldest process
// first: `bash (pid 750, login shell) → claude (pid 812, /usr/bin/node) →
// agent-sudo mcp (pid 901)`, with a marker first when the walk stopped
// before a session leader, a login shell or init.
func ancestryText(a *approval.Ancestry, es, ea func(string) string) string {
	return strings.Join(ancestryParts(a, es, ea, false), " → ")
}

// ancestryParts is ancestryText before the join: the marker of a walk cut
// short (if any), then one part per hop, oldest first. With short, long
// executable paths are shortened (see shortPath).
func ancestryParts(a *approval.Ancestry, es, ea func(string) string, short bool) []string {
	parts := make([]string, 0, len(a.Hops)+1)
	switch a.End {
	case approval.EndSessionLeader, approval.EndLoginShell, approval.EndInit:
	default:
		parts = append(parts, "… ("+es(a.End)+")")
	}
	for i := len(a.Hops) - 1; i >= 0; i-- {
		parts = append(parts, hopText(a.Hops[i], i == len(a.Hops)-1 && a.End == approval.EndLoginShell, ea, short))
	}
	if len(a.Hops) == 0 {
		parts = append(parts, "(no process could be read)")
	}
	return parts
}

// hopText renders one process: its name (argv[0]'s base name, and the
// first argument when it reads as a subcommand), pid, and the file it
// executes unless that is a system program of the same name. Names are the
// process's own, the exe is the kernel's; ea escapes both (programs, so
// every non-ASCII character).
func hopText(h approval.Hop, login bool, ea func(string) string, short bool) string {
	name := h.Name()
	words := name
	if len(h.Argv) > 1 && isSubcommand(h.Argv[1]) {
		words += " " + h.Argv[1]
	}
	b := ea(words) + fmt.Sprintf(" (pid %d", h.PID)
	if dir, base := path.Split(h.Exe); base != strings.TrimPrefix(name, "-") || !isSystemDir(path.Clean(dir)) {
		exe := ea(h.Exe)
		if short {
			exe = shortPath(exe)
		}
		b += ", " + exe
	}
	if login {
		b += ", login shell"
	}
	return b + ")"
}

// shortPath shortens an (escaped) path of more than four components to its
// first two and its base name, "/usr/lib/…/claude", as the first screen
// shows an executable; the details show it whole.
func shortPath(p string) string {
	parts := strings.Split(p, "/")
	if len(parts) <= 5 || parts[0] != "" {
		return p
	}
	return strings.Join(parts[:3], "/") + "/…/" + parts[len(parts)-1]
}

// isSubcommand reports whether arg reads as a subcommand: a short word of
// lower-case ASCII letters and dashes, not an option.
func isSubcommand(arg string) bool {
	if arg == "" || len(arg) > 20 || arg[0] == '-' {
		return false
	}
	for i := 0; i < len(arg); i++ {
		if c := arg[i]; !('a' <= c && c <= 'z' || c == '-') {
			return false
		}
	}
	return true
}

func isSystemDir(dir string) bool {
	for _, d := range systemBinDirs {
		if dir == d {
			return true
		}
	}
	return false
}

// containerText renders a container identity: the namespaces that differ
// from the daemon's, the requester's pid inside, its init and cgroup.
func containerText(c *approval.Container, es func(string) string) string {
	var b strings.Builder
	b.WriteString("other namespaces than the daemon's:")
	for _, k := range c.SortedNS() {
		fmt.Fprintf(&b, " %s:[%d]", k, c.NS[k])
	}
	if c.InnerPID != 0 {
		fmt.Fprintf(&b, " · pid %d inside", c.InnerPID)
	}
	if c.InitPID != 0 {
		fmt.Fprintf(&b, " · its init is pid %d", c.InitPID)
	}
	if c.Cgroup != "" {
		b.WriteString(" · cgroup " + es(c.Cgroup))
	}
	return b.String()
}

// elideAncestry shortens parts, the ancestry oldest first (ancestryParts,
// the requester last), until who followed by them fits. The requester and
// the agent behind it, the nearest ancestor that is neither agent-sudo nor a
// shell, always stay: first the oldest hops before the agent are elided, one
// at a time; if that is not enough, the shells between the agent and the
// requester become one "… N shells" too. Without such an agent only the
// oldest hops are elided, down to the requester.
func elideAncestry(a *approval.Ancestry, parts []string, fits func(string) bool, who string) []string {
	join := func(p []string) bool { return fits(who + strings.Join(p, " → ")) }
	older := func(n int) []string {
		if n == 0 {
			return nil
		}
		return []string{fmt.Sprintf("… %d older (%c)", n, detailsKey)}
	}
	last := len(parts) - 1
	agent := -1
	for i := 1; i < len(a.Hops); i++ {
		if !isShellOrClient(a.Hops[i]) {
			agent = last - i // hop 0, the requester, is parts[last]
			break
		}
	}
	keep := last // the first part that must stay
	if agent >= 0 {
		keep = agent
	}
	for cut := 1; cut <= keep; cut++ {
		if p := append(older(cut), parts[cut:]...); join(p) {
			return p
		}
	}
	if between := last - agent - 1; agent >= 0 && between > 0 {
		tail := []string{parts[agent], fmt.Sprintf("… %d %s (%c)", between, plural(between, "shell"), detailsKey), parts[last]}
		for cut := 0; cut <= agent; cut++ {
			if p := append(append(older(cut), parts[cut:agent]...), tail...); join(p) || cut == agent {
				return p
			}
		}
	}
	return append(older(keep), parts[keep:]...)
}

// isShellOrClient reports whether h runs a shell or agent-sudo itself (run,
// the sudo shim, mcp): the hops between an agent and its request. Only a
// program in a system directory counts: anyone can name a file "bash", and
// the agent must not hide behind that name on the first screen.
func isShellOrClient(h approval.Hop) bool {
	dir, base := path.Split(h.Exe)
	if !isSystemDir(path.Clean(dir)) {
		return false
	}
	switch base {
	case "sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "tcsh", "csh", "busybox", "agent-sudo":
		return true
	}
	return false
}

// plural is word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
