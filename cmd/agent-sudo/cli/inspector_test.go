//go:build inspector

package cli

// The MCP Inspector check runs the reference MCP client, fetched from the
// npm registry, against "agent-sudo mcp". It needs the network the first
// time, so it is not part of go test ./...: make mcp-inspector runs it
// (go test -tags inspector), and .ci/run calls that target.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// inspectorVersion is the MCP Inspector that test/mcp-inspector pins.
const inspectorVersion = "2.12.0"

// installInspector installs the pinned MCP Inspector with npm ci, once per
// lockfile, into the user's cache directory, and returns the directory to
// run npx in.
func installInspector(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "..", "test", "mcp-inspector")
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(pkg, lock...))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	final := filepath.Join(cache, "agent-sudo", "mcp-inspector-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(final, ".installed")); err == nil {
		return final
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(final), "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	// No install scripts: the CLI needs none. The Inspector declares a
	// newer node than some distributions ship; its CLI runs on node 20.
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--engine-strict=false")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in a copy of %s: %v\n%s", src, err, out)
	}
	t.Logf("npm ci installed the MCP Inspector in %v", time.Since(start).Round(100*time.Millisecond))
	if err := os.WriteFile(filepath.Join(tmp, ".installed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, final); err != nil {
		// Another run installed it first.
		if _, serr := os.Stat(filepath.Join(final, ".installed")); serr != nil {
			t.Fatalf("move the installation into place: %v", err)
		}
	}
	return final
}

// TestMCPInspector drives "agent-sudo mcp" with the MCP Inspector's CLI,
// the reference client, against a real daemon.
func TestMCPInspector(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	for _, tool := range []string{"node", "npm", "npx"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the MCP Inspector check needs node, npm and npx; %s is not in PATH (.ci/run installs them)", tool)
		}
	}
	if os.Getenv("AGENT_SUDO_SKIP_INSPECTOR") != "" {
		t.Skip("AGENT_SUDO_SKIP_INSPECTOR is set")
	}
	// The pinned Inspector declares node >= 22.19 but its CLI runs on node
	// 20; Debian 12's node 18 cannot run it.
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		t.Fatalf("node --version: %v", err)
	}
	var major int
	if _, err := fmt.Sscanf(string(out), "v%d.", &major); err != nil || major < 20 {
		t.Skipf("the MCP Inspector %s needs node 20 or later; this is node %s", inspectorVersion, strings.TrimSpace(string(out)))
	}
	dir := installInspector(t)
	_, bin := daemontest.Binaries(t)
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "1s", Rules: daemontest.AskRules})

	inspect := func(t *testing.T, args ...string) (string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		args = append([]string{"--no-install", "mcp-inspector", "--cli"}, args...)
		args = append(args, "--", bin, "mcp", "--socket", d.Socket, "--session", "inspector")
		cmd := exec.CommandContext(ctx, "npx", args...)
		cmd.Dir = dir
		cmd.Env = e2eEnv()
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("npx %q: %v\n%s", args, err, stderr.String())
		}
		if ctx.Err() != nil {
			t.Fatalf("npx %q did not finish within 2 minutes\n%s", args, stderr.String())
		}
		t.Logf("npx %s: exit %d\nstderr: %s", strings.Join(args, " "), cmd.ProcessState.ExitCode(), stderr.String())
		return stdout.String(), cmd.ProcessState.ExitCode()
	}

	t.Run("version", func(t *testing.T) {
		out, code := inspect(t, "--version")
		if code != 0 || strings.TrimSpace(out) != inspectorVersion {
			t.Errorf("mcp-inspector --version: %d %q, want %s", code, out, inspectorVersion)
		}
	})

	t.Run("tools/list", func(t *testing.T) {
		// --strict also checks the schema's portability across model APIs.
		out, code := inspect(t, "--method", "tools/list", "--strict")
		var res struct {
			Tools []struct {
				Name        string `json:"name"`
				InputSchema struct {
					Properties map[string]any `json:"properties"`
					Required   []string       `json:"required"`
				} `json:"inputSchema"`
			} `json:"tools"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 {
			t.Fatalf("tools/list: exit %d, %v\n%s", code, err, out)
		}
		if len(res.Tools) != 1 || res.Tools[0].Name != "execute" {
			t.Fatalf("tools/list: %s", out)
		}
		for _, p := range []string{"argv", "pipeline", "reason", "env", "privileged", "forward_agent", "cwd"} {
			if _, ok := res.Tools[0].InputSchema.Properties[p]; !ok {
				t.Errorf("tools/list: no property %s", p)
			}
		}
	})

	call := func(t *testing.T, toolArgs ...string) (text string, isError bool, code int) {
		t.Helper()
		out, code := inspect(t, append([]string{"--method", "tools/call", "--tool-name", "execute", "--tool-arg"}, toolArgs...)...)
		// The result comes first; an error result adds a line after it.
		var res struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		}
		if err := json.NewDecoder(strings.NewReader(out)).Decode(&res); err != nil || len(res.Content) != 1 {
			t.Fatalf("tools/call %q: exit %d, %v\n%s", toolArgs, code, err, out)
		}
		return res.Content[0].Text, res.IsError, code
	}

	t.Run("tools/call allowed", func(t *testing.T) {
		text, isError, code := call(t, `argv=["echo","hello from the inspector"]`, "reason=inspector check")
		if code != 0 || isError || !strings.Contains(text, "stdout (25 bytes):\nhello from the inspector\n") {
			t.Errorf("exit %d, isError %v:\n%s", code, isError, text)
		}
	})

	t.Run("tools/call pipeline", func(t *testing.T) {
		text, isError, code := call(t, `pipeline=[["echo","abc"],["tr","a-z","A-Z"]]`, "reason=inspector check", "privileged=true")
		if code != 0 || isError || !strings.Contains(text, "stdout (4 bytes):\nABC\n") {
			t.Errorf("exit %d, isError %v:\n%s", code, isError, text)
		}
	})

	t.Run("tools/call denied", func(t *testing.T) {
		text, isError, code := call(t, `argv=["rm","-rf","/nonexistent"]`, "reason=inspector check")
		if code == 0 || !isError || !strings.Contains(text, "status: denied (the command did not run)") {
			t.Errorf("exit %d, isError %v:\n%s", code, isError, text)
		}
	})

	t.Run("tools/call without a reason", func(t *testing.T) {
		text, isError, _ := call(t, `argv=["echo","x"]`)
		if !isError || !strings.Contains(text, "reason is required") {
			t.Errorf("isError %v:\n%s", isError, text)
		}
	})
}
