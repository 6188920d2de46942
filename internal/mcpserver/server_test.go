package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/clienttest"
	"github.com/agent-sudo/agent-sudo/proto"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connect serves cfg, with its socket replaced by a fake daemon running h,
// to an MCP client over a pair of pipes, and returns the client's session
// and the fake daemon.
func connect(t *testing.T, cfg Config, h clienttest.Handler, opts *mcp.ClientOptions) (*mcp.ClientSession, *clienttest.Server) {
	cs, daemon, _ := connectPipes(t, cfg, h, opts)
	return cs, daemon
}

// connectPipes is connect that also returns a function that closes the
// server's input, as a client process that goes away would.
func connectPipes(t *testing.T, cfg Config, h clienttest.Handler, opts *mcp.ClientOptions) (*mcp.ClientSession, *clienttest.Server, func()) {
	t.Helper()
	var daemon *clienttest.Server
	if h != nil {
		daemon = clienttest.NewServer(t, h)
		cfg.Socket = daemon.Socket
	}
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, &mcp.IOTransport{Reader: toServer, Writer: fromServer}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWithin(t, "server session", ss.Close) })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, opts).Connect(ctx, &mcp.IOTransport{Reader: toClient, Writer: fromClient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWithin(t, "client session", cs.Close) })
	return cs, daemon, func() { fromClient.Close() }
}

// closeWithin calls close, and reports a close that hangs (a handler that
// never returns) rather than hanging the test.
func closeWithin(t *testing.T, what string, close func() error) {
	done := make(chan struct{})
	go func() {
		close()
		done <- struct{}{}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("the %s did not close within 10s: a call is stuck", what)
	}
}

// call calls execute with args and returns the result's text.
func call(t *testing.T, cs *mcp.ClientSession, args any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolName, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%v): %v", args, err)
	}
	return resultText(t, res), res.IsError
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d content blocks, want 1: %+v", len(res.Content), res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("result content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// reply answers every request with resp, its id set to the request's.
func reply(resp proto.Response) clienttest.Handler {
	return clienttest.Respond(func(req *proto.Request) *proto.Response {
		r := resp
		r.ID = req.ID
		return &r
	})
}

func ok(stdout string, codes ...int) proto.Response {
	r := proto.Response{Status: proto.StatusOK, Stdout: []byte(stdout)}
	for _, c := range codes {
		r.Stages = append(r.Stages, proto.Stage{ExitCode: c})
	}
	return r
}

