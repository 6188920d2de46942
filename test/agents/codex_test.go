package agents

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// envCodex names the codex binary; unset, the Codex tests skip.
const envCodex = "AGENT_SUDO_TEST_CODEX"

// needCodex returns the codex binary's path, and skips the test when none
// is given.
func needCodex(t *testing.T) string {
	t.Helper()
	return needAgent(t, envCodex)
}

// codexConfig is the CODEX_HOME/config.toml of the tests (docs/agents.md
// gives it): the stand-in as a custom model provider speaking the
// Responses API, and agent-sudo mcp as the MCP server, its tool approved
// in advance (Codex's own approval prompt would stop codex exec: the
// human approves at agent-sudo's console instead). The sandbox settings
// (codexSandbox.config) go before the tables.
const codexConfig = `model = "stand-in"
model_provider = "stand-in"
approval_policy = "never"
%s

[model_providers.stand-in]
name = "agent-sudo test stand-in"
base_url = %q
wire_api = "responses"

[mcp_servers.agent-sudo]
command = %q
args = ["mcp", "--socket", %q, "--session", "codex-e2e"]
default_tools_approval_mode = "approve"
tool_timeout_sec = %d
`

// codexRun is one run of codex exec against a stand-in model.
type codexRun struct{ *agentRun }

// codexSandbox is how Codex runs the model's shell commands.
type codexSandbox struct {
	mode    string // sandbox_mode
	network bool   // sandbox_workspace_write.network_access
	// socketProfile replaces sandbox_mode with the permission profile
	// agent-sudo (default_permissions): :workspace, and the daemon's socket
	// allowed in its network.unix_sockets.
	socketProfile bool
	// loginShell leaves allow_login_shell at its default, true: the shell
	// tool runs bash -lc, which reads /etc/profile; on Debian that sets
	// PATH anew and drops the shim's directory. Without it the tests set
	// allow_login_shell = false, and the shell tool runs bash -c.
	loginShell bool
}

// readOnly is codex exec's default sandbox, the MCP tests'.
var readOnly = codexSandbox{mode: "read-only"}

// config is s as lines of config.toml for the daemon at socket: keys,
// then the tables of a permission profile.
func (s codexSandbox) config(socket string) string {
	c := ""
	if s.mode != "" {
		c += fmt.Sprintf("sandbox_mode = %q\n", s.mode)
	}
	if s.network {
		c += "sandbox_workspace_write.network_access = true\n"
	}
	if s.socketProfile {
		c += `default_permissions = "agent-sudo"` + "\n"
	}
	if !s.loginShell {
		c += "allow_login_shell = false\n"
	}
	if s.socketProfile {
		c += fmt.Sprintf("\n[permissions.agent-sudo]\nextends = \":workspace\"\n\n[permissions.agent-sudo.network.unix_sockets]\n%q = \"allow\"\n", socket)
	}
	return c
}

// String names s for a subtest: the sandbox mode and its options.
func (s codexSandbox) String() string {
	name := s.mode
	if s.socketProfile {
		name = "a profile allowing the socket"
	}
	if s.network {
		name += " with network_access"
	}
	if s.loginShell {
		name += " in a login shell"
	}
	return name
}

// startCodex starts the real Codex CLI once (codex exec, startAgent) with
// a fresh CODEX_HOME holding codexConfig for the daemon at socket, the
// sandbox settings sandbox, a tool timeout of toolTimeout seconds, and the
// stand-in model answering with script; the shim is first in its PATH
// (installShim), for the daemon at socket and the session
// codex-e2e-shell.
func startCodex(t *testing.T, socket string, sandbox codexSandbox, toolTimeout int, script ...step) *codexRun {
	t.Helper()
	codex := needCodex(t)
	_, cli := daemontest.Binaries(t)
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	if err := os.Mkdir(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	shimDir := installShim(t, cli, home)
	model := newStandIn(t, script...)
	cfg := fmt.Sprintf(codexConfig, sandbox.config(socket), model.URL()+"/v1", cli, socket, toolTimeout)
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + shimDir + ":" + os.Getenv("PATH"),
		"HOME=" + home,
		"CODEX_HOME=" + codexHome,
		"AGENT_SUDO_SOCKET=" + socket,
		"AGENT_SUDO_SESSION=codex-e2e-shell",
	}
	return &codexRun{startAgent(t, "codex", model, home, env, codex, "exec", "--skip-git-repo-check", "do what the test says")}
}

