// Package sheettest is a test helper: one table of waiting requests that
// every surface's test renders (the console, the web page, `agent-sudo
// audit show`, the notifiers' values, the MCP progress text), and the check
// that a rendering shows what the request's sheet (approval.NewSheet) says
// it must, in the sheet's order.
package sheettest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

// T0 is the time the cases' requests were received.
var T0 = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)

// Case is one request of the table.
type Case struct {
	Name  string
	Shown *approval.Shown
	// Context is what the surface knows beside it.
	Context approval.Context
	// Facts are texts every full surface (the console, the page, audit
	// show) shows for this request, each as it is (plain ASCII or the
	// sheet's own words, which no escaping changes); Brief those a
	// limited surface (a notification, the MCP progress text) shows.
	Facts, Brief []string
}

// Base is a request every case starts from: apt-get run as root, asked
// for by "agent-sudo mcp" under claude under a login shell, kernel-verified.
func Base(id string) *approval.Shown {
	return &approval.Shown{
		ID: id, Session: "build-42", Host: "devbox", Reason: "install nginx for the web tests",
		Time:     T0.Add(-time.Second),
		Pipeline: [][]string{{"apt-get", "install", "-y", "nginx"}},
		Programs: []approval.Program{{Chain: []string{"/usr/bin/apt-get"}, SHA256: strings.Repeat("ab", 32)}},
		Cwd:      "/", Privileged: true, RunAs: "root",
		Peer: approval.PeerInfo{UID: 1000, User: "alice", PID: 4242, Exe: "/usr/bin/agent-sudo",
			Ancestry: &approval.Ancestry{Hops: []approval.Hop{
				{PID: 4242, Exe: "/usr/bin/agent-sudo", Comm: "agent-sudo", Argv: []string{"agent-sudo", "mcp"}},
				{PID: 812, Exe: "/usr/lib/node_modules/claude/bin/node", Comm: "claude", Argv: []string{"claude"}},
				{PID: 750, Exe: "/usr/bin/bash", Comm: "bash", Argv: []string{"-bash"}},
			}, End: approval.EndLoginShell}},
		DaemonHost: "devbox",
		Received:   T0, Deadline: T0.Add(2 * time.Minute),
	}
}

// AptGet is the phone's first case: a 13-argument apt-get install with a
// five-line reason.
func AptGet(id string) *approval.Shown {
	s := Base(id)
	s.Pipeline = [][]string{{"apt-get", "install", "-y", "--no-install-recommends", "nginx", "postgresql-15",
		"redis-server", "python3-venv", "build-essential", "libssl-dev", "ca-certificates", "curl", "git"}}
	s.Reason = "Set up the build host for the web tests:\nnginx serves the fixtures,\npostgresql-15 and redis hold the test data,\n" +
		"the compilers build the native modules,\nand curl and git fetch the pinned sources."
	s.Why = "no rule applies to stage 1 of 1: /usr/bin/apt-get"
	return s
}

// TeeConfig is the phone's second case: a tee into /etc with a
// configuration file on stdin.
func TeeConfig(id string) *approval.Shown {
	s := Base(id)
	s.Pipeline = [][]string{{"tee", "/etc/nginx/conf.d/tests.conf"}}
	s.Programs = []approval.Program{{Chain: []string{"/usr/bin/tee"}}}
	s.Reason = "serve the test fixtures on port 8081"
	s.Why = "no rule applies to stage 1 of 1: /usr/bin/tee"
	s.Stdin = approval.NewStdinShown([]byte(NginxConf))
	return s
}

// NginxConf is TeeConfig's stdin.
const NginxConf = "server {\n    listen 8081;\n    root /srv/fixtures;\n    location / {\n        autoindex on;\n    }\n}\n"

// TwoPerson is the phone's third case: a request that needs two people,
// one of whom allowed it.
func TwoPerson(id string) *approval.Shown {
	s := Base(id)
	s.Pipeline = [][]string{{"systemctl", "restart", "postgresql"}}
	s.Programs = []approval.Program{{Chain: []string{"/usr/bin/systemctl"}}}
	s.Reason = "restart the database after the upgrade"
	s.Why = `rule "databases" asks 2 people`
	s.Approvals = 2
	return s
}

