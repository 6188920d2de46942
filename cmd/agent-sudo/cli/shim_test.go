package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/clienttest"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
)

func TestParseSudo(t *testing.T) {
	tests := []struct {
		args    []string
		want    sudoCommand
		wantErr string
	}{
		{args: []string{"true"}, want: sudoCommand{argv: []string{"true"}}},
		{args: []string{"-n", "apt", "install", "-y", "x"}, want: sudoCommand{nonInteractive: true, argv: []string{"apt", "install", "-y", "x"}}},
		{args: []string{"-E", "env"}, want: sudoCommand{envAll: true, argv: []string{"env"}}},
		{args: []string{"--preserve-env", "env"}, want: sudoCommand{envAll: true, argv: []string{"env"}}},
		{args: []string{"--preserve-env=A,B_2", "env"}, want: sudoCommand{envNames: []string{"A", "B_2"}, argv: []string{"env"}}},
		{args: []string{"-nEHu", "root", "--", "ls", "-l"}, want: sudoCommand{nonInteractive: true, envAll: true, user: "root", argv: []string{"ls", "-l"}}},
		{args: []string{"-uroot", "id"}, want: sudoCommand{user: "root", argv: []string{"id"}}},
		{args: []string{"--user=alice", "id"}, want: sudoCommand{user: "alice", argv: []string{"id"}}},
		{args: []string{"--user", "#0", "id"}, want: sudoCommand{user: "#0", argv: []string{"id"}}},
		{args: []string{"--non-interactive", "--set-home", "id"}, want: sudoCommand{nonInteractive: true, argv: []string{"id"}}},
		{args: []string{"ls", "-n", "--", "-E"}, want: sudoCommand{argv: []string{"ls", "-n", "--", "-E"}}},
		{args: []string{"--", "-weird", "x"}, want: sudoCommand{argv: []string{"-weird", "x"}}},
		{args: []string{"-", "x"}, want: sudoCommand{argv: []string{"-", "x"}}},
		{args: []string{"sh", "-c", "echo hi | tr a-z A-Z"}, want: sudoCommand{argv: []string{"sh", "-c", "echo hi | tr a-z A-Z"}}},
		{args: []string{"-h"}, want: sudoCommand{help: true, argv: []string{}}},
		{args: []string{"--help"}, want: sudoCommand{help: true, argv: []string{}}},
		{args: []string{}, want: sudoCommand{argv: []string{}}},
		{args: []string{"DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "x"},
			want: sudoCommand{assign: []string{"DEBIAN_FRONTEND=noninteractive"}, argv: []string{"apt-get", "install", "-y", "x"}}},
		{args: []string{"-nE", "A=1", "B=", "_c=x=y", "env", "D=2"},
			want: sudoCommand{nonInteractive: true, envAll: true, assign: []string{"A=1", "B=", "_c=x=y"}, argv: []string{"env", "D=2"}}},
		{args: []string{"--", "A=1", "env"}, want: sudoCommand{assign: []string{"A=1"}, argv: []string{"env"}}},
		{args: []string{"1A=x", "env"}, want: sudoCommand{argv: []string{"1A=x", "env"}}},
		{args: []string{"=x", "env"}, want: sudoCommand{argv: []string{"=x", "env"}}},
		{args: []string{"./a=b"}, want: sudoCommand{argv: []string{"./a=b"}}},
		{args: []string{"A=1"}, want: sudoCommand{assign: []string{"A=1"}, argv: []string{}}},
		{args: []string{"-i"}, wantErr: "sudo flag -i is not supported: there is no interactive shell"},
		{args: []string{"-ni", "ls"}, wantErr: "sudo flag -i is not supported"},
		{args: []string{"-s", "ls"}, wantErr: "sudo flag -s is not supported: there is no interactive shell"},
		{args: []string{"--login"}, wantErr: "sudo flag --login is not supported"},
		{args: []string{"-S", "ls"}, wantErr: "sudo flag -S is not supported: no password is ever asked for"},
		{args: []string{"-k"}, wantErr: "sudo flag -k is not supported: there are no cached credentials"},
		{args: []string{"-v"}, wantErr: "sudo flag -v is not supported"},
		{args: []string{"-l"}, wantErr: "sudo flag -l is not supported: the rules are in agent-sudod's configuration"},
		{args: []string{"-g", "wheel", "id"}, wantErr: "sudo flag -g is not supported"},
		{args: []string{"--chdir=/tmp", "ls"}, wantErr: "sudo flag --chdir is not supported: it has no meaning for agent-sudo"},
		{args: []string{"-u"}, wantErr: "sudo option -u needs a user name"},
		{args: []string{"--user"}, wantErr: "sudo option --user needs a user name"},
		{args: []string{"--non-interactive=yes", "ls"}, wantErr: "sudo option --non-interactive takes no value"},
		{args: []string{"--preserve-env=A,", "ls"}, wantErr: `--preserve-env: "" is not a variable name`},
		{args: []string{"--preserve-env=1A", "ls"}, wantErr: `--preserve-env: "1A" is not a variable name`},
	}
	for _, tt := range tests {
		got, err := parseSudo(tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseSudo(%q) = %+v, %v; want error %q", tt.args, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(*got, tt.want) {
			t.Errorf("parseSudo(%q) = %+v, %v; want %+v", tt.args, got, err, tt.want)
		}
	}
}

// fakeShimDeps is the process as the in-process shim tests see it: user
// alice (uid 1000) in /work/proj, with nothing on stdin.
func fakeShimDeps() shimDeps {
	return shimDeps{
		currentUser: func() (*user.User, error) { return &user.User{Username: "alice", Uid: "1000"}, nil },
		getwd:       func() (string, error) { return "/work/proj", nil },
	}
}

// runSudo runs the shim in-process against the fake daemon srv.
func runSudo(srv *clienttest.Server, deps shimDeps, env map[string]string, args ...string) result {
	e := map[string]string{envSocket: srv.Socket}
	for k, v := range env {
		e[k] = v
	}
	var stdout, stderr bytes.Buffer
	inv := &invocation{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return e[k] }}
	code := sudoMain(context.Background(), inv, deps, args)
	return result{code, stdout.String(), stderr.String()}
}

