package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/clienttest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// rawSession is Serve spoken to in raw JSON-RPC lines over pipes, so that a
// test can send what no client library would.
type rawSession struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan string   // the server's output, line by line; closed at its end
	done  chan struct{} // closed when Serve returns
	err   error         // Serve's result, once done is closed
}

// serveRaw starts Serve with cfg and initializes the session.
func serveRaw(t *testing.T, cfg Config) *rawSession {
	t.Helper()
	toServer, in := io.Pipe()
	out, fromServer := io.Pipe()
	s := &rawSession{t: t, in: in, lines: make(chan string, 100), done: make(chan struct{})}
	go func() {
		s.err = Serve(context.Background(), cfg, toServer, fromServer)
		fromServer.Close()
		close(s.done)
	}()
	go func() {
		defer close(s.lines)
		br := bufio.NewReader(out)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			s.lines <- l
		}
	}()
	t.Cleanup(func() {
		in.Close()
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			t.Error("Serve did not return within 20s of its input closing")
		}
	})
	s.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	if m := s.next(); m["id"] != "init" || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

// send writes one line.
func (s *rawSession) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("send %s: %v", line, err)
	}
}

// next returns the next message the server wrote.
func (s *rawSession) next() map[string]any {
	s.t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			s.t.Fatal("the server's output ended")
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			s.t.Fatalf("the server wrote a line that is not JSON: %q", l)
		}
		return m
	case <-time.After(20 * time.Second):
		s.t.Fatal("no message from the server within 20s")
	}
	return nil
}

// rest closes the input and returns Serve's result and every line written
// after that, once the output ends.
func (s *rawSession) rest() ([]string, error) {
	s.t.Helper()
	s.in.Close()
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		s.t.Fatal("Serve did not return within 20s of its input closing")
	}
	var lines []string
	for l := range s.lines {
		lines = append(lines, l)
	}
	return lines, s.err
}

// errorCode returns the code of an error response, or 0.
func errorCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return code
}

// TestServeAnswersMalformedLines checks that a line that is not JSON is
// answered with a parse error (-32700) and one that is JSON but not a
// JSON-RPC message with an invalid request error (-32600), and that the
// session goes on. Before the fix, the first such line ended the session.
func TestServeAnswersMalformedLines(t *testing.T) {
	daemon := clienttest.NewServer(t, reply(ok("hi\n", 0)))
	s := serveRaw(t, Config{Socket: daemon.Socket})
	tests := []struct {
		line   string
		code   float64
		id     any
		detail string
	}{
		{"this is not JSON", -32700, nil, "Parse error: the line is not JSON: invalid character 'h' in literal true"},
		{`{"jsonrpc":"2.0","id":3,"method":"ping"`, -32700, nil, "Parse error"},
		{`{"jsonrpc":"1.0","id":4,"method":"ping"}`, -32600, 4.0, `Invalid Request: invalid message version tag "1.0"`},
		{`{"jsonrpc":"2.0","id":"five","method":"ping","params":`, -32700, nil, "Parse error"},
		{`[{"jsonrpc":"2.0","id":6,"method":"ping"}]`, -32600, nil, "batches are not supported"},
		{`42`, -32600, nil, "Invalid Request"},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, -32600, nil, "Invalid Request"},
	}
	for _, tt := range tests {
		s.send(tt.line)
		m := s.next()
		e, _ := m["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if errorCode(m) != tt.code || m["id"] != tt.id || !strings.Contains(msg, tt.detail) {
			t.Errorf("%s: answered %v; want code %v, id %v and a message containing %q", tt.line, m, tt.code, tt.id, tt.detail)
		}
	}
	s.send("") // blank lines are skipped
	s.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute","arguments":{"argv":["echo","hi"],"reason":"r"}}}`)
	m := s.next()
	res, _ := m["result"].(map[string]any)
	if m["id"] != 7.0 || res == nil || res["isError"] == true {
		t.Fatalf("the call after the malformed lines was answered %v", m)
	}
	if lines, err := s.rest(); err != nil || len(lines) != 0 {
		t.Errorf("Serve = %v, and wrote %q after its input closed", err, lines)
	}
}

// TestServeAnswersCallsInProgressAtEOF checks that a call still in
// progress when the input ends is cancelled (its request withdrawn) and
// answered as cancelled, and that Serve then reports the cut-off work.
// Before the fix the reply was never written and Serve returned nil.
func TestServeAnswersCallsInProgressAtEOF(t *testing.T) {
	got := make(chan *proto.Request, 2)
	closed := make(chan struct{}, 2)
	daemon := clienttest.NewServer(t, clienttest.Hang(got, closed))
	s := serveRaw(t, Config{Socket: daemon.Socket})
	for id := 1; id <= 2; id++ {
		s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"execute","arguments":{"argv":["touch","/x"],"reason":"r"}}}`, id))
		select {
		case <-got:
		case <-time.After(20 * time.Second):
			t.Fatal("the request did not reach the daemon")
		}
	}
	lines, err := s.rest()
	var cut *CutOffError
	if !errors.As(err, &cut) || cut.Calls != 2 {
		t.Errorf("Serve = %v, want a CutOffError for 2 calls", err)
	}
	if !strings.Contains(fmt.Sprint(err), "2 calls were in progress") {
		t.Errorf("error %q", err)
	}
	answered := map[float64]bool{}
	for _, l := range lines {
		var m struct {
			ID     float64
			Result struct {
				IsError bool
				Content []struct{ Text string }
			}
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("bad line %q", l)
		}
		if !m.Result.IsError || len(m.Result.Content) != 1 || !strings.Contains(m.Result.Content[0].Text, "the call was cancelled before agent-sudod answered") {
			t.Errorf("reply %s", l)
		}
		if strings.Contains(l, "context canceled") {
			t.Errorf("the reply shows an internal error: %s", l)
		}
		answered[m.ID] = true
	}
	if !answered[1] || !answered[2] || len(lines) != 2 {
		t.Errorf("replies after the input ended: %q; want one for each of calls 1 and 2", lines)
	}
	for range 2 {
		select {
		case <-closed:
		case <-time.After(20 * time.Second):
			t.Fatal("a connection to the daemon stayed open: the request was not withdrawn")
		}
	}
}

// TestServeNoReplyAfterCancelled checks that a call the client cancelled
// gets no reply, as the MCP specification requires, while its request is
// withdrawn; before the fix the reply was sent, showing "context canceled".
func TestServeNoReplyAfterCancelled(t *testing.T) {
	got := make(chan *proto.Request, 1)
	closed := make(chan struct{}, 1)
	daemon := clienttest.NewServer(t, clienttest.Hang(got, closed))
	s := serveRaw(t, Config{Socket: daemon.Socket})
	s.send(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"execute","arguments":{"argv":["touch","/x"],"reason":"r"}}}`)
	select {
	case <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the request did not reach the daemon")
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1","reason":"user pressed Esc"}}`)
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("the connection to the daemon stayed open after the cancellation")
	}
	// Another call goes on as usual.
	s.send(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	var after []string
	for {
		m := s.next()
		if m["id"] == "p" {
			break
		}
		after = append(after, fmt.Sprint(m))
	}
	lines, err := s.rest()
	if err != nil {
		t.Errorf("Serve = %v; a cancelled call is not cut-off work", err)
	}
	if lines = append(after, lines...); len(lines) != 0 {
		t.Errorf("the server wrote %q after the call was cancelled; want nothing", lines)
	}
}
