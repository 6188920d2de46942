// Package agents runs real coding agents (Claude Code) against a stand-in
// model and a real agent-sudod. The tests skip themselves unless
// AGENT_SUDO_TEST_CLAUDE names the claude binary; make agents-test installs
// it from package-lock.json and sets it.
package agents

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// envClaude names the claude binary; unset, the tests skip.
const envClaude = "AGENT_SUDO_TEST_CLAUDE"

func TestMain(m *testing.M) {
	daemontest.Main(m)
}

// needClaude returns the claude binary's path, and skips the test when
// none is given.
func needClaude(t *testing.T) string {
	t.Helper()
	return needAgent(t, envClaude)
}

// claudeRun is one run of claude -p against a stand-in model.
type claudeRun struct{ *agentRun }

// runClaude runs the real Claude Code once (startClaude) and waits for it
// to end.
func runClaude(t *testing.T, socket string, extraEnv []string, script ...step) *claudeRun {
	t.Helper()
	r := startClaude(t, socket, extraEnv, script...)
	r.wait()
	return r
}

// startClaude starts the real Claude Code once (startAgent), with
// agent-sudo mcp as its only MCP server (the configuration docs/agents.md
// gives) against the daemon at socket, the shim first in PATH, and the
// stand-in model answering with script.
func startClaude(t *testing.T, socket string, extraEnv []string, script ...step) *claudeRun {
	t.Helper()
	claude := needClaude(t)
	_, cli := daemontest.Binaries(t)
	home := t.TempDir()
	shimDir := installShim(t, cli, home)
	config := filepath.Join(home, "mcp.json")
	cfg := map[string]any{"mcpServers": map[string]any{"agent-sudo": map[string]any{
		"type":    "stdio",
		"command": cli,
		"args":    []string{"mcp", "--socket", socket, "--session", "claude-e2e"},
	}}}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(config, b, 0o600); err != nil {
		t.Fatal(err)
	}
	model := newStandIn(t, script...)
	env := []string{
		"PATH=" + shimDir + ":" + os.Getenv("PATH"),
		"HOME=" + home,
		"ANTHROPIC_BASE_URL=" + model.URL(),
		"ANTHROPIC_API_KEY=sk-ant-dummy",
		"ENABLE_TOOL_SEARCH=false",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"AGENT_SUDO_SOCKET=" + socket,
		"AGENT_SUDO_SESSION=claude-e2e-bash",
	}
	return &claudeRun{startAgent(t, "claude", model, home, append(env, extraEnv...), claude,
		"-p", "do what the test says",
		"--mcp-config", config, "--strict-mcp-config",
		"--allowedTools", "mcp__agent-sudo__execute,Bash",
		"--output-format", "text")}
}

// result returns the text of the only tool_result in conversation request
// i (the answer to the tool call of step i-1), and whether it is an error.
func (r *claudeRun) result(t *testing.T, i int) (string, bool) {
	t.Helper()
	res := r.answer(t, i, toolResults, "tool results")
	isError, _ := res["is_error"].(bool)
	return resultText(res), isError
}

// execute is a step that calls agent-sudo's execute tool.
func execute(args map[string]any) step {
	return step{Tool: "mcp__agent-sudo__execute", Input: args}
}

