package console

import (
	"io"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/procinfo"
)

// withAncestry returns shown(id) requested by "agent-sudo mcp" under a
// "claude" running node, under a login shell.
func withAncestry(id string) *approval.Shown {
	s := shown(id)
	s.Peer.Exe = "/usr/bin/agent-sudo"
	s.Peer.Ancestry = &approval.Ancestry{Hops: []approval.Hop{
		{PID: 4242, Exe: "/usr/bin/agent-sudo", Comm: "agent-sudo", Argv: []string{"agent-sudo", "mcp"}},
		{PID: 812, Exe: "/usr/lib/node_modules/claude/bin/node", Comm: "claude", Argv: []string{"claude"}},
		{PID: 750, Exe: "/usr/bin/bash", Comm: "bash", Argv: []string{"-bash"}},
	}, End: approval.EndLoginShell}
	return s
}

// TestRequesterAncestryShown: the ancestry is one line, oldest first, with
// the exe where it says more than the name; the kernel's facts are marked
// as such and the agent's claims as claims.
func TestRequesterAncestryShown(t *testing.T) {
	h := newHarness(t, "")
	h.update(tea.WindowSizeMsg{Width: 200, Height: 60})
	h.pending(withAncestry("r1"))
	h.wantView(
		"asked by   uid 1000 (alice), kernel-verified: -bash (pid 750, login shell) → claude (pid 812, /usr/lib/node_modules/claude/bin/node) → agent-sudo mcp (pid 4242)",
		"agent      session build-42 · host devbox · claimed by the agent",
	)
	h.wantFull(
		"asked by   -bash (pid 750, login shell) → claude (pid 812, /usr/lib/node_modules/claude/bin/node) → agent-sudo mcp (pid 4242)",
		"requester  uid 1000 (alice) · pid 4242 · exe /usr/bin/agent-sudo · kernel-verified",
		"session    build-42 (claimed by the agent)",
		"host       devbox (claimed by the agent)",
		"by the agent's clock (claimed)",
	)
	h.notView(escapedNotice)
}

// TestRequesterHostileAncestry: process names are the process's own and
// are escaped strictly and flagged; a walk cut short says why.
func TestRequesterHostileAncestry(t *testing.T) {
	h := newHarness(t, "")
	h.update(tea.WindowSizeMsg{Width: 200, Height: 60})
	s := withAncestry("r1")
	s.Peer.Ancestry.Hops[1].Argv = []string{"cl\x1b[2Jaud\u0435"}
	s.Peer.Ancestry.Hops = s.Peer.Ancestry.Hops[:2]
	s.Peer.Ancestry.End = approval.EndExited + " (pid 750)"
	h.pending(s)
	h.wantFull(`asked by   … (exited during the walk (pid 750)) → cl\x1b[2Jaud\u0435 (pid 812, /usr/lib/node_modules/claude/bin/node)`, escapedNotice)
}

// TestClaimedHostDiffers: a request claiming a host other than the
// daemon's is warned about, with the daemon's own name.
func TestClaimedHostDiffers(t *testing.T) {
	for _, tt := range []struct{ claimed, daemon, brief, want string }{
		{"prod-db-1", "vm", "agent      session build-42 · host prod-db-1 (≠ vm) · claimed by the agent",
			"host       prod-db-1 (claimed by the agent) ≠ this daemon's host vm"},
		{"vm", "vm", "agent      session build-42 · host vm · claimed by the agent\n",
			"host       vm (claimed by the agent; matches this daemon's host)"},
	} {
		h := newHarness(t, "")
		h.update(tea.WindowSizeMsg{Width: 200, Height: 60})
		s := shown("r1")
		s.Host, s.DaemonHost = tt.claimed, tt.daemon
		h.pending(s)
		h.wantView(tt.brief)
		h.wantFull(tt.want)
	}
}

// TestClaimedHostHighlighted: the line that says a claimed host is not the
// daemon's is drawn in the warn style (bold yellow), on the first screen and
// in the details; a claimed host that matches is not.
func TestClaimedHostHighlighted(t *testing.T) {
	for _, tt := range []struct {
		claimed    string
		highlights bool
	}{{"prod-db-1", true}, {"vm", false}} {
		h := newHarness(t, "")
		r := lipgloss.NewRenderer(io.Discard)
		r.SetColorProfile(termenv.ANSI)
		h.m.cfg.renderer, h.m.st = r, newStyles(r)
		h.update(tea.WindowSizeMsg{Width: 200, Height: 60})
		warn, _, _ := strings.Cut(h.m.st.warn.Render("X"), "X")
		if warn == "" {
			t.Fatal("the warn style renders no escape under the ANSI profile")
		}
		s := shown("r1")
		s.Host, s.DaemonHost = tt.claimed, "vm"
		h.pending(s)
		d := h.m.screen.(*decideScreen)
		for _, full := range []bool{false, true} {
			d.full = full
			line := ""
			for l := range strings.SplitSeq(h.m.View(), "\n") {
				if plain := ansi.Strip(l); strings.Contains(plain, "host "+tt.claimed) || strings.Contains(plain, "host       "+tt.claimed) {
					line = l
					break
				}
			}
			switch {
			case line == "":
				t.Errorf("claimed %s, details %v: no line shows the host", tt.claimed, full)
			case strings.Contains(line, warn) != tt.highlights:
				t.Errorf("claimed %s, details %v: highlighted %v, want %v: %q", tt.claimed, full, !tt.highlights, tt.highlights, line)
			}
		}
	}
}

