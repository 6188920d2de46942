package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/clienttest"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
	"github.com/agent-sudo/agent-sudo/proto"
)

// promptly bounds how long a cancelled run may take to return; generous for
// a loaded machine running -race.
const promptly = 2 * time.Second

// withID replaces %ID% in s by the id of the only request srv read.
func withID(t *testing.T, srv *clienttest.Server, s string) string {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server read %d requests, want 1", len(reqs))
	}
	return strings.ReplaceAll(s, "%ID%", reqs[0].ID)
}

func TestSplitStages(t *testing.T) {
	tests := []struct {
		args    []string
		want    [][]string
		wantErr string
	}{
		{args: []string{"ls"}, want: [][]string{{"ls"}}},
		{args: []string{"ls", "-l", "/"}, want: [][]string{{"ls", "-l", "/"}}},
		{args: []string{"a", "|", "b"}, want: [][]string{{"a"}, {"b"}}},
		{args: []string{"dpkg", "-l", "|", "grep", "-E", "a|b", "|", "wc", "-l"}, want: [][]string{{"dpkg", "-l"}, {"grep", "-E", "a|b"}, {"wc", "-l"}}},
		{args: []string{"echo", "||", "|x", "x|"}, want: [][]string{{"echo", "||", "|x", "x|"}}},
		{args: []string{"-x", "--", "|", "--"}, want: [][]string{{"-x", "--"}, {"--"}}},
		{args: nil, wantErr: "no command given"},
		{args: []string{}, wantErr: "no command given"},
		{args: []string{"|"}, wantErr: "the pipeline starts with '|': put a command before it"},
		{args: []string{"|", "ls"}, wantErr: "the pipeline starts with '|': put a command before it"},
		{args: []string{"ls", "|"}, wantErr: "the pipeline ends with '|': put a command after it"},
		{args: []string{"a", "|", "|", "b"}, wantErr: "stage 2 is empty: two '|' in a row"},
		{args: []string{"a", "|", "b", "|", "|", "c"}, wantErr: "stage 3 is empty: two '|' in a row"},
	}
	for _, tt := range tests {
		got, err := splitStages(tt.args)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("splitStages(%q) = %q, %v; want error %q", tt.args, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitStages(%q) = %q, %v; want %q", tt.args, got, err, tt.want)
		}
	}
}

func TestSplitStagesDoesNotShareCapacity(t *testing.T) {
	args := []string{"a", "|", "b"}
	got, err := splitStages(args)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(got[0], "x")
	if args[1] != "|" {
		t.Errorf("appending to a stage overwrote the arguments: %q", args)
	}
}

// TestRunUsageErrors covers command lines refused before anything is sent:
// the socket does not exist, so a request would exit 69, not 2.
func TestRunUsageErrors(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"no command", []string{}, "agent-sudo: run: no command given; see 'agent-sudo help run'\n"},
		{"only --", []string{"--"}, "agent-sudo: run: no command given; see 'agent-sudo help run'\n"},
		{"empty stage", []string{"--", "a", "|", "|", "b"}, "agent-sudo: run: stage 2 is empty: two '|' in a row; see 'agent-sudo help run'\n"},
		{"trailing pipe", []string{"--", "a", "|"}, "agent-sudo: run: the pipeline ends with '|': put a command after it; see 'agent-sudo help run'\n"},
		{"unknown flag", []string{"--sudo", "ls"}, "agent-sudo: run: flag provided but not defined: -sudo; see 'agent-sudo help run'\n"},
		{"missing value", []string{"--reason"}, "agent-sudo: run: flag needs an argument: -reason; see 'agent-sudo help run'\n"},
		{"env without =", []string{"--env", "FOO", "ls"}, "agent-sudo: run: invalid value \"FOO\" for flag -env: want NAME=VALUE; see 'agent-sudo help run'\n"},
		{"env bad name", []string{"--env", "1X=y", "ls"}, "agent-sudo: run: invalid value \"1X=y\" for flag -env: \"1X\" is not a valid variable name: names match [A-Za-z_][A-Za-z0-9_]*; see 'agent-sudo help run'\n"},
		{"env empty name", []string{"--env", "=y", "ls"}, "agent-sudo: run: invalid value \"=y\" for flag -env: \"\" is not a valid variable name: names match [A-Za-z_][A-Za-z0-9_]*; see 'agent-sudo help run'\n"},
		{"env twice", []string{"--env", "A=1", "--env", "A=2", "ls"}, "agent-sudo: run: invalid value \"A=2\" for flag -env: A is already set; give each variable once; see 'agent-sudo help run'\n"},
		{"env control chars", []string{"--env", "A\x1b[0m=1", "ls"}, "agent-sudo: run: invalid value \"A\\x1b[0m=1\" for flag -env: \"A\\x1b[0m\" is not a valid variable name: names match [A-Za-z_][A-Za-z0-9_]*; see 'agent-sudo help run'\n"},
		{"bad timeout", []string{"--timeout", "soon", "ls"}, "agent-sudo: run: invalid value \"soon\" for flag -timeout: parse error; see 'agent-sudo help run'\n"},
		{"negative timeout", []string{"--timeout", "-1s", "ls"}, "agent-sudo: run: --timeout -1s is negative\n"},
		{"bad bool", []string{"--json=maybe", "ls"}, "agent-sudo: run: invalid boolean value \"maybe\" for -json: parse error; see 'agent-sudo help run'\n"},
		{"relative cwd", []string{"--cwd", "src", "ls"}, "agent-sudo: run: --cwd \"src\" is not an absolute path\n"},
		{"forward agent while privileged", []string{"--forward-agent", "ls"}, "agent-sudo: run: --forward-agent needs --unprivileged: the SSH agent is never given to privileged commands\n"},
	}
	env := map[string]string{envSocket: filepath.Join(t.TempDir(), "none.sock")}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(context.Background(), env, append([]string{"run"}, tt.args...)...)
			if got.code != 2 || got.stderr != tt.wantStderr || got.stdout != "" {
				t.Errorf("run %q = %d, stdout %q, stderr\n %q\nwant 2, no stdout, stderr\n %q", tt.args, got.code, got.stdout, got.stderr, tt.wantStderr)
			}
		})
	}
}

