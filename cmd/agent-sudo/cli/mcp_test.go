package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/clienttest"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestDefaultSession(t *testing.T) {
	tests := []struct{ parent, cwd, want string }{
		{"claude", "/home/me/src/myproject", "claude-myproject"},
		{"codex", "/work/My Project", "codex-my-project"},
		{"node", "/", "node"},
		{"", "/srv/app", "app"},
		{"", "", "mcp"},
		{"", "/", "mcp"},
		{"Cursor Helper (Plugin)", "/tmp/x.y_z", "cursor-helper-plugin-x.y_z"},
		{"\x1b[31mevil", "/tmp/..", "31mevil"},
		{"a", "/" + strings.Repeat("b", 200), "a-" + strings.Repeat("b", 64)},
		{"..", "/tmp/...", "mcp"},
	}
	for _, tt := range tests {
		if got := defaultSession(tt.parent, tt.cwd); got != tt.want {
			t.Errorf("defaultSession(%q, %q) = %q, want %q", tt.parent, tt.cwd, got, tt.want)
		}
	}
}

func TestMCPUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--max-output", "0"}, "agent-sudo: mcp: --max-output 0 must be greater than zero\n"},
		{[]string{"--max-output", "lots"}, "agent-sudo: mcp: invalid value \"lots\" for flag -max-output: parse error; see 'agent-sudo help mcp'\n"},
		{[]string{"--progress-interval", "0s"}, "agent-sudo: mcp: --progress-interval 0s must be greater than zero\n"},
		{[]string{"--nope"}, "agent-sudo: mcp: flag provided but not defined: -nope; see 'agent-sudo help mcp'\n"},
		{[]string{"extra"}, "agent-sudo: mcp: unexpected argument \"extra\"; see 'agent-sudo help mcp'\n"},
		{[]string{"--session", strings.Repeat("s", 257)}, "agent-sudo: mcp: --session is 257 bytes; at most 256 are allowed\n"},
	}
	for _, tt := range tests {
		got := runCLI(context.Background(), nil, append([]string{"mcp"}, tt.args...)...)
		if got.code != exitUsage || got.stderr != tt.want || got.stdout != "" {
			t.Errorf("mcp %q = %d, stdout %q, stderr %q; want 2 and %q", tt.args, got.code, got.stdout, got.stderr, tt.want)
		}
	}
	got := runCLI(context.Background(), nil, "mcp", "--help")
	if got.code != 0 || !strings.Contains(got.stdout, "usage: agent-sudo mcp [flags]") || !strings.Contains(got.stdout, "--max-output bytes") {
		t.Errorf("mcp --help = %d, %q", got.code, got.stdout)
	}
}

// mcpInProcess runs "agent-sudo mcp args..." in-process over pipes and
// connects an MCP client to it.
func mcpInProcess(t *testing.T, env map[string]string, args ...string) *mcp.ClientSession {
	t.Helper()
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(context.Background(), append([]string{"mcp"}, args...), toServer, fromServer, &stderr, func(k string) string { return env[k] })
		fromServer.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: toClient, Writer: fromClient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		select {
		case code := <-done:
			if code != 0 || stderr.Len() > 0 {
				t.Errorf("mcp exited with %d when the client closed; stderr %q", code, stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Error("mcp did not exit within 20s of the client closing its stdin")
		}
	})
	return cs
}