func TestListTools(t *testing.T) {
	cs, _ := connect(t, Config{}, nil, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "execute" {
		t.Fatalf("tools: %+v", res.Tools)
	}
	tool := res.Tools[0]
	for _, want := range []string{"NO shell", "human approves", "tee", "pipeline", "sh\", \"-c\""} {
		if !strings.Contains(tool.Description, want) {
			t.Errorf("description lacks %q", want)
		}
	}
	schema, ok := tool.InputSchema.(map[string]any)
	if !ok {
		t.Fatalf("input schema is %T", tool.InputSchema)
	}
	props, _ := schema["properties"].(map[string]any)
	var names []string
	for name, p := range props {
		names = append(names, name)
		if d, _ := p.(map[string]any)["description"].(string); d == "" {
			t.Errorf("property %s has no description", name)
		}
	}
	slices.Sort(names)
	if want := []string{"argv", "cwd", "env", "forward_agent", "pipeline", "privileged", "reason", "stdin"}; !slices.Equal(names, want) {
		t.Errorf("properties %q, want %q", names, want)
	}
	if req, _ := schema["required"].([]any); len(req) != 1 || req[0] != "reason" {
		t.Errorf("required = %v, want [reason]", schema["required"])
	}
	// Several model APIs refuse combinators at the top level of a schema.
	for _, k := range []string{"oneOf", "anyOf", "allOf", "not"} {
		if _, ok := schema[k]; ok {
			t.Errorf("schema has a top-level %s", k)
		}
	}
	argv := props["argv"].(map[string]any)
	if argv["type"] != "array" || argv["items"].(map[string]any)["type"] != "string" {
		t.Errorf("argv schema %v", argv)
	}
	pipeline := props["pipeline"].(map[string]any)
	if pipeline["items"].(map[string]any)["type"] != "array" {
		t.Errorf("pipeline schema %v", pipeline)
	}
	if props["privileged"].(map[string]any)["default"] != true {
		t.Errorf("privileged default %v", props["privileged"])
	}
	if a := tool.Annotations; a == nil || a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint {
		t.Errorf("annotations %+v", a)
	}
}

// argumentErrorTests are execute calls that parseArgs refuses, each with a
// part of the message; FuzzParseArgs starts from them too.
// manyEnv returns n distinct, valid variables.
func manyEnv(n int) map[string]string {
	env := make(map[string]string, n)
	for i := range n {
		env[fmt.Sprintf("LC_X%d", i)] = "v"
	}
	return env
}

var argumentErrorTests = []struct {
	name string
	args any
	want string
}{
	{"no arguments", nil, "no command: give argv"},
	// What the daemon's decoder refuses is refused before sending, in its words.
	{"NUL in an argument", map[string]any{"argv": []string{"cat", "a\x00b"}, "reason": "r"}, `invalid request: field "pipeline[0][1]": contains a NUL byte`},
	{"too many env variables", map[string]any{"argv": []string{"true"}, "reason": "r", "env": manyEnv(proto.MaxEnvVars + 1)}, `invalid request: field "env"`},
	{"neither", map[string]any{"reason": "r"}, "no command: give argv"},
	{"both", map[string]any{"argv": []string{"ls"}, "pipeline": [][]string{{"ls"}}, "reason": "r"}, "give either argv (one command) or pipeline (several stages), not both"},
	{"empty argv", map[string]any{"argv": []string{}, "reason": "r"}, "argv is empty"},
	{"empty program", map[string]any{"argv": []string{"", "x"}, "reason": "r"}, "argv[0], the program, is empty"},
	{"command line in one string", map[string]any{"argv": []string{"apt install nginx"}, "reason": "r"}, `give the program and each argument as separate strings, e.g. ["apt","install","nginx"]`},
	{"pipe in argv", map[string]any{"argv": []string{"dpkg", "-l", "|", "grep", "x"}, "reason": "r"}, `argv[2] is "|", which is a pipe: give the stages as pipeline`},
	{"redirection in argv", map[string]any{"argv": []string{"echo", "x", ">", "/etc/x"}, "reason": "r"}, `end a pipeline with ["tee", "FILE"]`},
	{"and in argv", map[string]any{"argv": []string{"make", "&&", "make", "install"}, "reason": "r"}, "send each command as its own call"},
	{"empty pipeline", map[string]any{"pipeline": [][]string{}, "reason": "r"}, "pipeline is empty"},
	{"empty stage", map[string]any{"pipeline": [][]string{{"ls"}, {}}, "reason": "r"}, "pipeline[1] is empty"},
	{"too many stages", map[string]any{"pipeline": slices.Repeat([][]string{{"cat"}}, 33), "reason": "r"}, "pipeline has 33 stages; at most 32 are allowed"},
	{"no reason", map[string]any{"argv": []string{"ls"}}, "reason is required"},
	{"blank reason", map[string]any{"argv": []string{"ls"}, "reason": " \n"}, "reason is required"},
	{"long reason", map[string]any{"argv": []string{"ls"}, "reason": strings.Repeat("x", 4097)}, "reason is 4097 bytes; at most 4096"},
	{"relative cwd", map[string]any{"argv": []string{"ls"}, "reason": "r", "cwd": "src"}, `cwd "src" is not an absolute path`},
	{"agent as root", map[string]any{"argv": []string{"git", "pull"}, "reason": "r", "forward_agent": true}, "forward_agent needs privileged false"},
	{"bad env name", map[string]any{"argv": []string{"ls"}, "reason": "r", "env": map[string]string{"A-B": "1"}}, `env: "A-B" is not a valid variable name`},
	{"unknown field", map[string]any{"command": "ls", "reason": "r"}, `invalid arguments: unknown field "command"; the execute tool takes argv or pipeline`},
	{"argv as a string", map[string]any{"argv": "ls -l", "reason": "r"}, "in argv, expected an array of strings but got a JSON string"},
	{"number in argv", map[string]any{"argv": []any{"ls", 1}, "reason": "r"}, "in argv, expected a string but got a JSON number"},
	{"stage as a string", map[string]any{"pipeline": []any{"ls"}, "reason": "r"}, "in pipeline, expected an array of strings but got a JSON string"},
	{"privileged as a string", map[string]any{"argv": []string{"ls"}, "reason": "r", "privileged": "no"}, "in privileged, expected true or false but got a JSON string"},
	{"env value number", map[string]any{"argv": []string{"ls"}, "reason": "r", "env": map[string]any{"A": 1}}, "in env, expected a string but got a JSON number"},
	{"stdin too large", map[string]any{"argv": []string{"tee", "/etc/x"}, "reason": "r", "stdin": strings.Repeat("x", proto.MaxStdinBytes+1)}, `stdin is 737281 bytes; at most 737280 can go with one request: write the file in a place you can and copy it with ["install", "-m", "0644", "/tmp/x", "/etc/x"]`},
}

func TestExecuteArgumentErrors(t *testing.T) {
	tests := argumentErrorTests
	cs, daemon := connect(t, Config{}, reply(ok("", 0)), nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, isError := call(t, cs, tt.args)
			if !isError || !strings.Contains(text, tt.want) || !strings.Contains(text, "Nothing was sent") {
				t.Errorf("result (isError %v):\n%s\nwant an error containing %q", isError, text, tt.want)
			}
		})
	}
	if n := len(daemon.Requests()); n != 0 {
		t.Errorf("the daemon got %d requests for invalid calls", n)
	}
}

