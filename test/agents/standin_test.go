package agents

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// step is one scripted answer of the stand-in model: a tool call, or a
// final text when Tool is empty.
type step struct {
	Tool  string         // the tool's name, e.g. mcp__agent-sudo__execute
	Input map[string]any // the tool's input
	Text  string         // the final text
}

// standIn is a stand-in for the Anthropic Messages API that answers the
// agent's conversation with a script, and records what it received.
type standIn struct {
	t      *testing.T
	srv    *httptest.Server
	script []step

	mu       sync.Mutex
	next     int
	requests []map[string]any // the conversation's requests, in order
	log      []string         // every request: method, path and body
}

// newStandIn starts a stand-in answering with script.
func newStandIn(t *testing.T, script ...step) *standIn {
	s := &standIn{t: t, script: script}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the stand-in's base URL, for ANTHROPIC_BASE_URL.
func (s *standIn) URL() string { return s.srv.URL }

// conversation returns the requests that carried the conversation (the
// ones offering tools), in order.
func (s *standIn) conversation() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.requests...)
}

// dump returns every request the stand-in received, for a failure message.
func (s *standIn) dump() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.log, "\n")
}

func (s *standIn) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req map[string]any
	_ = json.Unmarshal(body, &req)
	s.mu.Lock()
	s.log = append(s.log, fmt.Sprintf("%s %s %s", r.Method, r.URL, body))
	s.mu.Unlock()
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") {
		http.NotFound(w, r)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		writeJSON(w, map[string]any{"input_tokens": 10})
		return
	}
	st := step{Text: "ok"}
	if tools, _ := req["tools"].([]any); len(tools) > 0 {
		// The agent's own conversation: the next step of the script.
		s.mu.Lock()
		s.requests = append(s.requests, req)
		if s.next < len(s.script) {
			st = s.script[s.next]
			s.next++
		} else {
			st = step{Text: "(the script has ended)"}
		}
		s.mu.Unlock()
	}
	model, _ := req["model"].(string)
	id := fmt.Sprintf("msg_%d", len(body))
	var block map[string]any
	stop := "end_turn"
	if st.Tool != "" {
		stop = "tool_use"
		block = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", len(body)), "name": st.Tool, "input": st.Input}
	} else {
		block = map[string]any{"type": "text", "text": st.Text}
	}
	usage := map[string]any{"input_tokens": 10, "output_tokens": 5}
	if stream, _ := req["stream"].(bool); !stream {
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	event := func(name string, data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	if st.Tool != "" {
		input, _ := json.Marshal(st.Input)
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": st.Tool, "input": map[string]any{}}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	} else {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": st.Text}})
	}
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 5}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// toolResults returns the tool_result blocks of a request's last message.
func toolResults(req map[string]any) []map[string]any {
	msgs, _ := req["messages"].([]any)
	if len(msgs) == 0 {
		return nil
	}
	last, _ := msgs[len(msgs)-1].(map[string]any)
	content, _ := last["content"].([]any)
	var out []map[string]any
	for _, c := range content {
		if b, _ := c.(map[string]any); b["type"] == "tool_result" {
			out = append(out, b)
		}
	}
	return out
}

// resultText is the text of a tool_result block.
func resultText(b map[string]any) string {
	switch c := b["content"].(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, p := range c {
			if m, _ := p.(map[string]any); m["type"] == "text" {
				parts = append(parts, fmt.Sprint(m["text"]))
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}
