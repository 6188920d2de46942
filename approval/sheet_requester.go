package approval

import (
	"fmt"
	"path"
	"strings"
)

// changedOf is what changed of the requester between its connection and
// the walk of its ancestry (Ancestry.Changed), "" when nothing did or no
// ancestry was read.
func changedOf(p PeerInfo) string {
	if p.Ancestry == nil {
		return ""
	}
	return p.Ancestry.Changed
}

// changedItem warns that the requester is not the process that connected:
// what changed, and that the ancestry is not who asked.
func changedItem(changed string) Item {
	it := item(KeyChanged, "warning", LevelWarn, exact(changed), w(ChangedMeans))
	it.Cut = "of who asked"
	return it
}

// uidParts is the requester's uid as the daemon's kernel maps it, its user
// name, and its uid inside its container when it has one.
func uidParts(p PeerInfo) []Part {
	parts := []Part{w(fmt.Sprintf("uid %d", p.UID))}
	if p.User != "" {
		parts = append(parts, w(" ("), exact(p.User), w(")"))
	}
	if c := p.Container; c != nil && c.InnerUID != nil {
		parts = append(parts, w(fmt.Sprintf(" = uid %d inside its container", *c.InnerUID)))
	}
	if c := p.Container; c != nil && c.Controller != nil {
		parts = append(parts, w(fmt.Sprintf(", counted as uid %d (its user namespace's owner)", *c.Controller)))
	}
	return parts
}

// requesterItems is who asked, in the details: the warning when the
// requester changed, the requester (uid, pid, exe, and whether the kernel
// vouches for it), its ancestry oldest first, its container.
func requesterItems(p PeerInfo) []Item {
	var out []Item
	who := uidParts(p)
	if changed := changedOf(p); changed != "" {
		out = append(out, changedItem(changed))
		out = append(out, item(KeyRequester, "requester", LevelPlain, append(who, w(fmt.Sprintf(" · pid %d · exe ", p.PID)), asciiPart(p.Exe), w(" when it connected · not verified since"))...))
	} else {
		out = append(out, item(KeyRequester, "requester", LevelPlain, append(who, w(fmt.Sprintf(" · pid %d · exe ", p.PID)), asciiPart(p.Exe), w(" · "+KernelVerified))...))
	}
	if a := p.Ancestry; a != nil {
		out = append(out, item(KeyAskedBy, "asked by", LevelPlain, join(ancestryParts(a, false))...))
	}
	if c := p.Container; c != nil {
		out = append(out, item(KeyContainer, "container", LevelWarn, containerParts(c)...))
	}
	return out
}

// requesterBrief is who asked, on the first screen: a requester that
// exec'd or exited after connecting is warned about first, and neither its
// ancestry nor its exe is then called kernel-verified; then the requester's
// uid and its ancestry oldest first, ending with the requester itself
// (Item.Hops, for a renderer that must elide), or, without an ancestry,
// the requester line; then its container.
func requesterBrief(p PeerInfo) []Item {
	var out []Item
	who := uidParts(p)
	a := p.Ancestry
	changed := changedOf(p)
	if changed != "" {
		out = append(out, changedItem(changed))
	}
	switch {
	case changed != "" && (a == nil || len(a.Hops) == 0):
		out = append(out, item(KeyRequester, "requester", LevelPlain, append(who, w(fmt.Sprintf(" · pid %d · exe ", p.PID)), asciiPart(p.Exe), w(" when it connected"))...))
	case a == nil || len(a.Hops) == 0:
		out = append(out, item(KeyRequester, "requester", LevelPlain, append(who, w(fmt.Sprintf(" · pid %d · exe ", p.PID)), asciiPart(p.Exe), w(" · "+KernelVerified))...))
	default:
		if changed != "" {
			who = append(who, w(", read later, NOT verified: "))
		} else {
			who = append(who, w(", "+KernelVerified+": "))
		}
		hops := ancestryParts(a, false)
		it := item(KeyAskedBy, "asked by", LevelPlain, append(append([]Part(nil), who...), join(hops)...)...)
		it.Cut = "of who asked"
		it.Hops = append([][]Part{who}, hops...)
		it.ShortHops = append([][]Part{who}, ancestryParts(a, true)...)
		out = append(out, it)
	}
	if c := p.Container; c != nil {
		it := item(KeyContainer, "container", LevelWarn, containerParts(c)...)
		it.Cut = "of the container"
		out = append(out, it)
	}
	return out
}