func TestParseArgsNotAnObject(t *testing.T) {
	for _, raw := range []string{`[1]`, `"ls"`, `{"argv":["ls"],"reason":"r"} {}`, `{`} {
		if _, err := parseArgs(json.RawMessage(raw)); err == nil || !strings.HasPrefix(err.Error(), "invalid arguments: ") {
			t.Errorf("parseArgs(%s) = %v, want an invalid arguments error", raw, err)
		}
	}
}

func TestExecuteSendsRequest(t *testing.T) {
	cfg := Config{Session: "claude-proj", Host: "box"}
	cs, daemon := connect(t, cfg, reply(ok("", 0, 0)), nil)
	dir := t.TempDir()
	_, isError := call(t, cs, map[string]any{
		"pipeline":      [][]string{{"git", "pull"}, {"tee", "/tmp/log"}},
		"reason":        "update the checkout",
		"env":           map[string]string{"LANG": "C.UTF-8"},
		"privileged":    false,
		"forward_agent": true,
		"cwd":           dir,
	})
	if isError {
		t.Fatal("isError for exit codes 0, 0")
	}
	cs2, daemon2 := connect(t, cfg, reply(ok("", 0)), nil)
	call(t, cs2, map[string]any{"argv": []string{"apt-get", "update"}, "reason": "refresh", "env": nil, "cwd": nil, "pipeline": nil})

	got := append(daemon.Requests(), daemon2.Requests()...)
	if len(got) != 2 {
		t.Fatalf("daemon got %d requests, want 2", len(got))
	}
	for _, r := range got {
		if err := uuid.Validate(r.ID); err != nil {
			t.Errorf("request id %q: %v", r.ID, err)
		}
		if time.Since(r.Time).Abs() > time.Minute {
			t.Errorf("request time %v", r.Time)
		}
	}
	want := []*proto.Request{
		{Action: proto.ActionExecute, Host: "box", Session: "claude-proj", Pipeline: [][]string{{"git", "pull"}, {"tee", "/tmp/log"}},
			Env: map[string]string{"LANG": "C.UTF-8"}, Reason: "update the checkout", Privileged: false, ForwardAgent: true, Cwd: dir, Progress: true},
		{Action: proto.ActionExecute, Host: "box", Session: "claude-proj", Pipeline: [][]string{{"apt-get", "update"}},
			Env: map[string]string{}, Reason: "refresh", Privileged: true, Progress: true},
	}
	for i := range got {
		g := *got[i]
		g.ID, g.Time = "", time.Time{}
		if !reflect.DeepEqual(&g, want[i]) {
			t.Errorf("request %d:\n got %+v\nwant %+v", i, &g, want[i])
		}
	}
}

