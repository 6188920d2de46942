package docs_test

import (
	"flag"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

var updateDepaware = flag.Bool("update-depaware", false, "rewrite each binary's depaware.txt (make depaware)")

// maxImporters is how many importers a depaware.txt line names; a trailing
// "+" says that more import it.
const maxImporters = 3

// linked is what a binary links: each package, whether it is in the
// standard library, and the binary's packages that import it.
type linked struct {
	std       map[string]bool
	importers map[string][]string
}

// linkedBy lists what the binary bin (a directory relative to the module)
// links, from go list.
func linkedBy(t *testing.T, bin string) linked {
	t.Helper()
	out, err := exec.Command("go", "list", "-buildvcs=false", "-deps",
		"-f", "{{.ImportPath}} {{.Standard}}{{range .Imports}} {{.}}{{end}}", "../"+bin).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list %s: %v\n%s", bin, err, ee.Stderr)
		}
		t.Fatalf("go list %s: %v", bin, err)
	}
	l := linked{std: map[string]bool{}, importers: map[string][]string{}}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		l.std[f[0]] = f[1] == "true"
		if _, ok := l.importers[f[0]]; !ok {
			l.importers[f[0]] = nil
		}
		for _, imp := range f[2:] {
			l.importers[imp] = append(l.importers[imp], f[0])
		}
	}
	for p := range l.importers {
		if _, ok := l.std[p]; !ok {
			delete(l.importers, p) // "C", and imports go list did not list as linked
			continue
		}
		slices.Sort(l.importers[p])
	}
	return l
}

// depaware writes what bin links as tailscale's depaware does: one package a
// line, then "from" and the packages of the binary that import it, those
// outside the standard library first.
func depaware(bin string, l linked) string {
	var b strings.Builder
	b.WriteString("# The packages " + bin + " links, each with the packages of the binary that import it (\"from A+B\";\n" +
		"# a trailing \"+\": more than " + string(rune('0'+maxImporters)) + " do), as tailscale's depaware writes them: outside the standard library, then in it.\n" +
		"# This module's packages are named from its root (./daemon is " + module + "/daemon).\n" +
		"# Written by make depaware; docs: TestDepaware checks it, docs: TestDaemonNeverLinks what agent-sudod must not link.\n")
	for _, std := range []bool{false, true} {
		b.WriteString("\n")
		if std {
			b.WriteString("# The standard library\n")
		}
		var pkgs []string
		for p := range l.importers {
			if l.std[p] == std {
				pkgs = append(pkgs, p)
			}
		}
		slices.SortFunc(pkgs, func(a, b string) int { return strings.Compare(short(a), short(b)) })
		for _, p := range pkgs {
			imps := l.importers[p]
			if len(imps) == 0 {
				b.WriteString(short(p) + "\n")
				continue
			}
			more := ""
			if len(imps) > maxImporters {
				imps, more = imps[:maxImporters], "+"
			}
			names := make([]string, len(imps))
			for i, imp := range imps {
				names[i] = short(imp)
			}
			b.WriteString(short(p) + " from " + strings.Join(names, "+") + more + "\n")
		}
	}
	return b.String()
}

// short names a package of this module from the module's root
// (./daemon), and any other by its import path.
func short(pkg string) string {
	if rel, ok := relative(pkg); ok {
		return "./" + rel
	}
	return pkg
}

// TestDepaware: each binary's depaware.txt lists exactly the packages it
// links, with where each comes from, so that a new dependency of the root
// daemon (or the CLI) shows in review as a change to that file, naming the
// package that brought it. make depaware rewrites them; docs/development.md,
// "Dependencies", says what each binary links and why.
func TestDepaware(t *testing.T) {
	for _, bin := range []string{"cmd/agent-sudod", "cmd/agent-sudo"} {
		want := depaware(bin, linkedBy(t, bin))
		path := "../" + bin + "/depaware.txt"
		if *updateDepaware {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v; run make depaware", err)
		}
		if string(got) != want {
			t.Errorf("%s is out of date (run make depaware and review the change):\n%s", path, lineDiff(string(got), want))
		}
	}
}

