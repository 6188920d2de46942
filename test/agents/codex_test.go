package agents

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
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
// human approves at agent-sudo's console instead).
const codexConfig = `model = "stand-in"
model_provider = "stand-in"

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

// startCodex starts the real Codex CLI once (codex exec, startAgent) with
// a fresh CODEX_HOME holding codexConfig for the daemon at socket, a tool
// timeout of toolTimeout seconds, and the stand-in model answering with
// script.
func startCodex(t *testing.T, socket string, toolTimeout int, script ...step) *codexRun {
	t.Helper()
	codex := needCodex(t)
	_, cli := daemontest.Binaries(t)
	home := t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	if err := os.Mkdir(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	model := newStandIn(t, script...)
	cfg := fmt.Sprintf(codexConfig, model.URL()+"/v1", cli, socket, toolTimeout)
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"CODEX_HOME=" + codexHome,
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
	r := startCodex(t, d.Socket, 60,
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
	r := startCodex(t, d.Socket, 120,
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
	r := startCodex(t, d.Socket, 3,
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
