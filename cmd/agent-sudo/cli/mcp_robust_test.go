package cli

import (
	"bufio"
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
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// stdioMCP is a real "agent-sudo mcp" process spoken to in raw JSON-RPC
// lines, whose exit status and stderr the test reads.
type stdioMCP struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr bytes.Buffer
}

func startStdioMCP(t *testing.T, bin string, args ...string) *stdioMCP {
	t.Helper()
	m := &stdioMCP{t: t, cmd: exec.Command(bin, append([]string{"mcp"}, args...)...)}
	m.cmd.Env = e2eEnv()
	m.cmd.Stderr = &m.stderr
	var err error
	if m.in, err = m.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	m.out = bufio.NewReader(stdout)
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if m.cmd.ProcessState == nil {
			_ = m.cmd.Process.Kill()
			_ = m.cmd.Wait()
		}
	})
	return m
}

// send writes one line.
func (m *stdioMCP) send(line string) {
	m.t.Helper()
	if _, err := io.WriteString(m.in, line+"\n"); err != nil {
		m.t.Fatalf("send %s: %v", line, err)
	}
}

// next reads the next message. A process that says nothing for 30s is
// killed, which ends the read.
func (m *stdioMCP) next() map[string]any {
	m.t.Helper()
	timer := time.AfterFunc(30*time.Second, func() { _ = m.cmd.Process.Kill() })
	l, err := m.out.ReadBytes('\n')
	if !timer.Stop() {
		m.t.Fatal("agent-sudo mcp wrote nothing within 30s (killed)")
	}
	if err != nil {
		m.t.Fatalf("reading agent-sudo mcp's output: %v", err)
	}
	var msg map[string]any
	if err := json.Unmarshal(l, &msg); err != nil {
		m.t.Fatalf("agent-sudo mcp wrote a line that is not JSON: %q", l)
	}
	return msg
}

// initialize opens the session and returns the initialize result.
func (m *stdioMCP) initialize() map[string]any {
	m.t.Helper()
	m.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	res, _ := m.next()["result"].(map[string]any)
	if res == nil {
		m.t.Fatal("no initialize result")
	}
	m.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return res
}

// close closes stdin and returns the rest of the output and the exit
// status, waiting at most 30s.
func (m *stdioMCP) close() (string, int) {
	m.t.Helper()
	m.in.Close()
	rest, _ := io.ReadAll(m.out)
	done := make(chan error, 1)
	go func() { done <- m.cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			m.t.Fatal(err)
		}
		return string(rest), m.cmd.ProcessState.ExitCode()
	case <-time.After(30 * time.Second):
		_ = m.cmd.Process.Kill()
		m.t.Fatal("agent-sudo mcp did not exit within 30s of its stdin closing")
	}
	return "", 0
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
	m.initialize()

	m.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"`)
	if msg := m.next(); errorCode(msg) != -32700 || msg["id"] != nil {
		t.Fatalf("a line that is not JSON was answered %v; want a parse error (-32700) with a null id", msg)
	}
	m.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute","arguments":{"argv":["echo","still here"],"reason":"r"}}}`)
	if msg := m.next(); msg["id"] != 2.0 || !strings.Contains(fmt.Sprint(msg["result"]), "still here") {
		t.Fatalf("the call after the bad line was answered %v", msg)
	}

	marker := filepath.Join(d.Dir, "touched")
	m.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute","arguments":{"argv":["touch","` + marker + `"],"reason":"r"}}}`)
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
	info, _ := m.initialize()["serverInfo"].(map[string]any)
	if info["name"] != "agent-sudo" || info["version"] != v {
		t.Errorf("serverInfo %v, want name agent-sudo and version %s", info, v)
	}
	if rest, code := m.close(); rest != "" || code != 0 || m.stderr.Len() > 0 {
		t.Errorf("after stdin closed: output %q, exit %d, stderr %q", rest, code, m.stderr.String())
	}
}

// errorCode returns the code of a JSON-RPC error response, or 0.
func errorCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return code
}
