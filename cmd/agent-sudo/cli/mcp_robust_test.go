package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/mcptest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// stdioMCP is a real "agent-sudo mcp" process spoken to in raw JSON-RPC
// lines (mcptest.Raw), whose exit status and stderr the test reads.
type stdioMCP struct {
	*mcptest.Raw
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.Closer
	stderr bytes.Buffer
	exited chan error // receives cmd.Wait's result
}

// startStdioMCP starts "bin mcp args...". When the test ends, a process
// still running has its stdin closed and must exit within mcptest.Timeout.
func startStdioMCP(t *testing.T, bin string, args ...string) *stdioMCP {
	t.Helper()
	m := &stdioMCP{t: t, cmd: exec.Command(bin, append([]string{"mcp"}, args...)...), exited: make(chan error, 1)}
	m.cmd.Env = e2eEnv()
	m.cmd.Stderr = &m.stderr
	stdin, err := m.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m.stdin = stdin
	m.Raw = mcptest.New(t, stdin, stdout)
	t.Cleanup(func() {
		if m.cmd.ProcessState != nil {
			return
		}
		m.stdin.Close()
		if exited, _ := m.wait(); !exited {
			t.Error("agent-sudo mcp did not exit when its stdin closed")
		}
	})
	return m
}

// wait waits at most mcptest.Timeout for the process to exit, and kills it
// when it does not (exited false).
func (m *stdioMCP) wait() (exited bool, err error) {
	go func() { m.exited <- m.cmd.Wait() }()
	select {
	case err := <-m.exited:
		return true, err
	case <-time.After(mcptest.Timeout):
		_ = m.cmd.Process.Kill()
		return false, <-m.exited
	}
}

// close closes stdin and returns the rest of the output and the exit
// status, waiting at most mcptest.Timeout.
func (m *stdioMCP) close() (string, int) {
	m.t.Helper()
	rest := strings.Join(m.Rest(), "")
	exited, err := m.wait()
	if !exited {
		m.t.Fatal("agent-sudo mcp did not exit within 30s of its stdin closing")
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		m.t.Fatal(err)
	}
	return rest, m.cmd.ProcessState.ExitCode()
}

// TestMCPStdioRobust runs the real "agent-sudo mcp" against the real
// daemon: a line that is not JSON is answered with -32700 and the session
// goes on; a call still waiting for approval when stdin closes is
// withdrawn and answered, and the exit status says work was cut off.
func TestMCPStdioRobust(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	_, bin := daemontest.Binaries(t)
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "5m", Rules: daemontest.AskRules})
	console := daemontest.Dial(t, d.ApproverSocket)
	m := startStdioMCP(t, bin, "--socket", d.Socket, "--session", "robust")
	m.Initialize()

	m.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"`)
	if msg := m.Next(); mcptest.ErrorCode(msg) != -32700 || msg["id"] != nil {
		t.Fatalf("a line that is not JSON was answered %v; want a parse error (-32700) with a null id", msg)
	}
	m.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"argv":["echo","still here"],"reason":"r"}}}`)
	if msg := m.Next(); msg["id"] != 2.0 || !strings.Contains(fmt.Sprint(msg["result"]), "still here") {
		t.Fatalf("the call after the bad line was answered %v", msg)
	}

	marker := filepath.Join(d.Dir, "touched")
	m.Send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute","arguments":{"argv":["touch","` + marker + `"],"reason":"r"}}}`)
	pending := console.NextOf(approval.MsgPending)
	rest, code := m.close()
	if code != exitTempFail {
		t.Errorf("exit status %d, want %d; stderr %q", code, exitTempFail, m.stderr.String())
	}
	if want := "agent-sudo: mcp: the client closed its input while 1 call was in progress: each was cancelled and answered as cancelled; requests still waiting for approval were withdrawn, commands that had started were not stopped\n"; m.stderr.String() != want {
		t.Errorf("stderr %q, want %q", m.stderr.String(), want)
	}
	var reply struct {
		ID     int
		Result struct {
			IsError bool
			Content []struct{ Text string }
		}
	}
	if err := json.Unmarshal([]byte(rest), &reply); err != nil || reply.ID != 3 || !reply.Result.IsError ||
		// The daemon's "waiting" line may or may not have been read when
		// the call was cancelled; either way the reply says the request
		// is withdrawn if it waited (the console checks below that it was).
		!strings.Contains(rest, "the call was cancelled before agent-sudod answered request "+pending.ID+": ") ||
		!strings.Contains(rest, "it is withdrawn and will not run") {
		t.Errorf("after stdin closed agent-sudo mcp wrote %q; want the reply to call 3, cancelled", rest)
	}
	if res := console.NextOf(approval.MsgResolved); res.ID != pending.ID || res.Verdict != approval.Withdrawn {
		t.Errorf("the console saw %+v, want the request withdrawn", res)
	}
}

// TestMCPServerVersion checks that serverInfo.version is the version
// "agent-sudo version" prints, for a binary built as make build builds it
// (before the fix it said "devel").
func TestMCPServerVersion(t *testing.T) {
	t.Parallel()
	testenv.Slow(t, "builds agent-sudo with go build")
	bin := filepath.Join(t.TempDir(), "agent-sudo")
	const v = "v9.8.7-mcp-test"
	build := exec.Command("go", "build", "-ldflags", "-X github.com/agent-sudo/agent-sudo/internal/version.version="+v, "-o", bin, "github.com/agent-sudo/agent-sudo/cmd/agent-sudo")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || string(out) != "agent-sudo "+v+"\n" {
		t.Fatalf("agent-sudo version = %q, %v", out, err)
	}
	m := startStdioMCP(t, bin, "--socket", filepath.Join(t.TempDir(), "none.sock"), "--session", "v")
	info, _ := m.Initialize()["serverInfo"].(map[string]any)
	if info["name"] != "agent-sudo" || info["version"] != v {
		t.Errorf("serverInfo %v, want name agent-sudo and version %s", info, v)
	}
	if rest, code := m.close(); rest != "" || code != 0 || m.stderr.Len() > 0 {
		t.Errorf("after stdin closed: output %q, exit %d, stderr %q", rest, code, m.stderr.String())
	}
}