// TestClaudeCode has the real Claude Code call agent-sudo mcp against the
// real daemon: an allowed command, a denied one, a pipeline, and sudo
// through the shim from its Bash tool with stdin; the stand-in model
// checks what Claude Code sent back after each tool call.
func TestClaudeCode(t *testing.T) {
	needClaude(t)
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AskRules})
	file := filepath.Join(d.Dir, "written-by-tee")
	r := runClaude(t, d.Socket, nil,
		execute(map[string]any{"argv": []string{"echo", "hello from root"}, "reason": "an allowed command"}),
		execute(map[string]any{"argv": []string{"rm", "-rf", "/nonexistent-agent-sudo-test"}, "reason": "a denied command"}),
		execute(map[string]any{"pipeline": [][]string{{"printf", "b\\na\\n"}, {"sort"}}, "reason": "a pipeline"}),
		step{Tool: "Bash", Input: map[string]any{"command": "echo x | sudo tee " + file, "description": "write a file as root"}},
		step{Text: "all done"})
	if r.err != nil || r.output() != "all done" {
		t.Fatalf("claude -p = %v, stdout %q; want the final text", r.err, r.output())
	}

	if text, isError := r.result(t, 1); isError || !strings.Contains(text, "status: ok") || !strings.Contains(text, "hello from root\n") {
		t.Errorf("allowed command: the model saw (isError %v):\n%s", isError, text)
	}
	if text, isError := r.result(t, 2); !isError || !strings.Contains(text, "status: denied (the command did not run)") || !strings.Contains(text, "no rm") {
		t.Errorf("denied command: the model saw (isError %v):\n%s\nwant isError and the denial naming the rule", isError, text)
	}
	if text, isError := r.result(t, 3); isError || !strings.Contains(text, "stdout (4 bytes):\na\nb\n") {
		t.Errorf("pipeline: the model saw (isError %v):\n%s", isError, text)
	}
	if text, isError := r.result(t, 4); isError || strings.TrimSpace(text) != "x" {
		t.Errorf("sudo tee through the shim: the model saw (isError %v):\n%s", isError, text)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "x\n" {
		t.Errorf("the file sudo tee wrote holds %q (%v), want \"x\\n\"", b, err)
	}
	audit := readAudit(t, d)
	for _, want := range []string{`"session":"claude-e2e"`, `"session":"claude-e2e-bash"`, file} {
		if !bytes.Contains(audit, []byte(want)) {
			t.Errorf("the audit log does not contain %s", want)
		}
	}
}

// TestClaudeCodeCancels has Claude Code give up on a call that waits for a
// human (its MCP tool timeout, set short): the request is withdrawn, never
// runs, and the model is told the call failed.
func TestClaudeCodeCancels(t *testing.T) {
	needClaude(t)
	t.Parallel()
	d, console, marker := unanswered(t)
	r := runClaude(t, d.Socket, []string{"MCP_TOOL_TIMEOUT=5000"},
		execute(map[string]any{"argv": []string{"touch", marker}, "reason": "waits for a human who never answers"}),
		step{Text: "gave up"})
	expectWithdrawn(t, console)
	if r.err != nil || r.output() != "gave up" {
		t.Errorf("claude -p = %v, stdout %q; want the final text", r.err, r.output())
	}
	// docs/agents.md quotes this text (Claude Code's own, of the pinned
	// version).
	if text, isError := r.result(t, 1); !isError || !strings.Contains(text, `MCP server "agent-sudo" tool "execute" timed out after 5s`) {
		t.Errorf("the model saw (isError %v):\n%s\nwant the timeout error docs/agents.md quotes", isError, text)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the withdrawn command ran")
	}
}

// TestClaudeCodeConsoleApproves has a human approve Claude Code's call at
// the real console in tmux: the request waits (no rule allows touch), the
// console shows its command, the key "a" allows it, the command runs and
// Claude Code's tool call gets its result.
func TestClaudeCodeConsoleApproves(t *testing.T) {
	needClaude(t)
	t.Parallel()
	d, c, marker := attended(t)
	r := startClaude(t, d.Socket, nil,
		execute(map[string]any{"argv": []string{"touch", marker}, "reason": "a human approves this"}),
		step{Text: "approved"})
	c.approve("touch " + marker)
	r.wait()
	if r.err != nil || r.output() != "approved" {
		t.Fatalf("claude -p = %v, stdout %q; want the final text", r.err, r.output())
	}
	if text, isError := r.result(t, 1); isError || !strings.Contains(text, "status: ok") {
		t.Errorf("the model saw (isError %v):\n%s\nwant status ok", isError, text)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
	audit := readAudit(t, d)
	if !bytes.Contains(audit, []byte(`"by":"console uid=0`)) {
		t.Errorf("the audit log does not record the console's decision:\n%s", audit)
	}
}