func TestExecuteResults(t *testing.T) {
	bin := []byte{0xff, 0x00, 0xfe, 'a'}
	tests := []struct {
		name    string
		args    map[string]any
		resp    proto.Response
		max     int
		want    string // the whole text, with %ID% for the request id
		isError bool
	}{
		{
			name: "ok",
			resp: proto.Response{Status: proto.StatusOK, Stdout: []byte("hello\n"), Stages: []proto.Stage{{ExitCode: 0, Stderr: []byte("warning: x\n")}}},
			want: "status: ok (the command ran)\nrequest id: %ID%\nexit code: 0\nstdout (6 bytes):\nhello\nstderr (11 bytes):\nwarning: x\n",
		},
		{
			name:    "non-zero exit",
			resp:    proto.Response{Status: proto.StatusOK, Stages: []proto.Stage{{ExitCode: 100, Stderr: []byte("E: Unable to locate package nginxx")}}},
			want:    "status: ok (the command ran)\nrequest id: %ID%\nexit code: 100\nstdout: (empty)\nstderr (34 bytes):\nE: Unable to locate package nginxx\n",
			isError: true,
		},
		{
			name: "pipeline: only the last stage's exit counts",
			args: map[string]any{"pipeline": [][]string{{"/usr/bin/false"}, {"cat"}}, "reason": "r"},
			resp: proto.Response{Status: proto.StatusOK, Stages: []proto.Stage{{ExitCode: 1}, {ExitCode: 0}}},
			want: "status: ok (the command ran)\nrequest id: %ID%\nexit codes: stage 1 (false) 1, stage 2 (cat) 0 (the last stage's is the pipeline's)\nstdout: (empty)\nstderr of stage 1 (false): (empty)\nstderr of stage 2 (cat): (empty)\n",
		},
		{
			name:    "pipeline: last stage failed",
			args:    map[string]any{"pipeline": [][]string{{"dpkg", "-l"}, {"grep", "nginx"}}, "reason": "r"},
			resp:    proto.Response{Status: proto.StatusOK, Stages: []proto.Stage{{ExitCode: 0}, {ExitCode: 1, Stderr: []byte("x\n")}}},
			want:    "status: ok (the command ran)\nrequest id: %ID%\nexit codes: stage 1 (dpkg) 0, stage 2 (grep) 1 (the last stage's is the pipeline's)\nstdout: (empty)\nstderr of stage 1 (dpkg): (empty)\nstderr of stage 2 (grep) (2 bytes):\nx\n",
			isError: true,
		},
		{
			name:    "denied",
			resp:    proto.Response{Status: proto.StatusDenied, Message: `denied by rule "no rm" (stage 1 of 1: /usr/bin/rm): use the staging box`},
			want:    "status: denied (the command did not run)\nmessage: denied by rule \"no rm\" (stage 1 of 1: /usr/bin/rm): use the staging box\nrequest id: %ID%\nDo not send the same command again: change it, or ask the user.\n",
			isError: true,
		},
		{
			name:    "timeout before it started",
			resp:    proto.Response{Status: proto.StatusTimeout, Message: "nobody approved the request within approval_timeout (5m0s); it was not run"},
			want:    "status: timeout (nobody approved the request in time; the command did not run)\nmessage: nobody approved the request within approval_timeout (5m0s); it was not run\nrequest id: %ID%\nAsk the user to approve it (agent-sudo approve) before retrying.\n",
			isError: true,
		},
		{
			name:    "timeout while running",
			resp:    proto.Response{Status: proto.StatusTimeout, Message: "killed after 10m0s", Stdout: []byte("partial"), Stages: []proto.Stage{{ExitCode: 143}}},
			want:    "status: timeout (the command ran past the daemon's command_timeout and was killed; its output is incomplete)\nmessage: killed after 10m0s\nrequest id: %ID%\nexit code: 143\nstdout (7 bytes):\npartial\nstderr: (empty)\n",
			isError: true,
		},
		{
			name:    "error",
			resp:    proto.Response{Status: proto.StatusError, Message: "environment variable FOO refused: not in the allowlist"},
			want:    "status: error (agent-sudod refused the request or could not run it)\nmessage: environment variable FOO refused: not in the allowlist\nrequest id: %ID%\n",
			isError: true,
		},
		{
			name: "binary stdout",
			resp: proto.Response{Status: proto.StatusOK, Stdout: bin, Stages: []proto.Stage{{}}},
			want: "status: ok (the command ran)\nrequest id: %ID%\nexit code: 0\nstdout (4 bytes, not valid UTF-8 text, shown as base64):\n/wD+YQ==\nstderr: (empty)\n",
		},
		{
			name: "text truncated, not inside a character",
			max:  8,
			resp: proto.Response{Status: proto.StatusOK, Stdout: []byte("abcdefgé and more"), Stages: []proto.Stage{{}}},
			want: "status: ok (the command ran)\nrequest id: %ID%\nexit code: 0\nstdout (18 bytes):\nabcdefg\n(truncated: 11 more bytes)\nstderr: (empty)\n",
		},
		{
			name: "binary truncated to keep base64 within the cap",
			max:  8,
			resp: proto.Response{Status: proto.StatusOK, Stdout: append(bin, bin...), Stages: []proto.Stage{{}}},
			want: "status: ok (the command ran)\nrequest id: %ID%\nexit code: 0\nstdout (8 bytes, not valid UTF-8 text, shown as base64):\n/wD+Yf8A\n(truncated: 2 more bytes)\nstderr: (empty)\n",
		},
		{
			name: "truncated by the daemon",
			resp: proto.Response{Status: proto.StatusOK, Stdout: []byte("x\n"), StdoutTruncated: true, Stages: []proto.Stage{{Stderr: []byte{}, StderrTruncated: true}}},
			want: "status: ok (the command ran)\nrequest id: %ID%\nexit code: 0\nstdout (2 bytes):\nx\n(the daemon kept only the first 16 MiB of stdout)\nstderr (0 bytes):\n(the daemon kept only the first 16 MiB of stderr)\n",
		},
		{
			name: "control characters pass as text",
			resp: proto.Response{Status: proto.StatusOK, Stdout: []byte("\x1b[31mred\x1b[0m\n"), Stages: []proto.Stage{{}}},
			want: "status: ok (the command ran)\nrequest id: %ID%\nexit code: 0\nstdout (13 bytes):\n\x1b[31mred\x1b[0m\nstderr: (empty)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, daemon := connect(t, Config{MaxOutput: tt.max}, reply(tt.resp), nil)
			args := tt.args
			if args == nil {
				args = map[string]any{"argv": []string{"true"}, "reason": "r"}
			}
			text, isError := call(t, cs, args)
			reqs := daemon.Requests()
			if len(reqs) != 1 {
				t.Fatalf("daemon got %d requests", len(reqs))
			}
			want := strings.ReplaceAll(tt.want, "%ID%", reqs[0].ID)
			if text != want || isError != tt.isError {
				t.Errorf("result (isError %v):\n%q\nwant (isError %v):\n%q", isError, text, tt.isError, want)
			}
		})
	}
}

