package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const rulesTestConfig = `
socket_group = "root"

[[rule]]
name = "no rm"
action = "deny"
match = ["rm", "**"]

[[rule]]
name = "read the logs"
action = "allow"
match = ["cat", "/var/log/*"]

[[rule]]
name = "refresh"
action = "allow"
match = ["apt-get", "update"]
privileged = true
env = ["DEBIAN_FRONTEND"]

[[rule]]
name = "id for root"
action = "allow"
match = ["id"]
user = "root"

[[rule]]
name = "fetch"
action = "allow"
match = ["true", "fetch"]
privileged = false
forward_agent = true

[[rule]]
name = "any apt"
action = "allow"
match = ["apt", "**"]
`

// writeRulesConfig writes a configuration the loader accepts (owned by this
// user, not writable by others) and returns its path.
func writeRulesConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRulesTest checks "agent-sudo rules test" (issue 13): per stage the
// resolved program and the deciding rule (or none, and which allow rules were
// passed over), the verdict in the daemon's words, the linter's warnings,
// and the exit status.
func TestRulesTest(t *testing.T) {
	cfg := writeRulesConfig(t, rulesTestConfig)
	tests := []struct {
		name string
		args []string
		code int
		want []string // lines or fragments stdout must contain
	}{
		{"allowed", []string{"--", "cat", "/var/log/syslog"}, 0, []string{
			`stage 1 of 1: "/usr/bin/cat" "/var/log/syslog"`,
			`  rule "read the logs": allow`,
			`verdict: allowed by rule "read the logs" (stage 1 of 1: /usr/bin/cat)`}},
		{"dot-dot asks and says why", []string{"--", "cat", "/var/log/../../etc/shadow"}, 1, []string{
			`  passed over: rule "read the logs" does not allow it: argument 1 is not a clean path below "/var/log/"`,
			`  no rule applies: ask`,
			`verdict: needs approval: no rule applies to stage 1 of 1: /usr/bin/cat (rule "read the logs" does not allow it`}},
		{"denied stage", []string{"--", "cat", "/var/log/x", "|", "rm", "-rf", "/"}, 77, []string{
			`stage 2 of 2: "/usr/bin/rm" "-rf" "/"`,
			`  rule "no rm": deny`,
			`verdict: denied by rule "no rm" (stage 2 of 2: /usr/bin/rm)`}},
		{"env listed", []string{"--env", "DEBIAN_FRONTEND=noninteractive", "--", "apt-get", "update"}, 0, []string{`rule "refresh": allow`}},
		{"env not listed", []string{"--env", "LANG=C.UTF-8", "--", "apt-get", "update"}, 1, []string{
			`passed over: rule "refresh" does not allow it: the request carries the environment variable LANG, which the rule's env does not list`}},
		{"env refused by the daemon", []string{"--env", "LD_PRELOAD=/tmp/x.so", "--", "apt-get", "update"}, 77, []string{
			`verdict: refused before the rules: `, `LD_PRELOAD`}},
		{"unprivileged", []string{"--unprivileged", "--", "apt-get", "update"}, 1, []string{`no rule applies: ask`}},
		{"forward agent allowed", []string{"--unprivileged", "--forward-agent", "--", "true", "fetch"}, 0, []string{`rule "fetch": allow`}},
		{"forward agent not allowed", []string{"--forward-agent", "--", "cat", "/var/log/x"}, 1, []string{
			`does not allow it: the request forwards the SSH agent and the rule does not say forward_agent = true`}},
		{"user matches", []string{"--user", "root", "--", "id"}, 0, []string{`rule "id for root": allow`}},
		{"other user", []string{"--user", "nobody", "--session", "claude-1", "--", "id"}, 1, []string{`no rule applies: ask`}},
		{"program not found", []string{"--", "no-such-program-asudo"}, 77, []string{`verdict: refused before the rules: pipeline[0]: `}},
		{"linter warnings", []string{"--", "cat", "/var/log/x"}, 0, []string{
			`warning: rule 6 ("any apt"): "**" on "apt" amounts to root`}},
		{"hostile argument is escaped", []string{"--", "cat", "/var/log/\x1b[2Jx"}, 1, []string{`"/var/log/\x1b[2Jx"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(context.Background(), nil, append([]string{"rules", "test", "--config", cfg}, tt.args...)...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout does not contain %q:\n%s", w, r.stdout)
				}
			}
			if strings.Contains(r.stdout, "\x1b") {
				t.Errorf("stdout carries a raw escape:\n%q", r.stdout)
			}
		})
	}
}

func TestRulesTestErrors(t *testing.T) {
	good := writeRulesConfig(t, rulesTestConfig)
	bad := writeRulesConfig(t, "[[rule]]\naction = \"allow\"\nmatch = [\"id\"]\nforward_agnet = true\n")
	unknownUser := writeRulesConfig(t, "[[rule]]\naction = \"allow\"\nmatch = [\"id\"]\nuser = \"no-such-user-asudo\"\n")
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no subcommand", []string{"rules"}, 2, "rules: no subcommand given"},
		{"unknown subcommand", []string{"rules", "check"}, 2, `rules: unknown subcommand "check"`},
		{"no command", []string{"rules", "test", "--config", good}, 2, "rules test: no command given"},
		{"empty stage", []string{"rules", "test", "--config", good, "--", "a", "|", "|", "b"}, 2, "stage 2 is empty"},
		{"bad env flag", []string{"rules", "test", "--config", good, "--env", "X", "--", "id"}, 2, `"X" is not NAME=VALUE`},
		{"unknown key", []string{"rules", "test", "--config", bad, "--", "id"}, 78, `unknown key "forward_agnet" in rule 1 (did you mean "forward_agent"?)`},
		{"unknown user in a rule", []string{"rules", "test", "--config", unknownUser, "--", "id"}, 78, `rule 1: user "no-such-user-asudo"`},
		{"missing explicit config", []string{"rules", "test", "--config", "/nonexistent/asudo.toml", "--", "id"}, 78, "no such file"},
		{"unknown --user", []string{"rules", "test", "--config", good, "--user", "no-such-user-asudo", "--", "id"}, 2, "--user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(context.Background(), nil, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("got exit %d, stderr %q; want %d containing %q", r.code, r.stderr, tt.code, tt.stderr)
			}
		})
	}
	// A program reached through a symbolic link in secure_path: the rules
	// see the link's path, and the output says where it leads.
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/bin/true", filepath.Join(dir, "mytrue")); err != nil {
		t.Fatal(err)
	}
	linked := writeRulesConfig(t, "secure_path = \""+dir+":/usr/bin:/bin\"\n[[rule]]\naction = \"allow\"\nmatch = [\"mytrue\"]\n")
	r := runCLI(context.Background(), nil, "rules", "test", "--config", linked, "--", "mytrue")
	if r.code != 0 || !strings.Contains(r.stdout, `stage 1 of 1: "`+dir+`/mytrue"`) ||
		!strings.Contains(r.stdout, `  the program is a symbolic link to "/usr/bin/true"; rules see the path above`) {
		t.Errorf("symlinked program: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(context.Background(), nil, "help", "rules"); r.code != 0 || !strings.Contains(r.stdout, "usage: agent-sudo rules test") {
		t.Errorf("help rules: %d %q", r.code, r.stdout)
	}
}