func TestRunFlags(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	// run always asks for progress lines (docs/protocol.md, "Progress").
	defaults := proto.Request{
		Action:     proto.ActionExecute,
		Host:       host,
		Pipeline:   [][]string{{"true"}},
		Env:        map[string]string{},
		Privileged: true,
		Progress:   true,
	}
	tests := []struct {
		name   string
		env    map[string]string // AGENT_SUDO_SOCKET is set to the server unless given
		args   []string          // %SOCK% is replaced by the server's socket
		change func(*proto.Request)
	}{
		{name: "defaults", args: []string{"--", "true"}, change: func(*proto.Request) {}},
		{name: "no --", args: []string{"ls", "-l"}, change: func(r *proto.Request) { r.Pipeline = [][]string{{"ls", "-l"}} }},
		{name: "flags after the command are arguments", args: []string{"ls", "--json", "-h"}, change: func(r *proto.Request) { r.Pipeline = [][]string{{"ls", "--json", "-h"}} }},
		{name: "pipeline", args: []string{"--", "dpkg", "-l", "|", "grep", "nginx", "|", "wc", "-l"},
			change: func(r *proto.Request) { r.Pipeline = [][]string{{"dpkg", "-l"}, {"grep", "nginx"}, {"wc", "-l"}} }},
		{name: "--socket beats the environment", env: map[string]string{envSocket: "/nonexistent/x.sock"},
			args: []string{"--socket", "%SOCK%", "true"}, change: func(*proto.Request) {}},
		{name: "session from the environment", env: map[string]string{envSession: "from-env"},
			args: []string{"true"}, change: func(r *proto.Request) { r.Session = "from-env" }},
		{name: "--session beats the environment", env: map[string]string{envSession: "from-env"},
			args: []string{"--session", "from-flag", "true"}, change: func(r *proto.Request) { r.Session = "from-flag" }},
		{name: "--host", args: []string{"--host", "builder.example", "true"}, change: func(r *proto.Request) { r.Host = "builder.example" }},
		{name: "--host empty", args: []string{"--host=", "true"}, change: func(r *proto.Request) { r.Host = "" }},
		{name: "--reason", args: []string{"--reason", "install nginx: the web server", "true"}, change: func(r *proto.Request) { r.Reason = "install nginx: the web server" }},
		{name: "--env", args: []string{"--env", "DEBIAN_FRONTEND=noninteractive", "--env", "EMPTY=", "--env", "EQ=a=b", "true"},
			change: func(r *proto.Request) {
				r.Env = map[string]string{"DEBIAN_FRONTEND": "noninteractive", "EMPTY": "", "EQ": "a=b"}
			}},
		{name: "--unprivileged", args: []string{"--unprivileged", "true"}, change: func(r *proto.Request) { r.Privileged = false }},
		{name: "--forward-agent", args: []string{"--unprivileged", "--forward-agent", "true"},
			change: func(r *proto.Request) { r.Privileged, r.ForwardAgent = false, true }},
		{name: "--cwd", args: []string{"--cwd", "/srv/www", "true"}, change: func(r *proto.Request) { r.Cwd = "/srv/www" }},
		{name: "single-dash flags", args: []string{"-reason=r", "-unprivileged", "true"}, change: func(r *proto.Request) { r.Reason, r.Privileged = "r", false }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := clienttest.NewServer(t, clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusDenied})))
			env := map[string]string{envSocket: srv.Socket}
			for k, v := range tt.env {
				env[k] = v
			}
			args := []string{"run"}
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "%SOCK%", srv.Socket))
			}
			got := runCLI(context.Background(), env, args...)
			if got.code != exitDenied {
				t.Fatalf("run %q = %d, stderr %q; want the fake daemon's denial (77)", args, got.code, got.stderr)
			}
			sent := srv.Requests()[0]
			want := defaults
			tt.change(&want)
			want.ID, want.Time = sent.ID, sent.Time
			if !reflect.DeepEqual(sent, &want) {
				t.Errorf("run %q sent\n %+v\nwant\n %+v", args, sent, &want)
			}
		})
	}
}

