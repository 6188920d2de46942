package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/clienttest"
	"github.com/agent-sudo/agent-sudo/internal/mcptest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// rawSession is Serve spoken to in raw JSON-RPC lines over pipes
// (mcptest.Raw), so that a test can send what no client library would.
type rawSession struct {
	*mcptest.Raw
	done chan struct{} // closed when Serve returns
	err  error         // Serve's result, once done is closed
}

// serveRaw starts Serve with cfg and initializes the session.
func serveRaw(t *testing.T, cfg Config) *rawSession {
	t.Helper()
	toServer, in := io.Pipe()
	out, fromServer := io.Pipe()
	s := &rawSession{done: make(chan struct{})}
	go func() {
		s.err = Serve(context.Background(), cfg, toServer, fromServer)
		fromServer.Close()
		close(s.done)
	}()
	s.Raw = mcptest.New(t, in, out)
	t.Cleanup(func() {
		in.Close()
		select {
		case <-s.done:
		case <-time.After(mcptest.Timeout):
			t.Error("Serve did not return within 30s of its input closing")
		}
	})
	s.Initialize()
	return s
}

// rest closes the input and returns every line written after that, once
// the output ends, and Serve's result.
func (s *rawSession) rest() ([]string, error) {
	lines := s.Rest()
	<-s.done // the output ends when Serve has returned
	return lines, s.err
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
		s.Send(tt.line)
		m := s.Next()
		e, _ := m["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if mcptest.ErrorCode(m) != tt.code || m["id"] != tt.id || !strings.Contains(msg, tt.detail) {
			t.Errorf("%s: answered %v; want code %v, id %v and a message containing %q", tt.line, m, tt.code, tt.id, tt.detail)
		}
	}
	s.Send("") // blank lines are skipped
	s.Send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"execute","arguments":{"argv":["echo","hi"],"reason":"r"}}}`)
	m := s.Next()
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
		s.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"execute","arguments":{"argv":["touch","/x"],"reason":"r"}}}`, id))
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
	s.Send(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"execute","arguments":{"argv":["touch","/x"],"reason":"r"}}}`)
	select {
	case <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the request did not reach the daemon")
	}
	s.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1","reason":"user pressed Esc"}}`)
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("the connection to the daemon stayed open after the cancellation")
	}
	// Another call goes on as usual.
	s.Send(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	var after []string
	for {
		m := s.Next()
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