// Cases is the table: long argv, stdin, a symlinked program, NOT
// ROOT-ONLY program and directory, an unverified (changed) requester, a
// host mismatch, two people, env, a cwd reached through a symlink, and an
// agent's hostile text.
func Cases() []Case {
	symlinked := Base("symlinked")
	symlinked.Pipeline = [][]string{{"python3", "-c", "print(1)"}}
	symlinked.Programs = []approval.Program{{Chain: []string{"/usr/bin/python3", "/usr/bin/python3.11"}}}

	writable := Base("writable")
	writable.Pipeline = [][]string{{"/opt/tool/run", "--fix"}}
	writable.Programs = []approval.Program{{Chain: []string{"/opt/tool/run"},
		Writable: []approval.Writable{{Path: "/opt/tool", Why: "the directory is owned by uid 1001"}}}}
	writable.Cwd = "/home/alice"
	writable.CwdWritable = []approval.Writable{{Path: "/home/alice", Why: "the directory is owned by uid 1000"}}

	changed := Base("changed")
	changed.Peer.Ancestry.Changed = "pid 4242 exec'd another program after it connected"

	noAncestry := Base("no-ancestry")
	noAncestry.Peer.Ancestry = nil

	mismatch := Base("mismatch")
	mismatch.Host = "prod-db-1"

	env := Base("env")
	env.Env = map[string]string{"DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C.UTF-8"}

	cwdChain := Base("cwd-chain")
	cwdChain.Cwd = "/srv/www"
	cwdChain.CwdChain = []string{"/var/www", "/srv/www"}

	hostile := Base("hostile")
	hostile.Pipeline = [][]string{{"echo", "a\nb", "<b>x</b>"}}
	hostile.Programs = []approval.Program{{Chain: []string{"/usr/bin/echo"}}}
	hostile.Reason = "clean \x1b[2J up\u202e"

	return []Case{
		{Name: "long argv, five-line reason", Shown: AptGet("apt-get"),
			Facts: []string{"apt-get", "install", "--no-install-recommends", "git", "as root", "no rule applies",
				"Set up the build host", "and curl and git fetch the pinned sources.", approval.KernelVerified},
			Brief: []string{"apt-get", "git", "as root", "Set up the build host"}},
		{Name: "stdin", Shown: TeeConfig("tee"),
			Facts: []string{"tee", "/etc/nginx/conf.d/tests.conf", "stdin", fmt.Sprintf("%d bytes", len(NginxConf)), "listen 8081;", "root /srv/fixtures;"},
			Brief: []string{"tee", "/etc/nginx/conf.d/tests.conf", "with stdin"}},
		{Name: "symlinked program", Shown: symlinked, Facts: []string{"/usr/bin/python3", "/usr/bin/python3.11"}},
		{Name: "NOT ROOT-ONLY program and directory", Shown: writable,
			Facts: []string{approval.WritableWarning, "/opt/tool", "owned by uid 1001", approval.CwdWritableMeans, "owned by uid 1000"},
			Brief: []string{"a program is NOT ROOT-ONLY", "the directory is NOT ROOT-ONLY"}},
		{Name: "unverified requester", Shown: changed,
			Facts: []string{"exec'd another program after it connected", "not verified to be who asked"},
			Brief: []string{"the requester is not verified"}},
		{Name: "no ancestry", Shown: noAncestry, Facts: []string{"pid 4242", "/usr/bin/agent-sudo", approval.KernelVerified}},
		{Name: "host mismatch", Shown: mismatch, Facts: []string{"prod-db-1", "≠", "devbox"},
			Brief: []string{"the agent's host is not this daemon's"}},
		{Name: "two-person", Shown: TwoPerson("two"), Context: approval.Context{ApprovedBy: []string{`passkey "alice"`}},
			Facts: []string{"1 of 2 approvals", `passkey "alice"`, "needs 2 different people"},
			Brief: []string{"needs more than one person"}},
		{Name: "env", Shown: env, Facts: []string{"DEBIAN_FRONTEND", "LC_ALL"}},
		{Name: "cwd through a symlink", Shown: cwdChain, Facts: []string{"/srv/www", "requested as", "/var/www"}},
		{Name: "hostile text", Shown: hostile, Facts: []string{`\x1b[2J`, `\u202e`, "echo"}},
	}
}

// Render escapes a part for a surface.
type Render func(approval.Part) string

// Text is an item's value as a surface renders it.
func Text(it approval.Item, r Render) string {
	var b strings.Builder
	for _, p := range it.Parts {
		b.WriteString(r(p))
	}
	return b.String()
}

// InOrder checks that got, what surface shows, holds each of want in
// order, each after the one before.
func InOrder(t *testing.T, surface, got string, want []string) {
	t.Helper()
	rest := got
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			if strings.Contains(got, w) {
				t.Errorf("%s shows %q out of the sheet's order:\n%s", surface, w, got)
			} else {
				t.Errorf("%s does not show %q:\n%s", surface, w, got)
			}
			return
		}
		rest = rest[i+len(w):]
	}
}

// Contains checks that got holds each of want.
func Contains(t *testing.T, surface, got string, want []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s does not show %q:\n%s", surface, w, got)
		}
	}
}

// Items is each item's text as r renders it, the empty ones left out.
func Items(items []approval.Item, r Render) []string {
	var out []string
	for _, it := range items {
		if s := Text(it, r); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Lines is each item as label and value, one a line, as r renders the
// value.
func Lines(items []approval.Item, r Render) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString(it.Label + " " + Text(it, r) + "\n")
	}
	return b.String()
}

// Shows checks that got, what surface shows of items, holds each item's
// value as r renders it, in the items' order. An item the sheet lets a
// surface cut (approval.Item.Cut) may be missing when got says the cut
// (approval.MoreText, or approval.StdinMore for stdin's lines).
func Shows(t *testing.T, surface, got string, items []approval.Item, r Render) {
	t.Helper()
	rest := got
	for _, it := range items {
		w := Text(it, r)
		if w == "" {
			continue
		}
		if i := strings.Index(rest, w); i >= 0 {
			rest = rest[i+len(w):]
			continue
		}
		if it.Cut != "" && (strings.Contains(got, approval.MoreText(it.Cut)) ||
			it.Key == approval.KeyStdinLine && strings.Contains(got, "more bytes not shown")) {
			continue
		}
		if strings.Contains(got, w) {
			t.Errorf("%s shows %s %q out of the sheet's order:\n%s", surface, it.Key, w, got)
		} else {
			t.Errorf("%s does not show %s %q:\n%s", surface, it.Key, w, got)
		}
		return
	}
}