// result returns the text of the only function_call_output in conversation
// request i (the answer to the tool call of step i-1).
func (r *codexRun) result(t *testing.T, i int) string {
	t.Helper()
	return outputText(r.answer(t, i, functionOutputs, "function call outputs"))
}

// codexExecute is a step that calls agent-sudo's execute tool as Codex
// offers it: the function execute in the namespace mcp__agent_sudo.
func codexExecute(args map[string]any) step {
	return step{Namespace: "mcp__agent_sudo", Tool: "execute", Input: args}
}

// TestCodex has the real Codex CLI call agent-sudo mcp against the real
// daemon: an allowed command, a denied one, a pipeline, and a command that
// reads stdin (tee writing a file as root); the stand-in model checks what
// Codex sent back after each tool call.
func TestCodex(t *testing.T) {
	needCodex(t)
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AskRules})
	file := filepath.Join(d.Dir, "written-by-tee")
	r := startCodex(t, d.Socket, readOnly, 60,
		codexExecute(map[string]any{"argv": []string{"echo", "hello from root"}, "reason": "an allowed command"}),
		codexExecute(map[string]any{"argv": []string{"rm", "-rf", "/nonexistent-agent-sudo-test"}, "reason": "a denied command"}),
		codexExecute(map[string]any{"pipeline": [][]string{{"printf", "b\\na\\n"}, {"sort"}}, "reason": "a pipeline"}),
		codexExecute(map[string]any{"argv": []string{"tee", file}, "stdin": "x\n", "reason": "write a file as root"}),
		step{Text: "all done"})
	r.wait()
	if r.err != nil || r.output() != "all done" {
		t.Fatalf("codex exec = %v, stdout %q; want the final text", r.err, r.output())
	}
	if text := r.result(t, 1); !strings.Contains(text, "status: ok") || !strings.Contains(text, "hello from root\n") {
		t.Errorf("allowed command: the model saw:\n%s", text)
	}
	if text := r.result(t, 2); !strings.Contains(text, "status: denied (the command did not run)") || !strings.Contains(text, "no rm") {
		t.Errorf("denied command: the model saw:\n%s\nwant the denial naming the rule", text)
	} else {
		t.Logf("denied command: the model saw:\n%s", text)
	}
	if text := r.result(t, 3); !strings.Contains(text, "stdout (4 bytes):\na\nb\n") {
		t.Errorf("pipeline: the model saw:\n%s", text)
	}
	if text := r.result(t, 4); !strings.Contains(text, "status: ok") {
		t.Errorf("tee with stdin: the model saw:\n%s", text)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "x\n" {
		t.Errorf("the file tee wrote holds %q (%v), want \"x\\n\"", b, err)
	}
	audit := readAudit(t, d)
	if !bytes.Contains(audit, []byte(`"session":"codex-e2e"`)) {
		t.Errorf("the audit log does not contain the session codex-e2e")
	}
}