func TestSudoRefused(t *testing.T) {
	srv := clienttest.NewServer(t, clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK, Stages: []proto.Stage{{}}})))
	tests := []struct {
		name string
		deps shimDeps
		args []string
		want string
	}{
		{"login shell", fakeShimDeps(), []string{"-i"}, "agent-sudo shim: sudo flag -i is not supported: there is no interactive shell; run the command itself, or sh -c '...' if it needs a shell. The shim supports -n, -E, --preserve-env=LIST, -H, -u root and --; see 'agent-sudo help shim'\n"},
		{"unknown long flag", fakeShimDeps(), []string{"--chroot=/x", "ls"}, "agent-sudo shim: sudo flag --chroot is not supported: it has no meaning for agent-sudo."},
		{"escaped", fakeShimDeps(), []string{"--\x1b[2J", "ls"}, `agent-sudo shim: sudo flag --\x1b[2J is not supported`},
		{"another user", fakeShimDeps(), []string{"-u", "nobody", "id"}, "agent-sudo shim: sudo -u nobody is not supported: agent-sudo runs commands as root, or (with -u and your own user name) as yourself\n"},
		{"another uid", fakeShimDeps(), []string{"-u", "#65534", "id"}, "agent-sudo shim: sudo -u #65534 is not supported"},
		{"no command", fakeShimDeps(), []string{"-n"}, "agent-sudo shim: no command given; usage: sudo [-n] [-E] [--preserve-env=LIST] [-u root] [--] [VAR=value...] COMMAND [ARG...]\n"},
		{"only a variable", fakeShimDeps(), []string{"DEBIAN_FRONTEND=noninteractive"}, "agent-sudo shim: no command given;"},
		{"standalone pipe", fakeShimDeps(), []string{"grep", "|", "f"}, "agent-sudo shim: a standalone '|' argument cannot go through the shim; use agent-sudo run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runSudo(srv, tt.deps, nil, tt.args...)
			if got.code != 1 || got.stdout != "" || !strings.HasPrefix(got.stderr, tt.want) || strings.Count(got.stderr, "\n") != 1 {
				t.Errorf("sudo %q = %d, stdout %q, stderr\n %q\nwant 1, no stdout, one line starting\n %q", tt.args, got.code, got.stdout, got.stderr, tt.want)
			}
		})
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("refused command lines sent %d requests", n)
	}
}

