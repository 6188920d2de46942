package daemon_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2ERuleAllowConditions sends, over the real socket to the real daemon,
// requests that an allow rule matches as strings but must not allow (issue
// 10's H3, M2 and C1): each must be asked about (here: time out, since no
// human is connected) and not run, while the same rule still allows the
// request it was written for.
func TestE2ERuleAllowConditions(t *testing.T) {
	t.Parallel()
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
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "200ms", Rules: `
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

[[rule]]
name = "cat"
action = "allow"
match = ["cat"]

[[rule]]
name = "tr with stdin"
action = "allow"
match = ["tr", "a-z", "A-Z"]
stdin = true
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
		{"stdin without the rule saying so asks",
			proto.Request{Pipeline: [][]string{{"cat"}}, Stdin: []byte("agent text\n")}, proto.StatusTimeout, ""},
		{"the same rule allows the request without stdin",
			proto.Request{Pipeline: [][]string{{"cat"}}}, proto.StatusOK, ""},
		{"stdin with the rule saying so is allowed",
			proto.Request{Pipeline: [][]string{{"tr", "a-z", "A-Z"}}, Stdin: []byte("agent text\n")}, proto.StatusOK, "AGENT TEXT"},
		{"stdin flows down the pipeline: every stage's rule must say stdin",
			proto.Request{Pipeline: [][]string{{"tr", "a-z", "A-Z"}, {"cat"}}, Stdin: []byte("agent text\n")}, proto.StatusTimeout, ""},
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
			if tt.status == proto.StatusTimeout && !strings.Contains(d.Logs.String(), `msg="rules ask a human" id=`+resp.ID+` reason="needs approval: `) {
				t.Errorf("the daemon's log does not say why request %s was asked about", resp.ID)
			}
		})
	}
}

// TestE2ERuleUser is issue 10's L5 over the wire: a peer of another user
// that sends a matching session label does not satisfy a rule restricted to
// a user, while that user does.
func TestE2ERuleUser(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	g, err := user.LookupGroup("nogroup")
	if err != nil {
		t.Skip("no group nogroup")
	}
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "200ms", SocketGroup: g.Name, Rules: `
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

// addUser creates a user with primary group group for the test and deletes
// it when the test ends. useradd fails when another process holds the lock
// on /etc/passwd, so it is retried with backoff.
func addUser(t *testing.T, group string) string {
	t.Helper()
	if _, err := exec.LookPath("useradd"); err != nil {
		t.Skip("no useradd")
	}
	name := fmt.Sprintf("asudo-rules-%d", rand.IntN(1_000_000))
	var out []byte
	var err error
	for delay := 50 * time.Millisecond; delay < 10*time.Second; delay *= 2 {
		out, err = exec.Command("useradd", "-M", "-N", "-g", group, "-s", "/usr/sbin/nologin", name).CombinedOutput()
		if err == nil {
			break
		}
		time.Sleep(delay) // backoff on the passwd lock; not synchronisation
	}
	if err != nil {
		t.Fatalf("useradd %s: %v\n%s", name, err, out)
	}
	t.Cleanup(func() {
		for delay := 50 * time.Millisecond; delay < 10*time.Second; delay *= 2 {
			if exec.Command("userdel", name).Run() == nil {
				return
			}
			time.Sleep(delay)
		}
		t.Errorf("userdel %s failed", name)
	})
	return name
}

// TestE2ERuleNamedUser is L5 with two ordinary users: a rule with user =
// "<alice>" and a session pattern allows alice, and not another user who
// sends the same session label.
func TestE2ERuleNamedUser(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	if testing.Short() {
		t.Skip("creates a user")
	}
	g, err := user.LookupGroup("nogroup")
	if err != nil {
		t.Skip("no group nogroup")
	}
	alice := addUser(t, g.Name)
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "200ms", SocketGroup: g.Name, Rules: fmt.Sprintf(`
[[rule]]
name = "alice's claude sessions"
action = "allow"
match = ["id", "-un"]
session = "claude-*"
user = %q
privileged = false
`, alice)})
	req := line(map[string]any{"pipeline": [][]string{{"id", "-un"}}, "privileged": false, "session": "claude-1"})
	if out := sendAs(t, d, "nobody", req); !strings.Contains(out, `"status":"timeout"`) {
		t.Fatalf("nobody with alice's session label: %s", out)
	}
	out := sendAs(t, d, alice, line(map[string]any{"pipeline": [][]string{{"id", "-un"}}, "privileged": false, "session": "claude-1"}))
	resp, err := proto.DecodeResponse([]byte(out))
	if err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if resp.Status != proto.StatusOK || string(resp.Stdout) != alice+"\n" {
		t.Fatalf("%s: %s %q %q", alice, resp.Status, resp.Stdout, resp.Message)
	}
}

// TestE2ELintWarningsLogged: the daemon logs the rule linter's warnings when
// it starts (issue 10, H4).
func TestE2ELintWarningsLogged(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	d := daemontest.Start(t, daemontest.Config{Rules: `
[[rule]]
name = "any apt query"
action = "allow"
match = ["apt", "**"]
`})
	// The log is copied from the daemon's stderr as it comes: wait for the
	// line rather than read what has arrived when Start returns.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logs, err := d.Logs.Wait(ctx, `msg="rule linter: this allow rule may give root away" rule="rule 1 (\"any apt query\")"`)
	if err != nil || !strings.Contains(logs, `\"**\" on \"apt\" amounts to root`) {
		t.Fatalf("no linter warning in the daemon's log: %v\n%s", err, logs)
	}
}