func TestExecuteLargeOutput(t *testing.T) {
	out := strings.Repeat("0123456789abcdef", 8192) // 128 KiB
	cs, _ := connect(t, Config{}, reply(proto.Response{Status: proto.StatusOK, Stdout: []byte(out), Stages: []proto.Stage{{}}}), nil)
	text, _ := call(t, cs, map[string]any{"argv": []string{"cat", "big"}, "reason": "r"})
	if !strings.Contains(text, "stdout (131072 bytes):\n"+out[:DefaultMaxOutput]+"\n(truncated: 65536 more bytes)\n") {
		t.Errorf("result does not show the first 64 KiB with a truncation marker (%d bytes)", len(text))
	}
}

func TestExecuteUnreachable(t *testing.T) {
	cs, _ := connect(t, Config{Socket: filepath.Join(t.TempDir(), "none.sock")}, nil, nil)
	text, isError := call(t, cs, map[string]any{"argv": []string{"true"}, "reason": "r"})
	if !isError || !strings.Contains(text, "agent-sudo is not available") || !strings.Contains(text, "none.sock") || !strings.Contains(text, "Nothing was sent") {
		t.Errorf("result (isError %v): %s", isError, text)
	}
}

// TestExecuteDaemonNotRunning: a connection reset before any answer (a
// daemon that failed to start) is told as a daemon not running, where
// nothing ran, not as a lost connection after which it may have run.
func TestExecuteDaemonNotRunning(t *testing.T) {
	cs, _ := connect(t, Config{Socket: clienttest.ResettingSocket(t)}, nil, nil)
	text, isError := call(t, cs, map[string]any{"argv": []string{"true"}, "reason": "r"})
	if !isError || !strings.Contains(text, "agent-sudod is not running: ") || !strings.Contains(text, "Nothing ran.") || !strings.Contains(text, "journalctl -u agent-sudo") {
		t.Errorf("result (isError %v): %s", isError, text)
	}
}

