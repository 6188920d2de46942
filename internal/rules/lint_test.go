package rules_test

import (
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/rules"
)

// TestLint is issue 10's H4: "**" or a wildcard argument on a program that
// runs code through its options amounts to root, and the linter says so.
func TestLint(t *testing.T) {
	withEnv := func(r rules.Rule, env ...string) rules.Rule { r.Env = env; return r }
	withSession := func(r rules.Rule, session, user string) rules.Rule { r.Session, r.User = session, user; return r }
	tests := []struct {
		name string
		rule rules.Rule
		want string // "" for no warning
	}{
		{"apt **", allow("q", "apt", "**"), `rule 1 ("q"): "**" on "apt" amounts to root (apt: -o sets any APT option`},
		{"apt-get install *", allow("q", "apt-get", "install", "*"), `the wildcard argument match[2] "*" on "apt-get" amounts to root`},
		{"full path", allow("q", "/usr/bin/git", "**"), `"**" on "git" amounts to root (git: -c sets any option`},
		{"interpreter family", allow("q", "python3.11", "*"), `on "python3.11" amounts to root (python*: an interpreter`},
		{"shell", allow("q", "bash", "-c", "**"), `on "bash" amounts to root`},
		{"find", allow("q", "find", "/var/log", "-name", "*.log"), `on "find" amounts to root (find: -exec`},
		{"tee path", allow("q", "tee", "/var/log/app/*"), `on "tee" amounts to root`},
		{"systemctl status *", allow("q", "systemctl", "status", "*"), `on "systemctl" amounts to root`},
		{"env", allow("q", "env", "**"), `on "env" amounts to root`},
		{"any program", allow("q", "/*", "**"), `the program pattern "/*" matches programs that run any command`},
		{"any bare program", allow("q", "*", "**"), `the program pattern "*" matches programs`},
		{"py*", allow("q", "py*", "--version"), `matches programs that run any command through their arguments (python3)`},
		{"env star", withEnv(allow("q", "id"), "*"), `env = ["*"] lets a request set any variable`},
		{"session alone", withSession(allow("q", "id"), "claude-*", ""), `session "claude-*" is a label the agent chooses and restricts nothing`},
		{"session with user", withSession(allow("q", "id"), "claude-*", "alice"), ""},
		// Safe as written.
		{"apt-get update exactly", allow("q", "apt-get", "update"), ""},
		{"systemctl literal", allow("q", "systemctl", "restart", "myapp.service"), ""},
		{"cat path", allow("q", "cat", "/var/log/*"), ""},
		{"cat **", allow("q", "cat", "/var/log/x", "**"), `"**" on "cat" reads any file`},
		{"cat name", allow("q", "cat", "*.conf"), `the wildcard argument match[1] "*.conf" on "cat" reads any file`},
		{"grep option then path", allow("q", "grep", "-r", "*", "/var/log/*"), `the wildcard argument match[2] "*" on "grep" reads any file`},
		{"cat root dir", allow("q", "cat", "/*"), `on "cat" reads any file`},
		{"uname", allow("q", "uname", "**"), ""},
		{"mkfs pattern", allow("q", "mkfs*", "--help"), ""},
		{"tools dir", allow("q", "/opt/tools/*", "**"), ""},
		{"deny is not linted", deny("q", "apt", "**"), ""},
		{"ask is not linted", ask("q", "/*", "**"), ""},
		{"named env", withEnv(allow("q", "id"), "LANG", "LC_*"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.rule.Validate(); err != nil {
				t.Fatal(err)
			}
			ws := rules.Lint([]rules.Rule{tt.rule}, trusted)
			if tt.want == "" {
				if len(ws) != 0 {
					t.Fatalf("got %q, want no warning", ws)
				}
				return
			}
			if len(ws) != 1 || !strings.Contains(ws[0].String(), tt.want) {
				t.Fatalf("got %q, want one warning containing %q", ws, tt.want)
			}
		})
	}
}

// TestLintProgramsThatRunCode is the red team's list of programs in a
// Debian secure path that run any command, load code or write any file
// through their arguments, beyond those of issue 10: "**" after each of them
// is warned about.
func TestLintProgramsThatRunCode(t *testing.T) {
	progs := []string{
		"script", "ld.so", "ldconfig", "setarch", "prlimit", "chrt", "setpriv", "capsh", "sg",
		"systemd-cat", "systemd-inhibit", "dbus-run-session", "ssh-agent", "start-stop-daemon", "run-parts",
		"busctl", "socat", "expect", "R", "dc", "editor", "sensible-editor", "vim.basic", "rvim",
		"sensible-pager", "chsh", "vipw", "groupadd", "dpkg-statoverride", "dpkg-divert", "dpkg-deb", "setcap",
		"iptables", "ssh-keygen", "certbot", "nginx", "sort", "iconv", "truncate", "mknod", "debugfs", "rbash",
	}
	for _, p := range progs {
		t.Run(p, func(t *testing.T) {
			ws := rules.Lint([]rules.Rule{allow("q", p, "**")}, trusted)
			if len(ws) != 1 || !strings.Contains(ws[0].String(), `"**" on "`+p+`" amounts to root`) {
				t.Fatalf("got %q, want one warning that \"**\" on %q amounts to root", ws, p)
			}
		})
	}
	for _, p := range []string{"tac", "cut", "jq", "xzcat"} {
		t.Run(p, func(t *testing.T) {
			if ws := rules.Lint([]rules.Rule{allow("q", p, "**")}, trusted); len(ws) != 1 || !strings.Contains(ws[0].String(), "reads any file") {
				t.Fatalf("got %q, want one warning that it reads any file", ws)
			}
			if ws := rules.Lint([]rules.Rule{allow("q", p, "/var/log/*")}, trusted); len(ws) != 0 {
				t.Fatalf("got %q, want no warning for a path below /var/log", ws)
			}
		})
	}
}

// TestLintNamesRulesInOrder checks the labels, which match New's errors.
func TestLintNamesRulesInOrder(t *testing.T) {
	ws := rules.Lint([]rules.Rule{
		allow("", "git", "**"),
		allow("ok", "id"),
		allow("tar all", "tar", "**"),
	}, trusted)
	if len(ws) != 2 || ws[0].Rule != "rule 1" || ws[1].Rule != `rule 3 ("tar all")` {
		t.Fatalf("got %q", ws)
	}
}