func TestRunAnswers(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		handler    clienttest.Handler
		wantCode   int
		wantStdout string
		wantStderr string // %ID% is the request's id
	}{{
		name:     "ok",
		args:     []string{"echo", "hi"},
		handler:  clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK, Stages: []proto.Stage{{ExitCode: 0, Stderr: []byte("warning\n")}}, Stdout: []byte("hi\n")})),
		wantCode: 0, wantStdout: "hi\n", wantStderr: "warning\n",
	}, {
		name:     "last stage's status",
		args:     []string{"a", "|", "b"},
		handler:  clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK, Stages: []proto.Stage{{ExitCode: 1, Stderr: []byte("a: oops\n")}, {ExitCode: 0, Stderr: []byte("b: fine\n")}}, Stdout: []byte("out")})),
		wantCode: 0, wantStdout: "out", wantStderr: "a: oops\nb: fine\n",
	}, {
		name:     "last stage failed",
		args:     []string{"a", "|", "b"},
		handler:  clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK, Stages: []proto.Stage{{ExitCode: 0}, {ExitCode: 3}}})),
		wantCode: 3,
	}, {
		name:     "pipefail: first failure",
		args:     []string{"--pipefail", "a", "|", "b", "|", "c"},
		handler:  clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK, Stages: []proto.Stage{{ExitCode: 0}, {ExitCode: 141}, {ExitCode: 2}}})),
		wantCode: 141,
	}, {
		name:     "pipefail: all succeeded",
		args:     []string{"--pipefail", "a", "|", "b"},
		handler:  clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK, Stages: []proto.Stage{{ExitCode: 0}, {ExitCode: 0}}})),
		wantCode: 0,
	}, {
		name:     "pipefail: only the first failed",
		args:     []string{"--pipefail", "a", "|", "b"},
		handler:  clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK, Stages: []proto.Stage{{ExitCode: 1}, {ExitCode: 0}}})),
		wantCode: 1,
	}, {
		name:     "status 255 passes through",
		args:     []string{"x"},
		handler:  clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK, Stages: []proto.Stage{{ExitCode: 255}}})),
		wantCode: 255,
	}, {
		name:       "denied",
		args:       []string{"rm", "-rf", "/"},
		handler:    clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusDenied, Message: "not on my watch"})),
		wantCode:   77,
		wantStderr: "agent-sudo: request %ID% was denied: not on my watch; change the request or ask the user before retrying\n",
	}, {
		name:       "denied without a message",
		args:       []string{"x"},
		handler:    clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusDenied})),
		wantCode:   77,
		wantStderr: "agent-sudo: request %ID% was denied; change the request or ask the user before retrying\n",
	}, {
		name:       "timeout before start",
		args:       []string{"x"},
		handler:    clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusTimeout, Message: "no approver answered within 5m0s"})),
		wantCode:   124,
		wantStderr: "agent-sudo: request %ID% timed out before it started: no approver answered within 5m0s; retry when someone can approve it\n",
	}, {
		name: "timeout while running",
		args: []string{"sleep", "1d", "|", "cat"},
		handler: clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusTimeout, Message: "killed after 1h",
			Stages: []proto.Stage{{ExitCode: 137, Stderr: []byte("zzz\n")}, {ExitCode: 0}}, Stdout: []byte("partial")})),
		wantCode: 124, wantStdout: "partial",
		wantStderr: "zzz\nagent-sudo: request %ID% timed out while running: killed after 1h; its output is incomplete\n",
	}, {
		name:       "error",
		args:       []string{"x"},
		handler:    clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusError, Message: `invalid request: field "cwd": must be an absolute path`})),
		wantCode:   70,
		wantStderr: "agent-sudo: agent-sudod did not run request %ID%: invalid request: field \"cwd\": must be an absolute path (the daemon's log may say more: journalctl -u agent-sudo)\n",
	}, {
		name:       "error without an id",
		args:       []string{"x"},
		handler:    clienttest.Reply(func(*proto.Request) string { return `{"id":"","status":"error","message":"invalid JSON"}` + "\n" }),
		wantCode:   70,
		wantStderr: "agent-sudo: agent-sudod did not run request %ID%: invalid JSON (the daemon's log may say more: journalctl -u agent-sudo)\n",
	}, {
		name:       "hostile message",
		args:       []string{"x"},
		handler:    clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusDenied, Message: "no\x1b]0;pwned\x07\nagent-sudo: approved \u202eyes\r"})),
		wantCode:   77,
		wantStderr: `agent-sudo: request %ID% was denied: no\x1b]0;pwned\x07\x0aagent-sudo: approved \u202eyes\x0d; change the request or ask the user before retrying` + "\n",
	}, {
		name:       "protocol violation",
		args:       []string{"x"},
		handler:    clienttest.Reply(func(*proto.Request) string { return `{"id":"someone-else","status":"denied"}` + "\n" }),
		wantCode:   70,
		wantStderr: "agent-sudo: bad answer from agent-sudod at %SOCK%: read response: protocol violation: response id \"someone-else\" does not match request id \"%ID%\"; check that --socket names an agent-sudo daemon of this version, or report a daemon bug\n",
	}, {
		name:       "hostile protocol violation",
		args:       []string{"x"},
		handler:    clienttest.Reply(func(*proto.Request) string { return "{\"id\":\"\u202e\",\"status\":\"\x1b[2J\"}\n" }),
		wantCode:   70,
		wantStderr: "agent-sudo: bad answer from agent-sudod at %SOCK%: read response: protocol violation: response is not a valid JSON object: at byte offset 22: control character 0x1b in string; check that --socket names an agent-sudo daemon of this version, or report a daemon bug\n",
	}, {
		name:       "closed without answering",
		args:       []string{"x"},
		handler:    clienttest.Reply(func(*proto.Request) string { return "" }),
		wantCode:   70,
		wantStderr: "agent-sudo: bad answer from agent-sudod at %SOCK%: read response: protocol violation: the daemon closed the connection without answering; check that --socket names an agent-sudo daemon of this version, or report a daemon bug\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := clienttest.NewServer(t, tt.handler)
			got := runCLI(context.Background(), map[string]string{envSocket: srv.Socket}, append([]string{"run"}, tt.args...)...)
			wantStderr := strings.ReplaceAll(withID(t, srv, tt.wantStderr), "%SOCK%", srv.Socket)
			if got.code != tt.wantCode {
				t.Errorf("run %q = %d, want %d", tt.args, got.code, tt.wantCode)
			}
			if got.stdout != tt.wantStdout {
				t.Errorf("run %q stdout:\n got %q\nwant %q", tt.args, got.stdout, tt.wantStdout)
			}
			if got.stderr != wantStderr {
				t.Errorf("run %q stderr:\n got %q\nwant %q", tt.args, got.stderr, wantStderr)
			}
		})
	}
}

