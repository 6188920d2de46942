package console

import (
	"fmt"
	"path"
	"strings"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// escapers are the termtext escapers, each telling note whether it had to
// escape (the screen then says so).
type escapers struct{ note func(bool) }

func (x escapers) use(out string, escaped bool) string {
	x.note(escaped)
	return out
}

// part escapes one part of a sheet's value for the terminal, by its kind
// (approval.TermPart).
func (x escapers) part(p approval.Part) string { return x.use(approval.TermPart(p)) }

// parts is a sheet's value, every part escaped for the terminal.
func (x escapers) parts(ps []approval.Part) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(x.part(p))
	}
	return b.String()
}

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

// askedByBrief adds the first screen's asked-by item it (the sheet's: the
// requester's uid, marked as the kernel's, then its ancestry oldest first,
// ending with the requester itself) in at most n lines: when that does not
// fit, long executable paths are shortened, then the oldest hops elided,
// and more is told only if even that does not fit.
func askedByBrief(l *lines, it approval.Item, a *approval.Ancestry, x escapers, n int, more func(string)) {
	who := x.parts(it.Hops[0])
	fits := func(text string) bool { return len(termtext.Wrap(text, l.valueWidth())) <= n }
	hops := func(h [][]approval.Part) []string {
		out := make([]string, len(h))
		for i, p := range h {
			out[i] = x.parts(p)
		}
		return out
	}
	text := who + strings.Join(hops(it.Hops[1:]), " → ")
	parts := hops(it.ShortHops[1:])
	if !fits(text) {
		text = who + strings.Join(parts, " → ")
	}
	// Elide until it fits. The requester and the agent behind it (the
	// nearest ancestor that is neither our client nor a shell) matter
	// most and always stay (elideAncestry).
	if !fits(text) {
		text = who + strings.Join(elideAncestry(a, parts, fits, who), " → ")
	}
	if l.fieldMax(it.Label, text, nil, n, false) {
		more(it.Cut)
	}
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
	if !approval.IsSystemDir(path.Clean(dir)) {
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