func TestExecuteProtocolViolation(t *testing.T) {
	cs, _ := connect(t, Config{}, clienttest.Reply(func(*proto.Request) string { return "{\"id\":\"other\",\"status\":\"ok\"}\n" }), nil)
	text, isError := call(t, cs, map[string]any{"argv": []string{"true"}, "reason": "r"})
	if !isError || !strings.Contains(text, "sent a bad answer") {
		t.Errorf("result (isError %v): %s", isError, text)
	}
}

// progressRecorder collects progress notifications.
type progressRecorder struct {
	mu    sync.Mutex
	got   []mcp.ProgressNotificationParams
	added chan struct{}
}

func newProgressRecorder() *progressRecorder {
	return &progressRecorder{added: make(chan struct{}, 100)}
}

func (p *progressRecorder) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		p.mu.Lock()
		p.got = append(p.got, *req.Params)
		p.mu.Unlock()
		select {
		case p.added <- struct{}{}:
		default:
		}
	}}
}

func (p *progressRecorder) list() []mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got)
}

func TestProgressWhileWaiting(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	slow := clienttest.Respond(func(req *proto.Request) *proto.Response {
		<-release
		return &proto.Response{ID: req.ID, Status: proto.StatusOK, Stages: []proto.Stage{{}}}
	})
	rec := newProgressRecorder()
	cs, _ := connect(t, Config{ProgressInterval: 20 * time.Millisecond}, slow, rec.options())

	params := &mcp.CallToolParams{Name: ToolName, Arguments: map[string]any{"argv": []string{"true"}, "reason": "r"}}
	params.SetProgressToken("tok-1")
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), params)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	deadline := time.After(20 * time.Second)
	for len(rec.list()) < 3 {
		select {
		case <-rec.added:
		case <-deadline:
			t.Fatalf("got %d progress notifications in 20s, want 3", len(rec.list()))
		}
	}
	once.Do(func() { close(release) })
	if res := <-done; res == nil || res.IsError {
		t.Fatalf("result %+v", res)
	}
	got := rec.list()
	for i, p := range got {
		if p.ProgressToken != "tok-1" || !strings.HasPrefix(p.Message, "waiting for approval, or for the command to finish (") {
			t.Errorf("notification %d: %+v", i, p)
		}
		if i > 0 && p.Progress <= got[i-1].Progress {
			t.Errorf("progress did not grow: %v after %v", p.Progress, got[i-1].Progress)
		}
	}
}