func TestRunBinarySafe(t *testing.T) {
	all := make([]byte, 0, 512)
	for i := range 256 {
		all = append(all, byte(i))
	}
	all = append(all, "\r\n\xff\xfe\x00\x1b[2J"...)
	reversed := make([]byte, len(all))
	for i, b := range all {
		reversed[len(all)-1-i] = b
	}
	srv := clienttest.NewServer(t, clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK,
		Stages: []proto.Stage{{ExitCode: 0, Stderr: all}, {ExitCode: 0, Stderr: reversed}}, Stdout: all})))
	got := runCLI(context.Background(), map[string]string{envSocket: srv.Socket}, "run", "a", "|", "b")
	if got.code != 0 {
		t.Errorf("run = %d, want 0", got.code)
	}
	if got.stdout != string(all) {
		t.Errorf("stdout:\n got %q\nwant %q", got.stdout, all)
	}
	if want := string(all) + string(reversed); got.stderr != want {
		t.Errorf("stderr:\n got %q\nwant %q", got.stderr, want)
	}
}

func TestRunTruncation(t *testing.T) {
	tests := []struct {
		name       string
		resp       proto.Response
		wantStderr string
	}{{
		name: "stdout",
		resp: proto.Response{Status: proto.StatusOK, Stdout: []byte("o"), StdoutTruncated: true,
			Stages: []proto.Stage{{ExitCode: 0, Stderr: []byte("e1\n")}, {ExitCode: 0, Stderr: []byte("e2\n")}}},
		wantStderr: "e1\ne2\nagent-sudo: stdout was truncated at 16 MiB by the daemon\n",
	}, {
		name: "stderr of one stage",
		resp: proto.Response{Status: proto.StatusOK, Stdout: []byte("o"),
			Stages: []proto.Stage{{ExitCode: 0, Stderr: []byte("e1\n"), StderrTruncated: true}, {ExitCode: 0}}},
		wantStderr: "e1\nagent-sudo: stderr of stage 1 (find) was truncated at 16 MiB by the daemon\n",
	}, {
		name: "everything",
		resp: proto.Response{Status: proto.StatusOK, Stdout: []byte("o"), StdoutTruncated: true,
			Stages: []proto.Stage{{ExitCode: 0, StderrTruncated: true}, {ExitCode: 0, StderrTruncated: true}}},
		wantStderr: "agent-sudo: stdout was truncated at 16 MiB by the daemon\n" +
			"agent-sudo: stderr of stage 1 (find) was truncated at 16 MiB by the daemon\n" +
			"agent-sudo: stderr of stage 2 (sort) was truncated at 16 MiB by the daemon\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := clienttest.NewServer(t, clienttest.Respond(clienttest.Answer(tt.resp)))
			got := runCLI(context.Background(), map[string]string{envSocket: srv.Socket}, "run", "find", "/", "|", "sort")
			if got.code != 0 || got.stdout != "o" || got.stderr != tt.wantStderr {
				t.Errorf("run = %d, stdout %q, stderr\n %q\nwant 0, \"o\", stderr\n %q", got.code, got.stdout, got.stderr, tt.wantStderr)
			}
		})
	}
}

