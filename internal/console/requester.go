package console

import (
	"fmt"
	"path"
	"strings"

	"github.com/agent-sudo/agent-sudo/internal/approval"
	"github.com/agent-sudo/agent-sudo/internal/procinfo"
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
	es := func(s string) string {
		out, x := termtext.EscapeStrict(s)
		note(x)
		return out
	}
	ea := func(s string) string {
		out, x := termtext.EscapeASCII(s)
		note(x)
		return out
	}
	p := s.Peer
	peer := fmt.Sprintf("uid %d", p.UID)
	if p.User != "" {
		peer += " (" + es(p.User) + ")"
	}
	if c := p.Container; c != nil && c.InnerUID != nil {
		peer += fmt.Sprintf(" = uid %d inside its container", *c.InnerUID)
	}
	peer += fmt.Sprintf(" · pid %d · exe %s · kernel-verified", p.PID, ea(p.Exe))
	l.field("requester", peer, nil)
	if a := p.Ancestry; a != nil {
		l.field("asked by", ancestryText(a, es, ea), nil)
	}
	if c := p.Container; c != nil {
		l.field("container", containerText(c, es), &l.st.warn)
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

// ancestryText renders an ancestry on one logical line, oldest process
// first: `bash (pid 750, login shell) → claude (pid 812, /usr/bin/node) →
// agent-sudo mcp (pid 901)`, with a marker first when the walk stopped
// before a session leader, a login shell or init.
func ancestryText(a *procinfo.Ancestry, es, ea func(string) string) string {
	parts := make([]string, 0, len(a.Hops)+1)
	switch a.End {
	case procinfo.EndSessionLeader, procinfo.EndLoginShell, procinfo.EndInit:
	default:
		parts = append(parts, "… ("+es(a.End)+")")
	}
	for i := len(a.Hops) - 1; i >= 0; i-- {
		parts = append(parts, hopText(a.Hops[i], i == len(a.Hops)-1 && a.End == procinfo.EndLoginShell, ea))
	}
	if len(a.Hops) == 0 {
		parts = append(parts, "(no process could be read)")
	}
	return strings.Join(parts, " → ")
}

// hopText renders one process: its name (argv[0]'s base name, and the
// first argument when it reads as a subcommand), pid, and the file it
// executes unless that is a system program of the same name. Names are the
// process's own, the exe is the kernel's; ea escapes both (programs, so
// every non-ASCII character).
func hopText(h procinfo.Hop, login bool, ea func(string) string) string {
	name := h.Name()
	words := name
	if len(h.Argv) > 1 && isSubcommand(h.Argv[1]) {
		words += " " + h.Argv[1]
	}
	b := ea(words) + fmt.Sprintf(" (pid %d", h.PID)
	if dir, base := path.Split(h.Exe); base != strings.TrimPrefix(name, "-") || !isSystemDir(path.Clean(dir)) {
		b += ", " + ea(h.Exe)
	}
	if login {
		b += ", login shell"
	}
	return b + ")"
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
func containerText(c *procinfo.Container, es func(string) string) string {
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
