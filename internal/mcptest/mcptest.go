// Package mcptest speaks MCP to an agent-sudo MCP server in raw JSON-RPC
// lines, for tests that must send what no client library would (a line
// that is not JSON, repeated keys, a cancellation at a chosen moment) or
// read exactly what the server wrote. The server may be a process
// (`agent-sudo mcp`) or package mcpserver's Serve over pipes. It is for
// tests only; no production code imports it.
package mcptest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// Timeout bounds every wait for the server: a message, the end of its
// output.
const Timeout = 30 * time.Second

// Raw is one session: lines written to the server's input, and the lines
// of its output, read in the background as they come.
type Raw struct {
	t     testing.TB
	in    io.WriteCloser
	lines chan string // the server's output, line by line; closed at its end
	id    int
}

// New starts reading out, the server's output, and returns the session
// that writes to in, its input. Nothing is sent yet (see Initialize).
func New(t testing.TB, in io.WriteCloser, out io.Reader) *Raw {
	r := &Raw{t: t, in: in, lines: make(chan string, 100)}
	go func() {
		defer close(r.lines)
		br := bufio.NewReader(out)
		for {
			l, err := br.ReadString('\n')
			if l != "" {
				r.lines <- l
			}
			if err != nil {
				return
			}
		}
	}()
	return r
}

// Send writes one line (a newline is added).
func (r *Raw) Send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatalf("send %s: %v", line, err)
	}
}

// Next returns the next message the server wrote, failing the test when
// none comes within Timeout, the output ends, or the line is not JSON.
func (r *Raw) Next() map[string]any {
	r.t.Helper()
	select {
	case l, ok := <-r.lines:
		if !ok {
			r.t.Fatal("the MCP server's output ended")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			r.t.Fatalf("the MCP server wrote a line that is not JSON: %q", l)
		}
		return m
	case <-time.After(Timeout):
		r.t.Fatalf("no message from the MCP server within %s", Timeout)
	}
	return nil
}

// Initialize opens the session (initialize, with the id "init", then
// notifications/initialized) and returns the initialize result.
func (r *Raw) Initialize() map[string]any {
	r.t.Helper()
	res := r.call(`"init"`, `"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}`)
	r.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return res
}

// Call sends one request, members being the JSON members after its id
// (`"method":"ping"`), with a numeric id of its own (1, 2, ...), and returns
// the result of the response with that id; messages before it are
// skipped. An error response fails the test.
func (r *Raw) Call(members string) map[string]any {
	r.t.Helper()
	r.id++
	return r.call(fmt.Sprint(r.id), members)
}

// call is Call with the id given as JSON.
func (r *Raw) call(id, members string) map[string]any {
	r.t.Helper()
	r.Send(`{"jsonrpc":"2.0","id":` + id + `,` + members + `}`)
	for {
		m := r.Next()
		if got, _ := json.Marshal(m["id"]); string(got) != id {
			continue // a notification, or the answer to another call
		}
		if m["error"] != nil {
			r.t.Fatalf("error response to %s: %v", members, m["error"])
		}
		res, _ := m["result"].(map[string]any)
		if res == nil {
			r.t.Fatalf("no result in the response to %s: %v", members, m)
		}
		return res
	}
}

// Execute calls the execute tool with arguments given as raw JSON and
// returns the result's text and isError.
func (r *Raw) Execute(args string) (string, bool) {
	r.t.Helper()
	res := r.Call(`"method":"tools/call","params":{"name":"execute","arguments":` + args + `}`)
	content, _ := res["content"].([]any)
	if len(content) != 1 {
		r.t.Fatalf("result %v", res)
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	isError, _ := res["isError"].(bool)
	return text, isError
}

// Rest closes the server's input and returns every line it wrote from then
// on (each with its newline), once its output ends; it fails the test when
// the output does not end within Timeout.
func (r *Raw) Rest() []string {
	r.t.Helper()
	r.in.Close()
	var lines []string
	timeout := time.After(Timeout)
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				return lines
			}
			lines = append(lines, l)
		case <-timeout:
			r.t.Fatalf("the MCP server's output did not end within %s of its input closing; it wrote %q", Timeout, strings.Join(lines, ""))
			return nil
		}
	}
}

// ErrorCode returns the code of a JSON-RPC error response, or 0.
func ErrorCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return code
}