// join joins hops with " → ".
func join(hops [][]Part) []Part {
	var out []Part
	for i, h := range hops {
		if i > 0 {
			out = append(out, w(" → "))
		}
		out = append(out, h...)
	}
	return out
}

// ancestryParts is an ancestry, oldest process first: the marker of a walk
// cut short (if any), then one part per hop. With short, long executable
// paths are shortened (shortPath).
func ancestryParts(a *Ancestry, short bool) [][]Part {
	parts := make([][]Part, 0, len(a.Hops)+1)
	switch a.End {
	case EndSessionLeader, EndLoginShell, EndInit:
	default:
		parts = append(parts, []Part{w("… ("), exact(a.End), w(")")})
	}
	for i := len(a.Hops) - 1; i >= 0; i-- {
		parts = append(parts, hopParts(a.Hops[i], i == len(a.Hops)-1 && a.End == EndLoginShell, short))
	}
	if len(a.Hops) == 0 {
		parts = append(parts, []Part{w("(no process could be read)")})
	}
	return parts
}

// hopParts is one process: its name (argv[0]'s base name, and the first
// argument when it reads as a subcommand), pid, and the file it executes
// unless that is a system program of the same name. Names are the
// process's own, the exe is the kernel's; both are escaped as programs.
func hopParts(h Hop, login bool, short bool) []Part {
	name := h.Name()
	words := name
	if len(h.Argv) > 1 && isSubcommand(h.Argv[1]) {
		words += " " + h.Argv[1]
	}
	parts := []Part{asciiPart(words), w(fmt.Sprintf(" (pid %d", h.PID))}
	if dir, base := path.Split(h.Exe); base != strings.TrimPrefix(name, "-") || !IsSystemDir(path.Clean(dir)) {
		parts = append(parts, w(", "))
		if head, base, ok := shortPath(h.Exe); short && ok {
			parts = append(parts, asciiPart(head), w("/…/"), asciiPart(base))
		} else {
			parts = append(parts, asciiPart(h.Exe))
		}
	}
	if login {
		parts = append(parts, w(", login shell"))
	}
	return append(parts, w(")"))
}

// shortPath splits an absolute path of more than four components into its
// first two and its base name, which a first screen shows as
// "/usr/lib/…/claude"; the details show it whole. ok is false for a
// shorter path.
func shortPath(p string) (head, base string, ok bool) {
	parts := strings.Split(p, "/")
	if len(parts) <= 5 || parts[0] != "" {
		return "", "", false
	}
	return strings.Join(parts[:3], "/"), parts[len(parts)-1], true
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

// containerParts is a container identity: the namespaces that differ from
// the daemon's, the requester's pid inside, its init and cgroup.
func containerParts(c *Container) []Part {
	parts := []Part{w("other namespaces than the daemon's:")}
	for _, k := range c.SortedNS() {
		// The kinds are the daemon's, but a record read back (audit
		// show) is a file: shown exactly, as everything not our own.
		parts = append(parts, w(" "), exact(k), w(fmt.Sprintf(":[%d]", c.NS[k])))
	}
	var b strings.Builder
	if c.InnerPID != 0 {
		fmt.Fprintf(&b, " · pid %d inside", c.InnerPID)
	}
	if c.InitPID != 0 {
		fmt.Fprintf(&b, " · its init is pid %d", c.InitPID)
	}
	parts = append(parts, w(b.String()))
	if c.Cgroup != "" {
		parts = append(parts, w(" · cgroup "), exact(c.Cgroup))
	}
	return parts
}