// TestCodexConsoleApproves has a human approve Codex's call at the real
// console in tmux.
func TestCodexConsoleApproves(t *testing.T) {
	needCodex(t)
	t.Parallel()
	d, c, marker := attended(t)
	r := startCodex(t, d.Socket, readOnly, 120,
		codexExecute(map[string]any{"argv": []string{"touch", marker}, "reason": "a human approves this"}),
		step{Text: "approved"})
	c.approve("touch " + marker)
	r.wait()
	if r.err != nil || r.output() != "approved" {
		t.Fatalf("codex exec = %v, stdout %q; want the final text", r.err, r.output())
	}
	if text := r.result(t, 1); !strings.Contains(text, "status: ok") {
		t.Errorf("the model saw:\n%s\nwant status ok", text)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
}

// TestCodexCancels has Codex give up on a call that waits for a human (its
// tool_timeout_sec, set short): Codex cancels the call, the request is
// withdrawn and never runs, and the same MCP server goes on serving the
// next call.
func TestCodexCancels(t *testing.T) {
	needCodex(t)
	t.Parallel()
	d, console, marker := unanswered(t)
	r := startCodex(t, d.Socket, readOnly, 3,
		codexExecute(map[string]any{"argv": []string{"touch", marker}, "reason": "waits for a human who never answers"}),
		codexExecute(map[string]any{"argv": []string{"echo", "still here"}, "reason": "the server goes on"}),
		step{Text: "gave up"})
	r.wait()
	// The console's messages wait in its socket until read.
	expectWithdrawn(t, console)
	if r.err != nil || r.output() != "gave up" {
		t.Errorf("codex exec = %v, stdout %q; want the final text", r.err, r.output())
	}
	// docs/agents.md quotes this text (Codex's own, of the pinned version).
	if text := r.result(t, 1); !strings.Contains(text, "timed out awaiting tools/call after 3s") {
		t.Errorf("the cancelled call: the model saw:\n%s\nwant the timeout text docs/agents.md quotes", text)
	}
	if text := r.result(t, 2); !strings.Contains(text, "still here") {
		t.Errorf("the call after the cancelled one: the model saw:\n%s", text)
	}
	// The withdrawal came from the cancellation, not from Codex ending the
	// server: the audit log has it before the next call's request.
	audit := readAudit(t, d)
	withdrawn := bytes.Index(audit, []byte(`"verdict":"withdrawn"`))
	next := bytes.Index(audit, []byte(`"still here"`))
	if withdrawn < 0 || next < 0 || withdrawn > next {
		t.Errorf("the audit log does not have the withdrawal before the next request:\n%s", audit)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the withdrawn command ran")
	}
}

// codexShell is a step that calls Codex's own shell tool, exec_command,
// with the shell command cmd.
func codexShell(cmd string) step {
	return step{Tool: "exec_command", Input: map[string]any{"cmd": cmd}}
}

// The outcomes of sudo through the shim in Codex's shell tool.
const (
	shimReaches  = iota // the shim reaches the daemon
	shimBlocked         // the sandbox refuses the shim's connect
	shimBypassed        // the login shell dropped the shim from PATH
)

// TestCodexShim has the model run echo x | sudo tee FILE with Codex's own
// shell tool and the shim first in PATH, in each sandbox mode, and call
// the MCP tool after it. Where Codex's sandbox lets the shim connect to
// the daemon's socket (danger-full-access, and workspace-write with
// network access), stdin reaches the command, the file holds x and the
// audit log has the request under the shim's session; where it does not
// (read-only, codex exec's default, workspace-write, and a permission
// profile that extends :workspace and allows the daemon's socket), the
// model sees the shim's error and exit status 69 and nothing reaches the
// daemon. In a
// login shell (allow_login_shell left at true) on a system whose
// /etc/profile sets PATH, as Debian's does, sudo is the system's and the
// daemon gets nothing. The MCP tool works in every mode.
func TestCodexShim(t *testing.T) {
	needCodex(t)
	const (
		fullAccess = `danger-full-access`
		workspace  = `workspace-write \[[^\n]*\]`
	)
	for _, tc := range []struct {
		sandbox codexSandbox
		outcome int
		banner  string // the sandbox Codex says it applies, a regular expression
	}{
		{codexSandbox{mode: "danger-full-access"}, shimReaches, fullAccess},
		{codexSandbox{mode: "workspace-write", network: true}, shimReaches, workspace + ` \(network access enabled\)`},
		{codexSandbox{mode: "workspace-write"}, shimBlocked, workspace},
		{readOnly, shimBlocked, `read-only`},
		{codexSandbox{socketProfile: true}, shimBlocked, workspace},
		{codexSandbox{mode: "danger-full-access", loginShell: true}, shimBypassed, fullAccess},
	} {
		t.Run(tc.sandbox.String(), func(t *testing.T) {
			realSudo := ""
			if tc.outcome == shimBypassed {
				realSudo = needProfileSettingPath(t)
			}
			t.Parallel()
			d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AskRules})
			file := filepath.Join(d.Dir, "written-by-tee")
			cmd := "echo x | sudo tee " + file
			if tc.outcome == shimBypassed {
				cmd = "command -v sudo; " + cmd
			}
			r := startCodex(t, d.Socket, tc.sandbox, 60,
				codexShell(cmd),
				codexExecute(map[string]any{"argv": []string{"echo", "mcp works"}, "reason": "the MCP tool in this sandbox mode"}),
				step{Text: "all done"})
			r.wait()
			if r.err != nil || r.output() != "all done" {
				t.Fatalf("codex exec = %v, stdout %q; want the final text", r.err, r.output())
			}
			if banner := `(?m)^sandbox: ` + tc.banner + `$`; !regexp.MustCompile(banner).MatchString(r.stderr.String()) {
				t.Errorf("codex exec's stderr does not match %s: the settings were not applied as meant", banner)
			}
			audit := readAudit(t, d)
			shell := r.result(t, 1)
			// docs/agents.md quotes what the model sees in each mode.
			switch tc.outcome {
			case shimReaches:
				if !strings.Contains(shell, "Process exited with code 0\n") || !strings.HasSuffix(shell, "Output:\nx\n") {
					t.Errorf("sudo tee through the shim: the model saw:\n%s\nwant exit code 0 and the output x", shell)
				}
				if b, err := os.ReadFile(file); err != nil || string(b) != "x\n" {
					t.Errorf("the file sudo tee wrote holds %q (%v), want \"x\\n\"", b, err)
				}
				for _, want := range []string{`"session":"codex-e2e-shell"`, `"argv":["tee","` + file + `"]`} {
					if !bytes.Contains(audit, []byte(want)) {
						t.Errorf("the audit log does not contain %s:\n%s", want, audit)
					}
				}
			case shimBlocked:
				want := "Process exited with code 69\n"
				msg := "Output:\nagent-sudo: cannot reach agent-sudod at " + d.Socket + ": operation not permitted; a sandbox or security policy (seccomp, Landlock, AppArmor, SELinux) refused the connection, not the socket's permissions\nagent-sudo: hint: run the agent where it may connect to " + d.Socket + "\n"
				if !strings.Contains(shell, want) || !strings.HasSuffix(shell, msg) {
					t.Errorf("sudo tee through the shim: the model saw:\n%s\nwant %q and %q", shell, want, msg)
				} else {
					t.Logf("sudo tee through the shim: the model saw:\n%s", shell)
				}
				if _, err := os.Stat(file); err == nil {
					t.Error("the file was written, though the shim could not reach the daemon")
				}
			case shimBypassed:
				if !strings.Contains(shell, "Output:\n"+realSudo+"\n") {
					t.Errorf("sudo in a login shell: the model saw:\n%s\nwant command -v sudo to find the system's %s", shell, realSudo)
				} else {
					t.Logf("sudo in a login shell: the model saw:\n%s", shell)
				}
			}
			if tc.outcome != shimReaches && bytes.Contains(audit, []byte(`"session":"codex-e2e-shell"`)) {
				t.Errorf("the audit log has a request of the shim's session:\n%s", audit)
			}
			if text := r.result(t, 2); !strings.Contains(text, "status: ok") || !strings.Contains(text, "mcp works\n") {
				t.Errorf("the MCP tool: the model saw:\n%s", text)
			}
		})
	}
}

// needProfileSettingPath skips the test unless /etc/profile sets PATH (as
// Debian's does) and a sudo is found there; it returns that sudo's path.
func needProfileSettingPath(t *testing.T) string {
	t.Helper()
	profile, err := os.ReadFile("/etc/profile")
	if err != nil || !regexp.MustCompile(`(?m)^\s*PATH=`).Match(profile) {
		t.Skipf("/etc/profile does not set PATH (%v): a login shell keeps the shim's directory here", err)
	}
	out, err := exec.Command("sh", "-c", ". /etc/profile; command -v sudo").Output()
	if err != nil {
		t.Skipf("no sudo in the PATH /etc/profile sets: %v", err)
	}
	return strings.TrimSpace(string(out))
}