func TestSudoHelp(t *testing.T) {
	srv := clienttest.NewServer(t, clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK, Stages: []proto.Stage{{}}})))
	got := runSudo(srv, fakeShimDeps(), nil, "--help")
	if got.code != 0 || !strings.HasPrefix(got.stdout, "usage: sudo [-n] [-E]") || got.stderr != "" {
		t.Errorf("sudo --help = %d, %q, %q", got.code, got.stdout, got.stderr)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("help sent %d requests", n)
	}
}

func TestSudoRequests(t *testing.T) {
	env := map[string]string{
		"LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "TZ": "Europe/Paris", "DEBIAN_FRONTEND": "",
		"PATH": "/evil", "HOME": "/home/alice", "LD_PRELOAD": "/tmp/x.so", "FOO": "bar",
		envSession: "s-1",
	}
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want proto.Request // Host, ID and Time are not compared
	}{
		{"plain", nil, []string{"true"},
			proto.Request{Pipeline: [][]string{{"true"}}, Reason: shimDefaultReason, Privileged: true, Cwd: "/work/proj", Session: "s-1", Env: map[string]string{}}},
		{"sh -c passes as argv", nil, []string{"-n", "sh", "-c", "echo hi | tr a-z A-Z"},
			proto.Request{Pipeline: [][]string{{"sh", "-c", "echo hi | tr a-z A-Z"}}, Reason: shimDefaultReason, Privileged: true, Cwd: "/work/proj", Session: "s-1", Env: map[string]string{}, NonInteractive: true}},
		{"-E forwards only the allowlist", nil, []string{"-E", "env"},
			proto.Request{Pipeline: [][]string{{"env"}}, Reason: shimDefaultReason, Privileged: true, Cwd: "/work/proj", Session: "s-1",
				Env: map[string]string{"LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "TZ": "Europe/Paris"}}},
		{"--preserve-env=LIST", nil, []string{"--preserve-env=FOO,LANG,UNSET", "env"},
			proto.Request{Pipeline: [][]string{{"env"}}, Reason: shimDefaultReason, Privileged: true, Cwd: "/work/proj", Session: "s-1",
				Env: map[string]string{"FOO": "bar", "LANG": "C.UTF-8"}}},
		{"-E and a list", nil, []string{"-E", "--preserve-env=FOO,TERM", "env"},
			proto.Request{Pipeline: [][]string{{"env"}}, Reason: shimDefaultReason, Privileged: true, Cwd: "/work/proj", Session: "s-1",
				Env: map[string]string{"LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "TZ": "Europe/Paris", "FOO": "bar"}}},
		{"-u yourself runs unprivileged", nil, []string{"-u", "alice", "id"},
			proto.Request{Pipeline: [][]string{{"id"}}, Reason: shimDefaultReason, Privileged: false, Cwd: "/work/proj", Session: "s-1", Env: map[string]string{}}},
		{"-u your uid", nil, []string{"-u#1000", "id"},
			proto.Request{Pipeline: [][]string{{"id"}}, Reason: shimDefaultReason, Privileged: false, Cwd: "/work/proj", Session: "s-1", Env: map[string]string{}}},
		{"-u root", nil, []string{"-n", "--user=root", "--", "ls", "-l"},
			proto.Request{Pipeline: [][]string{{"ls", "-l"}}, Reason: shimDefaultReason, Privileged: true, Cwd: "/work/proj", Session: "s-1", Env: map[string]string{}, NonInteractive: true}},
		{"VAR=value before the command", nil, []string{"DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "nginx"},
			proto.Request{Pipeline: [][]string{{"apt-get", "install", "-y", "nginx"}}, Reason: shimDefaultReason, Privileged: true, Cwd: "/work/proj", Session: "s-1",
				Env: map[string]string{"DEBIAN_FRONTEND": "noninteractive"}}},
		{"VAR=value wins over -E", nil, []string{"-E", "LANG=de_DE.UTF-8", "FOO=", "env"},
			proto.Request{Pipeline: [][]string{{"env"}}, Reason: shimDefaultReason, Privileged: true, Cwd: "/work/proj", Session: "s-1",
				Env: map[string]string{"LANG": "de_DE.UTF-8", "LC_ALL": "C", "TERM": "xterm", "TZ": "Europe/Paris", "FOO": ""}}},
		{"reason from the environment", map[string]string{envReason: "install nginx for the web tests"}, []string{"apt", "install", "nginx"},
			proto.Request{Pipeline: [][]string{{"apt", "install", "nginx"}}, Reason: "install nginx for the web tests", Privileged: true, Cwd: "/work/proj", Session: "s-1", Env: map[string]string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := clienttest.NewServer(t, clienttest.Respond(clienttest.Answer(proto.Response{Status: proto.StatusOK, Stages: []proto.Stage{{}}})))
			e := map[string]string{}
			for k, v := range env {
				e[k] = v
			}
			for k, v := range tt.env {
				e[k] = v
			}
			got := runSudo(srv, fakeShimDeps(), e, tt.args...)
			if got.code != 0 || got.stdout != "" || got.stderr != "" {
				t.Fatalf("sudo %q = %d, %q, %q", tt.args, got.code, got.stdout, got.stderr)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests", len(reqs))
			}
			r := *reqs[0]
			if !r.Progress {
				t.Errorf("sudo %q did not ask for progress lines", tt.args)
			}
			r.ID, r.Time, r.Host, r.Action, r.Progress = "", tt.want.Time, "", "", false
			if !reflect.DeepEqual(r, tt.want) {
				t.Errorf("sudo %q sent\n %+v\nwant\n %+v", tt.args, r, tt.want)
			}
		})
	}
}

func TestSudoOutput(t *testing.T) {
	tests := []struct {
		name               string
		resp               proto.Response
		code               int
		stdout, stderrHead string
	}{
		{"exact bytes and status", proto.Response{Status: proto.StatusOK, Stdout: []byte("o\x00\xffu"), Stages: []proto.Stage{{ExitCode: 3, Stderr: []byte("e\x1brr\n")}}}, 3, "o\x00\xffu", "e\x1brr\n"},
		{"false", proto.Response{Status: proto.StatusOK, Stages: []proto.Stage{{ExitCode: 1}}}, 1, "", ""},
		{"denied", proto.Response{Status: proto.StatusDenied, Message: "no"}, exitDenied, "", "agent-sudo: request "},
		{"timeout", proto.Response{Status: proto.StatusTimeout, Message: "nobody"}, exitTimeout, "", "agent-sudo: request "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := clienttest.NewServer(t, clienttest.Respond(clienttest.Answer(tt.resp)))
			got := runSudo(srv, fakeShimDeps(), nil, "cmd")
			if got.code != tt.code || got.stdout != tt.stdout || !strings.HasPrefix(got.stderr, tt.stderrHead) {
				t.Errorf("sudo cmd = %d, %q, %q; want %d, %q, %q...", got.code, got.stdout, got.stderr, tt.code, tt.stdout, tt.stderrHead)
			}
			if tt.stderrHead == "" && got.stderr != "" {
				t.Errorf("stderr %q, want none", got.stderr)
			}
		})
	}
}

func TestDispatch(t *testing.T) {
	var stdout, stderr bytes.Buffer
	// Under another name, the binary is the agent-sudo command line.
	code := Dispatch(context.Background(), "agent-sudo", []string{"help"}, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
	if code != 0 || !strings.Contains(stdout.String(), "usage: agent-sudo <command>") {
		t.Errorf("agent-sudo help = %d, %q, %q", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	code = Dispatch(context.Background(), "sudo", []string{"-h"}, strings.NewReader(""), &stdout, &stderr, func(string) string { return "" })
	if code != 0 || !strings.HasPrefix(stdout.String(), "usage: sudo ") {
		t.Errorf("sudo -h = %d, %q, %q", code, stdout.String(), stderr.String())
	}
}

// TestReadInput checks what run (and so the shim) sends as stdin: all of a
// pipe, file or reader; nothing for /dev/null or an empty pipe; a clear
// refusal for a pipe that stays silent and open, and for too much input.
func TestReadInput(t *testing.T) {
	pipe := func(data string, closeWriter bool) *os.File {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		if _, err := w.WriteString(data); err != nil {
			t.Fatal(err)
		}
		if closeWriter {
			w.Close()
		}
		return r
	}
	file := func(data string) *os.File {
		p := filepath.Join(t.TempDir(), "in")
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	named := filepath.Join(t.TempDir(), "named")
	if err := os.WriteFile(named, []byte("from a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	tooMuch := strings.Repeat("x", proto.MaxStdinBytes+1)
	tests := []struct {
		name    string
		from    string
		stdin   io.Reader
		want    string
		wantErr string
		// wantHint is the advice the error carries (package hint), printed
		// on a line of its own.
		wantHint string
	}{
		{"pipe with data", "", pipe("x\n", true), "x\n", "", ""},
		{"empty pipe, writer gone", "", pipe("", true), "", "", ""},
		{"empty pipe, writer open", "", pipe("", false), "", "stdin is a pipe that sent neither data nor its end within 20ms",
			"pass --stdin - to wait for it, or --no-stdin if the command needs no input"},
		{"file with data", "", file("data"), "data", "", ""},
		{"empty file", "", file(""), "", "", ""},
		{"/dev/null", "", devNull, "", "", ""},
		{"a reader", "", strings.NewReader("data"), "data", "", ""},
		{"no stdin", "", nil, "", "", ""},
		{"--stdin -", "-", strings.NewReader("dash"), "dash", "", ""},
		{"--stdin FILE", named, strings.NewReader("ignored"), "from a file", "", ""},
		{"--stdin missing", "/nonexistent/x", nil, "", "--stdin: open /nonexistent/x: no such file or directory", ""},
		{"too much", "", strings.NewReader(tooMuch), "", "stdin holds more than 737280 bytes, the most one request can carry",
			"a request is at most 1048576 bytes and stdin travels as base64: write the data to a file you can write and copy it into place " +
				"(agent-sudo run -- install -m 0644 /tmp/FILE /etc/FILE), or pass --no-stdin if the command needs no input"},
		{"too much, exactly the cap is fine", "", strings.NewReader(tooMuch[1:]), tooMuch[1:], "", ""},
	}
	for _, tt := range tests {
		// The empty pipe waits stdinWait, which nothing here needs long:
		// the pipes' data and ends are there before readInput looks.
		inv := &invocation{stdin: tt.stdin, stdinWait: 20 * time.Millisecond}
		got, err := inv.readInput(tt.from)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.wantErr)
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case err != nil && len(err.Error()) > 120:
			t.Errorf("%s: error of %d characters, over 120: give the advice as a hint", tt.name, len(err.Error()))
		case tt.wantHint != "" && !slices.Equal(hint.Of(err), []string{tt.wantHint}):
			t.Errorf("%s: hints %q, want %q", tt.name, hint.Of(err), tt.wantHint)
		case string(got) != tt.want:
			t.Errorf("%s: read %d bytes, want %d", tt.name, len(got), len(tt.want))
		}
	}
}

func TestShimInstall(t *testing.T) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "new", "bin")
	link := filepath.Join(dir, "sudo")
	wantOut := "export PATH=\"" + dir + ":$PATH\"\n"
	wantErr := "agent-sudo: installed " + link + " -> " + exe + "; put " + dir + " first in the agent's PATH, as the line above does\n"
	for _, round := range []string{"creates", "again"} {
		got := runCLI(context.Background(), nil, "shim", "install", dir)
		if got.code != 0 || got.stdout != wantOut || got.stderr != wantErr {
			t.Fatalf("%s: shim install = %d, %q, %q; want 0, %q, %q", round, got.code, got.stdout, got.stderr, wantOut, wantErr)
		}
		if target, err := os.Readlink(link); err != nil || target != exe {
			t.Fatalf("%s: %s -> %q, %v; want -> %s", round, link, target, err, exe)
		}
	}

	// Another symbolic link is replaced.
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/bin/sudo", link); err != nil {
		t.Fatal(err)
	}
	if got := runCLI(context.Background(), nil, "shim", "install", dir); got.code != 0 {
		t.Fatalf("replacing a link: %d, %q", got.code, got.stderr)
	}
	if target, _ := os.Readlink(link); target != exe {
		t.Errorf("the old link was not replaced: -> %q", target)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}

	// Anything else is left alone.
	other := t.TempDir()
	file := filepath.Join(other, "sudo")
	testenv.WriteExecutable(t, file, []byte("#!/bin/sh\n"))
	got := runCLI(context.Background(), nil, "shim", "install", other)
	if got.code != exitSoftware || got.stdout != "" || got.stderr != "agent-sudo: shim install: "+file+" exists and is not a symbolic link; it was left alone: remove it yourself or choose another directory\n" {
		t.Errorf("over a file: %d, %q, %q", got.code, got.stdout, got.stderr)
	}
	if b, _ := os.ReadFile(file); string(b) != "#!/bin/sh\n" {
		t.Errorf("the file was changed: %q", b)
	}

	for _, args := range [][]string{{}, {"install"}, {"install", "a", "b"}, {"remove", "x"}} {
		if got := runCLI(context.Background(), nil, append([]string{"shim"}, args...)...); got.code != exitUsage || !strings.HasPrefix(got.stderr, "agent-sudo: shim") {
			t.Errorf("shim %q = %d, %q", args, got.code, got.stderr)
		}
	}
	if got := runCLI(context.Background(), nil, "help", "shim"); got.code != 0 || !strings.Contains(got.stdout, "usage: agent-sudo shim install DIR") {
		t.Errorf("help shim = %d, %q", got.code, got.stdout)
	}
}

func TestShellPathValue(t *testing.T) {
	tests := map[string]string{
		"/home/me/.local/bin": `"/home/me/.local/bin:$PATH"`,
		"/tmp/a b":            `'/tmp/a b':"$PATH"`,
		"/tmp/it's":           `'/tmp/it'\''s':"$PATH"`,
		"/tmp/$HOME":          `'/tmp/$HOME':"$PATH"`,
	}
	for dir, want := range tests {
		if got := shellPathValue(dir); got != want {
			t.Errorf("shellPathValue(%q) = %s, want %s", dir, got, want)
		}
		out, err := exec.Command("sh", "-c", "PATH=/usr/bin:/bin; export PATH="+shellPathValue(dir)+`; printf %s "$PATH"`).Output()
		if err != nil || string(out) != dir+":/usr/bin:/bin" {
			t.Errorf("sh reads %s as %q, %v", shellPathValue(dir), out, err)
		}
	}
}

// TestShimE2E installs the shim from the built binary and runs it as sudo,
// as a real process, against a real daemon.
func TestShimE2E(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	_, bin := daemontest.Binaries(t)
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "1s", Rules: daemontest.AskRules})
	dir := filepath.Join(t.TempDir(), "shim")

	out, err := exec.Command(bin, "shim", "install", dir).Output()
	if err != nil || string(out) != "export PATH=\""+dir+":$PATH\"\n" {
		t.Fatalf("shim install: %v, %q", err, out)
	}
	sudo := filepath.Join(dir, "sudo")
	if target, err := os.Readlink(sudo); err != nil || target != bin {
		t.Fatalf("%s -> %q, %v; want -> %s", sudo, target, err, bin)
	}

	type run struct {
		code           int
		stdout, stderr string
	}
	sudoRun := func(t *testing.T, stdin *os.File, cwd string, env []string, args ...string) run {
		t.Helper()
		cmd := exec.Command(sudo, args...)
		cmd.Env = e2eEnv(append([]string{envSocket + "=" + d.Socket, envSession + "=e2e-shim"}, env...)...)
		cmd.Dir = cwd
		if stdin != nil {
			cmd.Stdin = stdin
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("sudo %q: %v", args, err)
		}
		return run{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
	}
	tests := []struct {
		name string
		args []string
		want run
	}{
		{"true", []string{"true"}, run{0, "", ""}},
		{"false", []string{"false"}, run{1, "", ""}},
		{"a shell pipeline as argv", []string{"-n", "sh", "-c", "echo hi | tr a-z A-Z"}, run{0, "HI\n", ""}},
		{"exact bytes", []string{"sh", "-c", `printf 'o\000\377u'; printf 'e\033rr\n' >&2; exit 3`}, run{3, "o\x00\xffu", "e\x1brr\n"}},
		{"root", []string{"-u", "root", "id", "-u"}, run{0, "0\n", ""}},
		{"unsupported flag", []string{"-i"}, run{1, "", "agent-sudo shim: sudo flag -i is not supported: there is no interactive shell; run the command itself, or sh -c '...' if it needs a shell. The shim supports -n, -E, --preserve-env=LIST, -H, -u root and --; see 'agent-sudo help shim'\n"}},
		{"another user", []string{"-u", "nobody", "id"}, run{1, "", "agent-sudo shim: sudo -u nobody is not supported: agent-sudo runs commands as root, or (with -u and your own user name) as yourself\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sudoRun(t, nil, "", nil, tt.args...); got != tt.want {
				t.Errorf("sudo %q = %+v, want %+v", tt.args, got, tt.want)
			}
		})
	}

	t.Run("denied", func(t *testing.T) {
		got := sudoRun(t, nil, "", nil, "rm", "-rf", "/nonexistent-agent-sudo")
		if got.code != exitDenied || got.stdout != "" || !strings.Contains(got.stderr, `was denied: denied by rule "no rm"`) {
			t.Errorf("got %+v", got)
		}
	})

	t.Run("runs in the caller's directory", func(t *testing.T) {
		cwd := t.TempDir()
		if got := sudoRun(t, nil, cwd, nil, "pwd"); got != (run{0, cwd + "\n", ""}) {
			t.Errorf("got %+v, want %s", got, cwd)
		}
	})

	t.Run("-E forwards the allowlisted variables only", func(t *testing.T) {
		got := sudoRun(t, nil, "", []string{"LANG=C.UTF-8", "TERM=xterm-256color", "FOO=bar"}, "-E", "env")
		// In any order: sudo puts the variables it keeps first.
		lines := strings.Split(got.stdout, "\n")
		if got.code != 0 || !slices.Contains(lines, "LANG=C.UTF-8") || !slices.Contains(lines, "TERM=xterm-256color") || strings.Contains(got.stdout, "FOO=") {
			t.Errorf("got %+v", got)
		}
	})

	t.Run("VAR=value before the command", func(t *testing.T) {
		got := sudoRun(t, nil, "", nil, "DEBIAN_FRONTEND=noninteractive", "sh", "-c", `echo "$DEBIAN_FRONTEND"`)
		if got != (run{0, "noninteractive\n", ""}) {
			t.Errorf("got %+v, want the variable set for the command", got)
		}
	})

	t.Run("VAR=value the policy refuses", func(t *testing.T) {
		got := sudoRun(t, nil, "", nil, "LD_PRELOAD=/tmp/x.so", "true")
		if got.code == 0 || !strings.Contains(got.stderr, "LD_PRELOAD") {
			t.Errorf("got %+v, want the request refused, naming LD_PRELOAD", got)
		}
	})

	t.Run("stdin is forwarded to the command", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := w.WriteString("x\n"); err != nil {
			t.Fatal(err)
		}
		w.Close()
		target := filepath.Join(d.Dir, "tee-target")
		got := sudoRun(t, r, "", nil, "tee", target)
		if got != (run{0, "x\n", ""}) {
			t.Errorf("got %+v", got)
		}
		if b, err := os.ReadFile(target); err != nil || string(b) != "x\n" {
			t.Errorf("the file holds %q (%v)", b, err)
		}
	})
}

// TestShimEnvAllowFollowsTheDaemon: sudo -E forwards exactly the daemon's
// built-in allowlist, which is written once, in package runner; a glob
// other than LC_* would be skipped silently, so there must be none.
func TestShimEnvAllowFollowsTheDaemon(t *testing.T) {
	names := shimEnvAllow()
	for _, p := range runner.DefaultAllowlist() {
		prefix, glob := strings.CutSuffix(p, "*")
		if glob && p != "LC_*" {
			t.Errorf("the built-in allowlist has the glob %q, which the shim does not expand", p)
		}
		if !slices.ContainsFunc(names, func(n string) bool { return n == p || glob && strings.HasPrefix(n, prefix) }) {
			t.Errorf("sudo -E does not forward %s", p)
		}
	}
	var help strings.Builder
	if err := shimHelp(nil, &help); err != nil {
		t.Fatal(err)
	}
	if want := strings.Join(runner.DefaultAllowlist(), ", "); !strings.Contains(help.String(), want) {
		t.Errorf("help does not list the built-in allowlist %q:\n%s", want, help.String())
	}
}