func TestRunJSON(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		line     string // %ID% is the request's id
		wantCode int
	}{
		{"ok", []string{"--json", "x"}, `{"id":"%ID%","status":"ok","future":1,"stages":[{"exit_code":3,"stderr":"ZQ=="}],"stdout":"bw==","stdout_truncated":true}` + "\n", 3},
		{"pipefail", []string{"--json", "--pipefail", "a", "|", "b"}, `{"id":"%ID%","status":"ok","stages":[{"exit_code":4},{"exit_code":0}],"stdout":""}` + "\n", 4},
		{"denied", []string{"--json", "x"}, `{"id":"%ID%","status":"denied","message":"no\u001b"}` + "\n", 77},
		{"timeout", []string{"--json", "x"}, `{"id":"%ID%","status":"timeout"}` + "\n", 124},
		{"error", []string{"--json", "x"}, `{"id":"","status":"error","message":"bad"}` + "\n", 70},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := clienttest.NewServer(t, clienttest.Reply(func(req *proto.Request) string {
				return strings.ReplaceAll(tt.line, "%ID%", req.ID)
			}))
			got := runCLI(context.Background(), map[string]string{envSocket: srv.Socket}, append([]string{"run"}, tt.args...)...)
			if want := withID(t, srv, tt.line); got.code != tt.wantCode || got.stdout != want || got.stderr != "" {
				t.Errorf("run %q = %d, stdout %q, stderr %q\nwant %d, stdout %q, no stderr", tt.args, got.code, got.stdout, got.stderr, tt.wantCode, want)
			}
		})
	}
}

func TestRunJSONProtocolViolation(t *testing.T) {
	srv := clienttest.NewServer(t, clienttest.Reply(func(*proto.Request) string { return `{"id":"x","status":"ok"}` + "\n" }))
	got := runCLI(context.Background(), map[string]string{envSocket: srv.Socket}, "run", "--json", "true")
	want := withID(t, srv, "agent-sudo: bad answer from agent-sudod at "+srv.Socket+": read response: protocol violation: response id \"x\" does not match request id \"%ID%\"; check that --socket names an agent-sudo daemon of this version, or report a daemon bug\n")
	if got.code != 70 || got.stdout != "" || got.stderr != want {
		t.Errorf("run --json = %d, stdout %q, stderr\n %q\nwant 70, no stdout, stderr\n %q", got.code, got.stdout, got.stderr, want)
	}
}

func TestRunUnreachable(t *testing.T) {
	dir := t.TempDir()
	refused := filepath.Join(dir, "refused.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: refused, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	missing := filepath.Join(dir, "missing.sock")
	tests := []struct {
		name       string
		env        map[string]string
		args       []string
		wantStderr string
	}{
		{"missing socket", map[string]string{envSocket: missing}, []string{"true"},
			"agent-sudo: agent-sudod is not running: cannot reach agent-sudod at " + missing + ": no such file or directory\nagent-sudo: hint: " + notRunning + "\n"},
		{"refused", nil, []string{"--socket", refused, "true"},
			"agent-sudo: agent-sudod is not running: cannot reach agent-sudod at " + refused + ": connection refused\nagent-sudo: hint: " + notRunning + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(context.Background(), tt.env, append([]string{"run"}, tt.args...)...)
			if got.code != 69 || got.stdout != "" || got.stderr != tt.wantStderr {
				t.Errorf("run %q = %d, stdout %q, stderr\n %q\nwant 69, no stdout, stderr\n %q", tt.args, got.code, got.stdout, got.stderr, tt.wantStderr)
			}
		})
	}
}

