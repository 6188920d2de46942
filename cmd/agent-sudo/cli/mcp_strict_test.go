package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// rawMCP is "agent-sudo mcp" spoken to in raw JSON-RPC lines, so that a
// test can send what no well-behaved client library would: repeated keys,
// keys in another case.
type rawMCP struct {
	t   *testing.T
	in  *os.File
	out *bufio.Reader
	id  int
}

func startRawMCP(t *testing.T, bin, socket string) *rawMCP {
	t.Helper()
	cmd := exec.Command(bin, "mcp", "--socket", socket, "--session", "raw")
	cmd.Env = e2eEnv()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("agent-sudo mcp did not exit when its stdin closed")
		}
	})
	m := &rawMCP{t: t, in: stdin.(*os.File), out: bufio.NewReader(stdout)}
	m.call(`"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}`)
	if _, err := fmt.Fprintln(m.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		t.Fatal(err)
	}
	return m
}

// call sends one request (the members after "id") and returns the result
// object of the response with the same id.
func (m *rawMCP) call(members string) map[string]any {
	m.t.Helper()
	m.id++
	if _, err := fmt.Fprintf(m.in, `{"jsonrpc":"2.0","id":%d,%s}`+"\n", m.id, members); err != nil {
		m.t.Fatal(err)
	}
	for {
		line, err := m.out.ReadBytes('\n')
		if err != nil {
			m.t.Fatalf("reading the response to %s: %v", members, err)
		}
		var resp struct {
			ID     int            `json:"id"`
			Result map[string]any `json:"result"`
			Error  any            `json:"error"`
		}
		if json.Unmarshal(line, &resp) != nil || resp.ID != m.id {
			continue // a notification
		}
		if resp.Error != nil {
			m.t.Fatalf("error response to %s: %v", members, resp.Error)
		}
		return resp.Result
	}
}

// execute calls the execute tool with arguments given as raw JSON and
// returns the result's text and isError.
func (m *rawMCP) execute(args string) (string, bool) {
	m.t.Helper()
	res := m.call(`"method":"tools/call","params":{"name":"execute","arguments":` + args + `}`)
	content, _ := res["content"].([]any)
	if len(content) != 1 {
		m.t.Fatalf("result %v", res)
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	isError, _ := res["isError"].(bool)
	return text, isError
}

// TestMCPStrictArguments sends tool arguments over raw JSON-RPC to the real
// "agent-sudo mcp" and the real daemon: repeated keys, keys in another case
// and unknown keys are refused before anything is sent (before the fix, the
// last "argv" ran and "ARGV" ran); and the stdin argument reaches the
// command.
func TestMCPStrictArguments(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	_, bin := daemontest.Binaries(t)
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll})
	m := startRawMCP(t, bin, d.Socket)
	marker := filepath.Join(d.Dir, "ran")

	refused := []struct{ name, args, want string }{
		{"argv twice", `{"argv":["echo","shown"],"argv":["touch","` + marker + `"],"reason":"r"}`, `invalid arguments: "argv" appears more than once; give each argument once`},
		{"reason twice", `{"argv":["touch","` + marker + `"],"reason":"a","reason":"b"}`, `invalid arguments: "reason" appears more than once`},
		{"ARGV", `{"ARGV":["touch","` + marker + `"],"reason":"r"}`, `invalid arguments: unknown field "ARGV" (names are case-sensitive: did you mean "argv"?)`},
		{"Reason", `{"argv":["touch","` + marker + `"],"Reason":"r"}`, `invalid arguments: unknown field "Reason" (names are case-sensitive: did you mean "reason"?)`},
		{"unknown", `{"argv":["touch","` + marker + `"],"reason":"r","shell":true}`, `invalid arguments: unknown field "shell"; the execute tool takes argv or pipeline`},
		{"env twice", `{"argv":["touch","` + marker + `"],"reason":"r","env":{"LANG":"C","LANG":"C.UTF-8"}}`, `invalid arguments: env: "LANG" appears more than once`},
		{"stdin not text", `{"argv":["tee","` + marker + `"],"reason":"r","stdin":["x"]}`, `in stdin, expected a string but got a JSON array`},
	}
	for _, tt := range refused {
		text, isError := m.execute(tt.args)
		if !isError || !strings.Contains(text, tt.want) || !strings.Contains(text, "Nothing was sent") {
			t.Errorf("%s: result (isError %v):\n%s\nwant an error containing %q", tt.name, isError, text, tt.want)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a refused call ran")
	}

	text, isError := m.execute(`{"argv":["tee","` + marker + `"],"reason":"write a file","stdin":"line one\nline two\n"}`)
	if isError || !strings.Contains(text, "status: ok") {
		t.Fatalf("stdin call: isError %v\n%s", isError, text)
	}
	if b, err := os.ReadFile(marker); err != nil || string(b) != "line one\nline two\n" {
		t.Fatalf("the file holds %q (%v)", b, err)
	}
}