func TestMCPInProcess(t *testing.T) {
	srv := clienttest.NewServer(t, clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK, Stdout: []byte("hi\n"), Stages: []proto.Stage{{}}})))
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		env         map[string]string
		args        []string
		session     string
		host        string
		wantSnippet string
	}{
		{"flags", nil, []string{"--socket", srv.Socket, "--session", "s-flag", "--host", "h1", "--max-output", "1"}, "s-flag", "h1", "stdout (3 bytes):\nh\n(truncated: 2 more bytes)\n"},
		{"environment", map[string]string{envSocket: srv.Socket, envSession: "s-env"}, nil, "s-env", host, "stdout (3 bytes):\nhi\n"},
		{"default session", map[string]string{envSocket: srv.Socket}, nil, defaultSession(parentProcessName(), workingDir()), host, "stdout (3 bytes):\nhi\n"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := mcpInProcess(t, tt.env, tt.args...)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"argv": []string{"echo", "hi"}, "reason": "test"}})
			if err != nil {
				t.Fatal(err)
			}
			if text := res.Content[0].(*mcp.TextContent).Text; res.IsError || !strings.Contains(text, tt.wantSnippet) {
				t.Errorf("result (isError %v):\n%s\nwant it to contain %q", res.IsError, text, tt.wantSnippet)
			}
			reqs := srv.Requests()
			if len(reqs) != i+1 {
				t.Fatalf("the daemon got %d requests, want %d", len(reqs), i+1)
			}
			if r := reqs[i]; r.Session != tt.session || r.Host != tt.host || r.Reason != "test" {
				t.Errorf("request session %q, host %q, reason %q; want %q, %q, test", r.Session, r.Host, r.Reason, tt.session, tt.host)
			}
		})
	}
}

func TestMCPInterrupted(t *testing.T) {
	got := make(chan *proto.Request, 1)
	closed := make(chan struct{}, 1)
	srv := clienttest.NewServer(t, clienttest.Hang(got, closed))
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	var stderr bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"mcp", "--socket", srv.Socket}, toServer, fromServer, &stderr, func(string) string { return "" })
		fromServer.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: toClient, Writer: fromClient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	callCtx, stopCall := context.WithCancel(context.Background())
	defer stopCall()
	go cs.CallTool(callCtx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"argv": []string{"touch", "/x"}, "reason": "r"}})
	select {
	case <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the request did not reach the daemon")
	}
	cancel() // as SIGINT or SIGTERM does
	select {
	case code := <-done:
		if want := "agent-sudo: mcp: interrupted; requests still waiting for approval were withdrawn\n"; code != exitInterrupted || stderr.String() != want {
			t.Errorf("mcp = %d, stderr %q; want %d, %q", code, stderr.String(), exitInterrupted, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("mcp did not return within 20s of being interrupted")
	}
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("the connection to the daemon stayed open")
	}
}

// End-to-end helpers: the real binaries and a real daemon come from
// daemontest. They need root, as the daemon's own end-to-end tests do.

func TestMain(m *testing.M) {
	daemontest.Main(m)
}

// e2eEnv is the environment of a child process: this one's without the
// agent-sudo variables, plus extra.
func e2eEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENT_SUDO_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// startMCP starts "bin mcp args..." in dir (if not empty) and connects an
// MCP client to it over its stdin and stdout.
func startMCP(t *testing.T, bin, dir string, opts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Env = e2eEnv()
	cmd.Dir = dir
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent-sudo-e2e", Version: "v0"}, opts).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to %s mcp: %v", bin, err)
	}
	t.Cleanup(func() {
		// Closing stdin ends the server: it must exit 0 and say nothing.
		if err := cs.Close(); err != nil {
			t.Errorf("agent-sudo mcp did not exit cleanly: %v", err)
		}
		stderr.Close()
		if b, _ := os.ReadFile(stderr.Name()); len(b) > 0 {
			t.Errorf("agent-sudo mcp wrote to stderr: %s", b)
		}
	})
	return cs
}