// TestRunFailedMessages covers failures that a test running as root cannot
// provoke through a real socket.
func TestRunFailedMessages(t *testing.T) {
	dialErr := func(errno syscall.Errno) error {
		return &client.UnreachableError{Socket: "/s.sock",
			Err: &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", errno)}}
	}
	tests := []struct {
		name     string
		err      error
		timeout  time.Duration
		wantCode int
		want     string
	}{
		{"permission denied", dialErr(syscall.EACCES), 0, 69,
			"agent-sudo: cannot reach agent-sudod at /s.sock: permission denied; check that your user may open the socket (ls -l /s.sock)\n"},
		{"refused by a sandbox", dialErr(syscall.EPERM), 0, 69,
			"agent-sudo: cannot reach agent-sudod at /s.sock: operation not permitted; a sandbox or security policy (seccomp, Landlock, AppArmor, SELinux) refused the connection, not the socket's permissions\n" +
				"agent-sudo: hint: run the agent where it may connect to /s.sock\n"},
		{"backlog full", dialErr(syscall.EAGAIN), 0, 69,
			"agent-sudo: cannot reach agent-sudod at /s.sock: resource temporarily unavailable; is the daemon running? (systemctl status agent-sudo)\n"},
		{"deadline without --timeout", fmt.Errorf("read response: %w", context.DeadlineExceeded), 0, 124,
			"agent-sudo: no answer to request r1 before the deadline: agent-sudod had not said yet whether it waited for approval: if it did, it is withdrawn and will not run; if a rule or a session grant allowed it, it runs to its end (agent-sudo audit show r1 has its records)\n"},
		{"connection reset", fmt.Errorf("read response: %w", &net.OpError{Op: "read", Net: "unix", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), 0, 70,
			"agent-sudo: lost the connection to agent-sudod at /s.sock: read response: read unix: read: connection reset by peer; check the daemon (systemctl status agent-sudo)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			inv := &invocation{stderr: &stderr}
			code := inv.runFailed(tt.err, &runOptions{socket: "/s.sock", timeout: tt.timeout}, "r1", nil)
			if code != tt.wantCode || stderr.String() != tt.want {
				t.Errorf("runFailed(%v) = %d, stderr\n %q\nwant %d, stderr\n %q", tt.err, code, stderr.String(), tt.wantCode, tt.want)
			}
		})
	}
}

func TestRunNotSent(t *testing.T) {
	srv := clienttest.NewServer(t, clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusDenied})))
	got := runCLI(context.Background(), map[string]string{envSocket: srv.Socket}, "run", "cat", "caf\xe9")
	want := "agent-sudo: encode request: invalid request: field \"pipeline[0][1]\": is not valid UTF-8; the protocol carries only UTF-8 text; nothing was sent\n"
	if got.code != 70 || got.stderr != want {
		t.Errorf("run = %d, stderr\n %q\nwant 70, stderr\n %q", got.code, got.stderr, want)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("server read %d requests, want none", n)
	}
}

func TestRunTimeoutFlag(t *testing.T) {
	closed := make(chan struct{}, 1)
	srv := clienttest.NewServer(t, clienttest.Hang(nil, closed))
	start := time.Now()
	got := runCLI(context.Background(), map[string]string{envSocket: srv.Socket}, "run", "--timeout", "200ms", "true")
	if took := time.Since(start); took > 200*time.Millisecond+promptly {
		t.Errorf("run --timeout 200ms took %v", took)
	}
	want := withID(t, srv, "agent-sudo: no answer to request %ID% within --timeout 200ms: agent-sudod had not said yet whether it waited for approval: if it did, it is withdrawn and will not run; if a rule or a session grant allowed it, it runs to its end (agent-sudo audit show %ID% has its records)\n")
	if got.code != 124 || got.stdout != "" || got.stderr != want {
		t.Errorf("run = %d, stdout %q, stderr\n %q\nwant 124, no stdout, stderr\n %q", got.code, got.stdout, got.stderr, want)
	}
	select {
	case <-closed:
	case <-time.After(promptly):
		t.Errorf("the connection was not closed within %v of the timeout", promptly)
	}
}

