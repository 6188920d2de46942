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
	Tool      string         // the tool's name, e.g. mcp__agent-sudo__execute
	Namespace string         // the tool's namespace (the Responses API's), e.g. mcp__agent_sudo
	Input     map[string]any // the tool's input
	Text      string         // the final text
}

// standIn is a stand-in for the model APIs the agents use: the Anthropic
// Messages API (/v1/messages, Claude Code) and the OpenAI Responses API
// (/v1/responses, Codex). It answers the agent's conversation with a
// script, and records what it received. Requests that offer tools are the
// conversation; others (titles, summaries) get a short text.
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

// URL is the stand-in's base URL, for ANTHROPIC_BASE_URL; a Responses API
// client's base URL is URL()+"/v1".
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
	switch {
	case r.Method != http.MethodPost:
		http.NotFound(w, r)
	case r.URL.Path == "/v1/messages/count_tokens":
		writeJSON(w, map[string]any{"input_tokens": 10})
	case r.URL.Path == "/v1/messages":
		s.messages(w, req, s.step(req))
	case r.URL.Path == "/v1/responses":
		s.responses(w, req, s.step(req))
	default:
		http.NotFound(w, r)
	}
}

// count is the number of requests received so far, for unique ids.
func (s *standIn) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.log)
}

// step returns the answer to req: the script's next step when req is the
// agent's conversation (it offers tools), a short text otherwise.
func (s *standIn) step(req map[string]any) step {
	if tools, _ := req["tools"].([]any); len(tools) == 0 {
		return step{Text: "ok"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	if s.next >= len(s.script) {
		return step{Text: "(the script has ended)"}
	}
	s.next++
	return s.script[s.next-1]
}

// messages answers a Messages API request with st, streamed when asked.
func (s *standIn) messages(w http.ResponseWriter, req map[string]any, st step) {
	model, _ := req["model"].(string)
	n := s.count()
	id := fmt.Sprintf("msg_%d", n)
	var block map[string]any
	stop := "end_turn"
	if st.Tool != "" {
		stop = "tool_use"
		block = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", n), "name": st.Tool, "input": st.Input}
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

// responses answers a Responses API request with st, as the server-sent
// events Codex reads: response.created, one response.output_item.done
// (a function_call, or an assistant message), response.completed.
func (s *standIn) responses(w http.ResponseWriter, req map[string]any, st step) {
	n := s.count()
	id := fmt.Sprintf("resp_%d", n)
	var item map[string]any
	if st.Tool != "" {
		args, _ := json.Marshal(st.Input)
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", n), "call_id": fmt.Sprintf("call_%d", n),
			"name": st.Tool, "arguments": string(args)}
		if st.Namespace != "" {
			item["namespace"] = st.Namespace
		}
	} else {
		item = map[string]any{"type": "message", "role": "assistant", "id": fmt.Sprintf("msg_%d", n),
			"content": []any{map[string]any{"type": "output_text", "text": st.Text}}}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	event := func(data map[string]any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", data["type"], b)
	}
	event(map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	event(map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	event(map[string]any{"type": "response.completed", "response": map[string]any{"id": id,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// functionOutputs returns the function_call_output items of a Responses
// API request's input that answer the calls of the last response, in order.
func functionOutputs(req map[string]any) []map[string]any {
	input, _ := req["input"].([]any)
	var out []map[string]any
	for i := len(input) - 1; i >= 0; i-- {
		item, _ := input[i].(map[string]any)
		if item["type"] != "function_call_output" {
			break
		}
		out = append([]map[string]any{item}, out...)
	}
	return out
}

// outputText is the text of a function_call_output item: its output
// string, or the text of its parts.
func outputText(item map[string]any) string {
	switch o := item["output"].(type) {
	case string:
		return o
	case []any:
		var parts []string
		for _, p := range o {
			if m, _ := p.(map[string]any); m["type"] == "input_text" {
				parts = append(parts, fmt.Sprint(m["text"]))
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
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