// execute calls the execute tool and returns the result's text.
func execute(t *testing.T, cs *mcp.ClientSession, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: args})
	if err != nil {
		t.Fatalf("execute %v: %v", args, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("execute %v: %d content blocks", args, len(res.Content))
	}
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

func TestMCPE2E(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	_, bin := daemontest.Binaries(t)
	quick := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "1s", Rules: daemontest.AskRules})
	cs := startMCP(t, bin, "", nil, "--socket", quick.Socket, "--session", "e2e-mcp")

	t.Run("tools/list", func(t *testing.T) {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Tools) != 1 || res.Tools[0].Name != "execute" {
			t.Fatalf("tools %+v", res.Tools)
		}
		props := res.Tools[0].InputSchema.(map[string]any)["properties"].(map[string]any)
		for _, p := range []string{"argv", "pipeline", "reason"} {
			if _, ok := props[p]; !ok {
				t.Errorf("the input schema has no %s", p)
			}
		}
	})

	t.Run("allowed", func(t *testing.T) {
		text, isError := execute(t, cs, map[string]any{"argv": []string{"echo", "hello world"}, "reason": "e2e"})
		if isError || !containsAll(text, "status: ok (the command ran)\n", "exit code: 0\nstdout (12 bytes):\nhello world\nstderr: (empty)\n") {
			t.Errorf("result (isError %v):\n%s", isError, text)
		}
	})

	t.Run("pipeline", func(t *testing.T) {
		text, isError := execute(t, cs, map[string]any{"pipeline": [][]string{{"echo", "hi"}, {"tr", "a-z", "A-Z"}}, "reason": "e2e"})
		if isError || !containsAll(text, "exit codes: stage 1 (echo) 0, stage 2 (tr) 0", "stdout (3 bytes):\nHI\n") {
			t.Errorf("result (isError %v):\n%s", isError, text)
		}
	})

	t.Run("denied", func(t *testing.T) {
		text, isError := execute(t, cs, map[string]any{"argv": []string{"rm", "-rf", "/nonexistent"}, "reason": "e2e"})
		if !isError || !containsAll(text, "status: denied (the command did not run)\n", `message: denied by rule "no rm"`) {
			t.Errorf("result (isError %v):\n%s", isError, text)
		}
	})

	t.Run("timed out", func(t *testing.T) {
		marker := filepath.Join(quick.Dir, "timed-out")
		text, isError := execute(t, cs, map[string]any{"argv": []string{"touch", marker}, "reason": "e2e"})
		if !isError || !containsAll(text, "status: timeout (nobody approved the request in time; the command did not run)\n", "message: nobody approved the request within approval_timeout (1s)") {
			t.Errorf("result (isError %v):\n%s", isError, text)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("the timed-out command ran")
		}
	})

	t.Run("binary output", func(t *testing.T) {
		text, isError := execute(t, cs, map[string]any{"argv": []string{"head", "-c", "64", "/dev/urandom"}, "reason": "e2e"})
		m := regexp.MustCompile(`stdout \(64 bytes, not valid UTF-8 text, shown as base64\):\n([A-Za-z0-9+/=]+)\n`).FindStringSubmatch(text)
		if isError || m == nil {
			t.Fatalf("result (isError %v):\n%s", isError, text)
		}
		if b, err := base64.StdEncoding.DecodeString(m[1]); err != nil || len(b) != 64 {
			t.Errorf("base64 %q decodes to %d bytes, %v", m[1], len(b), err)
		}
	})

	t.Run("non-zero exit", func(t *testing.T) {
		text, isError := execute(t, cs, map[string]any{"argv": []string{"ls", "/nonexistent-agent-sudo"}, "reason": "e2e"})
		if !isError || !containsAll(text, "status: ok (the command ran)\n", "exit code: 2\n", "stderr (", "/nonexistent-agent-sudo") {
			t.Errorf("result (isError %v):\n%s", isError, text)
		}
	})

	t.Run("unprivileged in a directory", func(t *testing.T) {
		text, isError := execute(t, cs, map[string]any{"argv": []string{"pwd"}, "reason": "e2e", "privileged": false, "cwd": quick.Dir})
		if isError || !containsAll(text, "stdout (", quick.Dir+"\n") {
			t.Errorf("result (isError %v):\n%s", isError, text)
		}
	})

	// A daemon that waits long enough for a human.
	slow := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "60s", Rules: daemontest.AskRules})
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}

	t.Run("cancelling the call withdraws the request", func(t *testing.T) {
		console := daemontest.Dial(t, slow.ApproverSocket)
		// The default session comes from the parent process (this test
		// binary) and the working directory.
		project := filepath.Join(t.TempDir(), "myproject")
		if err := os.Mkdir(project, 0o755); err != nil {
			t.Fatal(err)
		}
		cs := startMCP(t, bin, project, nil, "--socket", slow.Socket)
		marker := filepath.Join(slow.Dir, "withdrawn")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"argv": []string{"touch", marker}, "reason": "e2e cancel"}})
			errc <- err
		}()
		p := console.NextOf(approval.MsgPending)
		self, err := os.ReadFile("/proc/self/comm") // this process is the server's parent
		if err != nil {
			t.Fatal(err)
		}
		want := defaultSession(strings.TrimSpace(string(self)), project)
		if p.Request.Session != want || p.Request.Host != host || p.Request.Reason != "e2e cancel" {
			t.Errorf("pending request: session %q, host %q, reason %q; want %q, %q, %q", p.Request.Session, p.Request.Host, p.Request.Reason, want, host, "e2e cancel")
		}
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("CallTool returned %v, want context.Canceled", err)
		}
		if r := console.NextOf(approval.MsgResolved); r.ID != p.ID || r.Verdict != approval.Withdrawn {
			t.Fatalf("after cancelling: %+v, want request %s withdrawn", r, p.ID)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("the withdrawn request ran")
		}
	})

	t.Run("progress while waiting for approval", func(t *testing.T) {
		console := daemontest.Dial(t, slow.ApproverSocket)
		var mu sync.Mutex
		var progress []*mcp.ProgressNotificationParams
		got := make(chan struct{}, 100)
		opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params)
			mu.Unlock()
			got <- struct{}{}
		}}
		cs := startMCP(t, bin, "", opts, "--socket", slow.Socket, "--session", "e2e-progress", "--progress-interval", "200ms")
		marker := filepath.Join(slow.Dir, "approved")
		params := &mcp.CallToolParams{Name: "execute", Arguments: map[string]any{"argv": []string{"touch", marker}, "reason": "e2e progress"}}
		params.SetProgressToken("e2e-token")
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := cs.CallTool(context.Background(), params)
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		p := console.NextOf(approval.MsgPending)
		// What the daemon said of the request: it waits, at the one
		// console this test connected. A notification sent before the
		// daemon's progress line reached the server says only that it
		// waits; every one after says what the daemon said.
		said := "request " + p.ID + " waits for a human's approval (1 approver console connected); it times out in "
		saidIt := func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(progress) > 0 && strings.HasPrefix(progress[len(progress)-1].Message, said)
		}
		for n := 0; n < 3 || !saidIt(); n++ {
			select {
			case <-got:
			case <-time.After(30 * time.Second):
				t.Fatalf("%d progress notifications in 30s, the last not saying what the daemon said", n)
			}
		}
		console.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce})
		res := <-done
		if res == nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "status: ok (the command ran)\n") {
			t.Fatalf("result after approval: %+v", res)
		}
		if _, err := os.Stat(marker); err != nil {
			t.Errorf("the approved command did not run: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		// Once allowed, a command slower than the interval (a loaded
		// machine) is reported running; that too is what the daemon said.
		running := "request " + p.ID + " was allowed; its command is running ("
		informed := false
		for _, n := range progress {
			switch {
			case n.ProgressToken != "e2e-token":
				t.Errorf("progress notification %+v: another token", n)
			case strings.HasPrefix(n.Message, said):
				informed = true
			case informed && strings.HasPrefix(n.Message, running):
			case informed || !strings.HasPrefix(n.Message, "waiting for approval, or for the command to finish ("):
				t.Errorf("progress notification %+v, want what the daemon said (%q...) once it said it", n, said)
			}
		}
	})
}

// containsAll reports whether s contains every one of subs.
func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