func TestNoProgressWithoutToken(t *testing.T) {
	slow := clienttest.Respond(func(req *proto.Request) *proto.Response {
		time.Sleep(200 * time.Millisecond)
		return &proto.Response{ID: req.ID, Status: proto.StatusOK, Stages: []proto.Stage{{}}}
	})
	rec := newProgressRecorder()
	cs, _ := connect(t, Config{ProgressInterval: 10 * time.Millisecond}, slow, rec.options())
	call(t, cs, map[string]any{"argv": []string{"true"}, "reason": "r"})
	if n := len(rec.list()); n != 0 {
		t.Errorf("got %d progress notifications for a call without a progress token", n)
	}
}

// TestCancelClosesTheConnection checks that a call that ends early closes
// its connection to the daemon, which is what withdraws a pending request.
func TestCancelClosesTheConnection(t *testing.T) {
	for _, how := range []string{"the client cancels the call", "the client goes away"} {
		t.Run(how, func(t *testing.T) {
			got := make(chan *proto.Request, 1)
			closed := make(chan struct{}, 1)
			cs, _, hangUp := connectPipes(t, Config{}, clienttest.Hang(got, closed), nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolName, Arguments: map[string]any{"argv": []string{"touch", "/x"}, "reason": "r"}})
				errc <- err
			}()
			select {
			case <-got:
			case <-time.After(20 * time.Second):
				t.Fatal("the request did not reach the daemon")
			}
			if how == "the client cancels the call" {
				cancel()
				if err := <-errc; !errors.Is(err, context.Canceled) {
					t.Errorf("CallTool returned %v, want context.Canceled", err)
				}
			} else {
				hangUp()
			}
			select {
			case <-closed:
			case <-time.After(20 * time.Second):
				t.Fatal("the connection to the daemon stayed open after the call ended")
			}
		})
	}
}

func TestNewServerRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{MaxOutput: -1},
		{ProgressInterval: -time.Second},
		{Session: strings.Repeat("s", proto.MaxSessionLen+1)},
		{Host: strings.Repeat("h", proto.MaxHostLen+1)},
	} {
		if _, err := NewServer(cfg); err == nil {
			t.Errorf("NewServer(%+v) succeeded", cfg)
		}
	}
}

// TestRunEndsCallsWhenContextEnds checks that ending Run's context ends the
// calls in progress, closing their connections, rather than waiting for the
// daemon's answers.
func TestRunEndsCallsWhenContextEnds(t *testing.T) {
	got := make(chan *proto.Request, 1)
	closed := make(chan struct{}, 1)
	daemon := clienttest.NewServer(t, clienttest.Hang(got, closed))
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() {
		runErr <- Run(ctx, Config{Socket: daemon.Socket}, &mcp.IOTransport{Reader: toServer, Writer: fromServer})
		fromServer.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: toClient, Writer: fromClient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeWithin(t, "client session", cs.Close)
	go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolName, Arguments: map[string]any{"argv": []string{"touch", "/x"}, "reason": "r"}})
	select {
	case <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the request did not reach the daemon")
	}
	cancel()
	select {
	case err := <-runErr:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return within 20s of its context ending")
	}
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("the connection to the daemon stayed open")
	}
}
