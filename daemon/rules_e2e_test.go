package daemon_test

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/daemon/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2ERuleAllowConditions sends, over the real socket to the real daemon,
// requests that an allow rule matches as strings but must not allow (issue
// 10's H3, M2 and C1): each must be asked about (here: time out, since no
// human is connected) and not run, while the same rule still allows the
// request it was written for.
func TestE2ERuleAllowConditions(t *testing.T) {
	daemontest.RequireRoot(t)
	logf, err := os.CreateTemp("/var/log", "asudo-rules-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(logf.Name()) })
	if _, err := logf.WriteString("a log line\n"); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("the secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel("/var/log", secret) // "../../tmp/..../secret"
	if err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "1s", Rules: `
[[rule]]
name = "read logs"
action = "allow"
match = ["cat", "/var/log/*"]

[[rule]]
name = "reconfigure tzdata"
action = "allow"
match = ["dpkg-reconfigure", "-f", "noninteractive", "tzdata"]

[[rule]]
name = "echo"
action = "allow"
match = ["echo", "*"]

[[rule]]
name = "echo with the agent"
action = "allow"
match = ["echo", "forwarded"]
forward_agent = true

[[rule]]
name = "env with LANG"
action = "allow"
match = ["env"]
env = ["LANG"]
`, Env: []string{"SSH_AUTH_SOCK=/run/approver-agent.sock"}})
	tests := []struct {
		name   string
		req    proto.Request
		status proto.Status
		out    string
	}{
		{"clean path under the pattern is allowed",
			proto.Request{Pipeline: [][]string{{"cat", logf.Name()}}}, proto.StatusOK, "a log line"},
		{"dot-dot out of /var/log asks",
			proto.Request{Pipeline: [][]string{{"cat", "/var/log/" + rel}}}, proto.StatusTimeout, ""},
		{"double slash asks",
			proto.Request{Pipeline: [][]string{{"cat", "/var/log//" + strings.TrimPrefix(logf.Name(), "/var/log/")}}}, proto.StatusTimeout, ""},
		{"/var/log/. asks",
			proto.Request{Pipeline: [][]string{{"cat", "/var/log/./" + strings.TrimPrefix(logf.Name(), "/var/log/")}}}, proto.StatusTimeout, ""},
		{"a name pattern does not match a relative path",
			proto.Request{Pipeline: [][]string{{"echo", "../x"}}}, proto.StatusTimeout, ""},
		{"a name pattern matches a name",
			proto.Request{Pipeline: [][]string{{"echo", "x"}}}, proto.StatusOK, "x"},
		{"env the rule does not list asks (C1)",
			proto.Request{Pipeline: [][]string{{"dpkg-reconfigure", "-f", "noninteractive", "tzdata"}},
				Env: map[string]string{"DEBIAN_FRONTEND": "noninteractive"}}, proto.StatusTimeout, ""},
		{"env the rule lists is allowed",
			proto.Request{Pipeline: [][]string{{"env"}}, Env: map[string]string{"LANG": "C.UTF-8"}}, proto.StatusOK, "LANG=C.UTF-8"},
		{"forward_agent without the rule saying so asks (M2)",
			proto.Request{Pipeline: [][]string{{"echo", "x"}}, ForwardAgent: true}, proto.StatusTimeout, ""},
		{"forward_agent with the rule saying so is allowed",
			proto.Request{Pipeline: [][]string{{"echo", "forwarded"}}, ForwardAgent: true}, proto.StatusOK, "forwarded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The SSH agent is only ever given to unprivileged commands.
			tt.req.Privileged = !tt.req.ForwardAgent
			resp := d.Run(&tt.req)
			if resp.Status != tt.status || !strings.Contains(string(resp.Stdout), tt.out) {
				t.Fatalf("%q: got %s %q (stdout %q), want %s", tt.req.Pipeline, resp.Status, resp.Message, resp.Stdout, tt.status)
			}
			if strings.Contains(string(resp.Stdout), "the secret") {
				t.Fatal("the secret was read without asking")
			}
		})
	}
}

// TestE2ERuleUser is issue 10's L5 over the wire: a peer of another user
// that sends a matching session label does not satisfy a rule restricted to
// a user, while that user does.
func TestE2ERuleUser(t *testing.T) {
	daemontest.RequireRoot(t)
	g, err := user.LookupGroup("nogroup")
	if err != nil {
		t.Skip("no group nogroup")
	}
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "1s", SocketGroup: g.Name, Rules: `
[[rule]]
name = "root's claude sessions"
action = "allow"
match = ["touch", "*"]
session = "claude-*"
user = "root"
privileged = false
`})
	marker := filepath.Join(d.Dir, "by-nobody")
	out := sendAs(t, d, "nobody", line(map[string]any{"pipeline": [][]string{{"touch", marker}},
		"privileged": false, "session": "claude-1"}))
	if !strings.Contains(out, `"status":"timeout"`) {
		t.Fatalf("nobody with session claude-1: %s", out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("nobody's request ran under root's rule")
	}
	// The rule's user does get it (by name only: relative to the cwd "/").
	resp := d.Run(&proto.Request{Pipeline: [][]string{{"touch", "asudo-rule-user-ok"}}, Session: "claude-1", Cwd: d.Dir})
	t.Cleanup(func() { os.Remove(filepath.Join(d.Dir, "asudo-rule-user-ok")) })
	if resp.Status != proto.StatusOK {
		t.Fatalf("root with session claude-1: %s %q", resp.Status, resp.Message)
	}
}

// TestE2ELintWarningsLogged: the daemon logs the rule linter's warnings when
// it starts (issue 10, H4).
func TestE2ELintWarningsLogged(t *testing.T) {
	daemontest.RequireRoot(t)
	d := daemontest.Start(t, daemontest.Config{Rules: `
[[rule]]
name = "any apt query"
action = "allow"
match = ["apt", "**"]
`})
	logs := d.Logs.String()
	if !strings.Contains(logs, `msg="rule linter: this allow rule may give root away" rule="rule 1 (\"any apt query\")"`) ||
		!strings.Contains(logs, `\"**\" on \"apt\" amounts to root`) {
		t.Fatalf("no linter warning in the daemon's log:\n%s", logs)
	}
}