// TestContainerShown: a requester in other namespaces shows its uid inside
// beside the kernel's mapped uid, the namespaces and its init's cgroup.
func TestContainerShown(t *testing.T) {
	h := newHarness(t, "")
	h.update(tea.WindowSizeMsg{Width: 200, Height: 60})
	s := shown("r1")
	zero := uint32(0)
	s.Peer.Container = &approval.Container{NS: map[string]uint64{"pid": 4026532001, "user": 4026532000, "mnt": 4026532002},
		InnerUID: &zero, InnerPID: 2, InitPID: 5000, Cgroup: "0::/system.slice/docker-abc.scope"}
	h.pending(s)
	h.wantView("uid 1000 (alice) = uid 0 inside its container",
		"container  other namespaces than the daemon's: user:[4026532000] pid:[4026532001] mnt:[4026532002] · pid 2 inside · its init is pid 5000 · cgroup 0::/system.slice/docker-abc.scope")
}

// TestRequesterChangedNotVerified: a requester that exec'd another program
// or exited between connecting and the walk of its ancestry
// (approval.Ancestry.Changed) is warned about on the first screen and in
// the details, and neither its ancestry nor its exe is called
// kernel-verified.
func TestRequesterChangedNotVerified(t *testing.T) {
	for _, tt := range []struct {
		name, changed string
		hops          int
		// shown is the start of the warning when it is not changed as it is.
		shown string
	}{
		{"exec", procinfo.ChangedExec + " (pid 4242): was /usr/bin/agent-sudo, now /usr/bin/sleep", 3, ""},
		{"exited", procinfo.ChangedExited + " (pid 4242, was /usr/bin/agent-sudo)", 0, ""},
		// A file name is anyone's: escaped (view fails on a raw escape).
		{"hostile path", procinfo.ChangedExec + " (pid 4242): was /usr/bin/agent-sudo, now /tmp/\x1b[2J\u202e", 3,
			procinfo.ChangedExec + ` (pid 4242): was /usr/bin/agent-sudo, now /tmp/\x1b[2J\u202e;`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "")
			h.update(tea.WindowSizeMsg{Width: 200, Height: 60})
			s := withAncestry("r1")
			s.Peer.Ancestry.Hops = s.Peer.Ancestry.Hops[:tt.hops]
			if tt.hops == 0 {
				s.Peer.Ancestry.End = approval.EndExited + " (pid 4242)"
			}
			s.Peer.Ancestry.Changed = tt.changed
			h.pending(s)
			warning := "warning    " + tt.changed + "; the processes shown were read later and are not verified to be who asked"
			if tt.shown != "" {
				warning = "warning    " + tt.shown
			}
			h.wantView(warning)
			h.wantFull(warning, "requester  uid 1000 (alice) · pid 4242 · exe /usr/bin/agent-sudo when it connected · not verified since")
			h.notView("kernel-verified")
			if v := h.fullView(); strings.Contains(v, "kernel-verified") {
				t.Errorf("details screen says kernel-verified:\n%s", v)
			}
		})
	}
}

// TestShellOrClientOnlyFromSystemDirs: only a shell or agent-sudo in a
// system directory is folded into "… N shells" on the first screen; a
// program anyone named "bash" is shown, since it may be the agent hiding.
func TestShellOrClientOnlyFromSystemDirs(t *testing.T) {
	for exe, want := range map[string]bool{
		"/usr/bin/bash":             true,
		"/bin/sh":                   true,
		"/usr/local/bin/agent-sudo": true,
		"/tmp/x/bash":               false,
		"/home/alice/bin/sh":        false,
		"/usr/bin/python3":          false,
	} {
		if got := isShellOrClient(approval.Hop{Exe: exe}); got != want {
			t.Errorf("isShellOrClient(%s) = %v, want %v", exe, got, want)
		}
	}
}

// TestNoSession: a request with no session says "(none)", not an empty
// value beside its separator.
func TestNoSession(t *testing.T) {
	h := newHarness(t, "")
	h.update(tea.WindowSizeMsg{Width: 200, Height: 60})
	s := shown("r1")
	s.Session = ""
	h.pending(s)
	h.wantView("agent      session (none) · host devbox · claimed by the agent")
	h.notView("session  ·")
	h.wantFull("session    (none) (claimed by the agent)")
}