// daemonNeverLinks is what agent-sudod, the root daemon, must never link:
// a package, or every package under a path ending in "/", and the only
// packages of the daemon that may import it (none when no one may).
var daemonNeverLinks = []struct {
	pkg      string
	onlyFrom []string
	why      string
}{
	{"github.com/charmbracelet/", nil, "the console's terminal UI: the daemon draws none; agent-sudod --tty starts agent-sudo approve as a process of its own (internal/spawn)"},
	{"github.com/muesli/", nil, "terminal styling for the console's UI"},
	{"github.com/mattn/go-runewidth", nil, "display widths are the console's (internal/termtext has its own for the daemon's log)"},
	{module + "/internal/console", nil, "the terminal console is agent-sudo approve, which reaches the daemon only through the approver socket"},
	{module + "/internal/web", nil, "the web approver is agent-sudo approve --web, which reaches the daemon only through the approver socket"},
	{module + "/internal/mcpserver", nil, "the MCP server is agent-sudo mcp, an agent's program"},
	{module + "/internal/journalctl", nil, "the daemon starts no journalctl (docs/audit.md: agent-sudo audit --journal-dir runs it)"},
	{module + "/client", nil, "the agent's client library: the daemon is not its own client"},
	{module + "/cmd/agent-sudo/cli", nil, "the CLI"},
	{"net/http", nil, "the daemon listens only on Unix sockets and speaks JSON lines; HTTP is the web approver's, a process of its own (and about 2 MB of binary, docs/performance.md)"},
	{"net/http/", nil, "as net/http"},
	{"github.com/go-webauthn/webauthn/webauthn", nil, "the relying party's server side (sessions, registration): the web approver's; the daemon checks signed decisions in internal/passkey"},
	{"github.com/go-webauthn/webauthn/protocol", nil, "the attestation formats and the metadata service client, which pulls in net/http; internal/passkey checks assertions itself (docs/development.md, \"Dependencies\")"},
	{"github.com/modelcontextprotocol/", nil, "the MCP SDK is agent-sudo mcp's"},
	{"github.com/piglig/go-qr", nil, "the enrolment link's QR code is the CLI's"},
	{"os/exec", []string{module + "/internal/spawn"}, "the daemon starts a process only through internal/spawn (notifiers, the --tty console) or the runner's approved stages (os.StartProcess with their credentials); os/exec elsewhere would start one outside both"},
	{"plugin", nil, "no code loaded at run time into a root process"},
}

// TestDaemonNeverLinks: agent-sudod links none of daemonNeverLinks, except
// from the packages each allows, so that the root daemon stays the small
// program its threat model assumes (docs/security.md).
func TestDaemonNeverLinks(t *testing.T) {
	l := linkedBy(t, "cmd/agent-sudod")
	for _, rule := range daemonNeverLinks {
		for p, imps := range l.importers {
			if p != rule.pkg && !(strings.HasSuffix(rule.pkg, "/") && strings.HasPrefix(p, rule.pkg)) {
				continue
			}
			for _, imp := range imps {
				if slices.Contains(rule.onlyFrom, imp) || strings.HasPrefix(imp, strings.TrimSuffix(rule.pkg, "/")) {
					continue
				}
				t.Errorf("agent-sudod links %s from %s: %s", p, imp, rule.why)
			}
		}
	}
}

// lineDiff lists the lines only in a (-) and only in b (+).
func lineDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ina, inb := in(a), in(b)
	var d strings.Builder
	for _, l := range strings.Split(a, "\n") {
		if !inb[l] {
			d.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if !ina[l] {
			d.WriteString("+ " + l + "\n")
		}
	}
	return d.String()
}