func TestRunInterrupted(t *testing.T) {
	reqs := make(chan *proto.Request, 1)
	srv := clienttest.NewServer(t, clienttest.Hang(reqs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	go func() { done <- runCLI(ctx, map[string]string{envSocket: srv.Socket}, "run", "true") }()
	var req *proto.Request
	select {
	case req = <-reqs:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never read the request")
	}
	cancel()
	select {
	case got := <-done:
		want := "agent-sudo: interrupted while waiting for agent-sudod to answer request " + req.ID + ": agent-sudod had not said yet whether it waited for approval: if it did, it is withdrawn and will not run; if a rule or a session grant allowed it, it runs to its end (agent-sudo audit show " + req.ID + " has its records)\n"
		if got.code != 130 || got.stdout != "" || got.stderr != want {
			t.Errorf("run = %d, stdout %q, stderr\n %q\nwant 130, no stdout, stderr\n %q", got.code, got.stdout, got.stderr, want)
		}
	case <-time.After(promptly):
		t.Fatalf("run did not return within %v of cancel", promptly)
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func TestHelpWriteFailure(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"help", "run"}, {"run", "-h"}} {
		var stderr strings.Builder
		code := Main(context.Background(), args, strings.NewReader(""), failWriter{}, &stderr, func(string) string { return "" })
		if want := "agent-sudo: write help: file already closed\n"; code != 74 || stderr.String() != want {
			t.Errorf("Main(%q) = %d, stderr %q; want 74, %q", args, code, stderr.String(), want)
		}
	}
}

func TestRunWriteFailure(t *testing.T) {
	srv := clienttest.NewServer(t, clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK,
		Stages: []proto.Stage{{ExitCode: 0}}, Stdout: []byte("out")})))
	var stderr strings.Builder
	code := Main(context.Background(), []string{"run", "true"}, strings.NewReader(""), failWriter{}, &stderr,
		func(k string) string { return map[string]string{envSocket: srv.Socket}[k] })
	want := "agent-sudo: write the command's stdout: file already closed\n"
	if code != 74 || stderr.String() != want {
		t.Errorf("run = %d, stderr %q; want 74, %q", code, stderr.String(), want)
	}
}

// TestRunSaysBusyOnce: a busy daemon's refusal (nothing ran) is retried by
// the client, and run tells the human once, then prints the answer.
func TestRunSaysBusyOnce(t *testing.T) {
	var asked atomic.Int32
	srv := clienttest.NewServer(t, clienttest.Respond(func(req *proto.Request) *proto.Response {
		if asked.Add(1) <= 3 {
			return &proto.Response{Status: proto.StatusError, Message: "busy: 64 connections are open or waiting (max_connections); try again"}
		}
		return &proto.Response{ID: req.ID, Status: proto.StatusOK, Stages: []proto.Stage{{}}, Stdout: []byte("ran\n")}
	}))
	got := runCLI(context.Background(), map[string]string{envSocket: srv.Socket}, "run", "--no-stdin", "--", "true")
	if got.code != 0 || got.stdout != "ran\n" || asked.Load() != 4 {
		t.Fatalf("run = %d %q %q after %d connections, want 0 \"ran\\n\" after 4", got.code, got.stdout, got.stderr, asked.Load())
	}
	const say = "agent-sudo: agent-sudod is busy, nothing ran; retrying: busy: 64 connections"
	if strings.Count(got.stderr, say) != 1 {
		t.Errorf("stderr %q, want %q once", got.stderr, say)
	}
}

// hangAfter is a fake daemon that reads the request, writes the progress
// lines progress makes for it, and then never answers, until the client
// closes the connection.
func hangAfter(progress func(req *proto.Request) []proto.Progress) clienttest.Handler {
	return func(c *clienttest.Conn) {
		req, err := c.ReadRequest()
		if err != nil {
			return
		}
		if req.Progress {
			for _, p := range progress(req) {
				proto.WriteProgress(c, p)
			}
		}
		io.Copy(io.Discard, c)
	}
}

// TestRunSaysWhatBecameOfTheRequest: when run stops waiting (--timeout),
// it says what became of the request from what the daemon last said of
// it: withdrawn while it waited for a human, running to its end once
// allowed. Before, it said "it may still be approved and run" even of a
// request the daemon had withdrawn. The timeout expires on the test's
// clock once run has said what the daemon said.
func TestRunSaysWhatBecameOfTheRequest(t *testing.T) {
	for _, tt := range []struct {
		name     string
		progress string
		said     string
		want     string
	}{
		{"waiting", proto.ProgressWaiting, "waits for a human's approval (1 approver console connected)",
			"it was still waiting for approval, so it is withdrawn and will not run"},
		{"running", proto.ProgressRunning, "was allowed; its command is running", "its command had started, and runs to its end without you"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := clienttest.NewServer(t, hangAfter(func(req *proto.Request) []proto.Progress {
				return []proto.Progress{{Progress: tt.progress, ID: req.ID, Consoles: 1, Deadline: time.Now().Add(time.Minute)}}
			}))
			e := newExpiry()
			got := runWatched(t, context.Background(), map[string]string{envSocket: srv.Socket}, tt.said, e.expire, e.with,
				"run", "--timeout", "2s", "true")
			code, stderr := got.code, got.stderr
			want := withID(t, srv, "agent-sudo: no answer to request %ID% within --timeout 2s: "+tt.want+" (agent-sudo audit show %ID% has its records)\n")
			// After the wait notice (TestRunSaysNoConsoleIsConnected).
			if code != 124 || !strings.HasSuffix(stderr, "\n"+want) {
				t.Errorf("run = %d, stderr\n %q\nwant 124, stderr\n %q", code, stderr, want)
			}
			if reqs := srv.Requests(); len(reqs) != 1 || !reqs[0].Progress {
				t.Errorf("run did not ask for progress lines: %+v", reqs)
			}
		})
	}
}

// TestRunSaysNoConsoleIsConnected: a request that waits for a human while
// no approver console is connected is told so, with the time it has left
// and what to run, instead of waiting approval_timeout in silence. The
// notice comes at once (no delay) and the wait ends on the test's clock
// once it has been said.
func TestRunSaysNoConsoleIsConnected(t *testing.T) {
	for _, tt := range []struct {
		consoles, web int
		want          string
	}{
		{0, 0, "waits for a human's approval, and no approver console or web approver is connected; it times out in "},
		{2, 0, "waits for a human's approval (2 approver consoles connected); it times out in "},
		{0, 1, "waits for a human's approval (1 web approver connected); it times out in "},
		{1, 2, "waits for a human's approval (1 approver console and 2 web approvers connected); it times out in "},
	} {
		srv := clienttest.NewServer(t, hangAfter(func(req *proto.Request) []proto.Progress {
			return []proto.Progress{{Progress: proto.ProgressWaiting, ID: req.ID, Consoles: tt.consoles, WebApprovers: tt.web, Deadline: time.Now().Add(5 * time.Minute)}}
		}))
		e := newExpiry()
		got := runWatched(t, context.Background(), map[string]string{envSocket: srv.Socket}, tt.want, e.expire, e.with,
			"run", "--timeout", "1h", "true")
		code, stderr := got.code, got.stderr
		// The notice (after a generic one when the progress line came
		// after the notice's start), then the withdrawal.
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		notice := lines[max(0, len(lines)-2)]
		if code != exitTimeout || len(lines) < 2 || len(lines) > 3 || !strings.Contains(notice, tt.want) || !strings.Contains(lines[len(lines)-1], "withdrawn and will not run") {
			t.Errorf("%d consoles, %d web approvers: exit %d, stderr\n%s\nwant %d, a notice containing %q, then the withdrawal", tt.consoles, tt.web, code, stderr, exitTimeout, tt.want)
		}
		if tt.consoles+tt.web == 0 && !strings.Contains(notice, "unless someone runs 'sudo agent-sudo approve'") {
			t.Errorf("no console: the notice does not say what to run: %s", notice)
		}
	}
}

// TestRunRefusesRelativePathsWithoutCwd: "run -- touch ./f" would make /f
// (a request without cwd runs in /); run refuses it, saying why and what to
// give, and sends nothing. With --cwd it is sent.
func TestRunRefusesRelativePathsWithoutCwd(t *testing.T) {
	srv := clienttest.NewServer(t, clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK, Stages: []proto.Stage{{}}})))
	got := runCLI(context.Background(), map[string]string{envSocket: srv.Socket}, "run", "--", "touch", "./f")
	want := "agent-sudo: run: \"./f\" (stage 1) is a relative path, and without --cwd the command runs in /, not here (run does not send this directory: the daemon may be on another machine or outside this container); give --cwd \"$PWD\" or an absolute path; nothing was sent\n"
	if got.code != exitUsage || got.stderr != want {
		t.Errorf("run -- touch ./f = %d, stderr\n %q\nwant %d, stderr\n %q", got.code, got.stderr, exitUsage, want)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
	if got := runCLI(context.Background(), map[string]string{envSocket: srv.Socket}, "run", "--cwd", "/tmp", "--", "touch", "./f"); got.code != 0 {
		t.Errorf("run --cwd /tmp -- touch ./f = %d, %q", got.code, got.stderr)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Cwd != "/tmp" {
		t.Errorf("requests %+v, want one with cwd /tmp", reqs)
	}
}

// TestFitLine: the waiting line is cut to one column less than the
// terminal's width, by display width, with "…" when cut, and left whole
// when the width is unknown.
func TestFitLine(t *testing.T) {
	long := "agent-sudo: / 3s waits for approval, 1 approver console and 1 web approver connected; times out in 4m57s"
	for _, tt := range []struct {
		line string
		cols int
		want string
	}{
		{long, 0, long},
		{long, 200, long},
		{long, 80, "agent-sudo: / 3s waits for approval, 1 approver console and 1 web approver …"},
		{"agent-sudo: 日本語日本語日本語", 20, "agent-sudo: …"},
		{"日本語日本語日本語", 16, "日本語日本語…"},
		{"short", 6, "short"},
		{"shorts", 6, "sho…"},
		{`agent-sudo: \x1b[2J`, 16, "agent-sudo: …"},
		{"abc", 3, ""},
	} {
		got := fitLine(tt.line, tt.cols)
		if got != tt.want {
			t.Errorf("fitLine(%q, %d) = %q, want %q", tt.line, tt.cols, got, tt.want)
		}
		if tt.cols > 0 && termtext.Width(got) > tt.cols-1 {
			t.Errorf("fitLine(%q, %d) = %q, %d columns wide", tt.line, tt.cols, got, termtext.Width(got))
		}
	}
}
