package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// fakeApproverSocket listens on a Unix socket in a temporary directory and
// hands each connection to serve.
func fakeApproverSocket(t *testing.T, serve func(c *net.UnixConn)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "asstdio")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "approver.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		serve(c.(*net.UnixConn))
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return path
}

func dialUnix(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", path)
}

// TestApproverStdioRefusesNonRoot: a caller that is not root is refused
// before anything is dialled, on stderr and with the result line a console
// at the other end of ssh shows.
func TestApproverStdioRefusesNonRoot(t *testing.T) {
	var stdout, stderr bytes.Buffer
	inv := &invocation{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
	dialed := false
	code := approverStdio(context.Background(), inv, nil, approverStdioDeps{
		geteuid: func() int { return 1000 },
		dial: func(context.Context, string) (net.Conn, error) {
			dialed = true
			return nil, errors.New("dialled")
		},
	})
	msg := "not allowed: approver-stdio connects to the approver channel, which is for root only, and it runs as uid 1000; log in as root (ssh root@HOST)"
	if code != exitDenied || dialed || stderr.String() != "agent-sudo: "+msg+"\n" ||
		stdout.String() != `{"type":"result","error":"`+msg+`"}`+"\n" {
		t.Fatalf("approver-stdio as uid 1000 = %d, dialled %v\nstdout %q\nstderr %q", code, dialed, stdout.String(), stderr.String())
	}
}

// TestApproverStdioRealNonRootUser: the built agent-sudo, run as a real
// user that is not root, refuses approver-stdio with exit 77, the reason on
// stderr and the result line docs/approver-protocol.md promises on stdout,
// without connecting: the socket it is given is not there, which would be
// exit 69 had it tried.
func TestApproverStdioRealNonRootUser(t *testing.T) {
	daemontest.RequireRoot(t)
	u := daemontest.AddUser(t, "aps")
	_, built := daemontest.Binaries(t)
	// A copy the user can run: Binaries builds into a directory only root
	// can enter.
	cli := testenv.PublicCopy(t, "", built, "agent-sudo")
	dir := filepath.Dir(cli)

	cmd := u.Command(cli, "approver-stdio", "--approver-socket", filepath.Join(dir, "approver.sock"))
	cmd.Env = daemontest.RaceEnv([]string{"PATH=/usr/bin:/bin"})
	cmd.Stdin = strings.NewReader("")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitDenied {
		t.Fatalf("approver-stdio as %s (uid %d): %v, want exit %d\nstdout %q\nstderr %q", u.Name, u.UID, err, exitDenied, stdout.String(), stderr.String())
	}
	msg := fmt.Sprintf("not allowed: approver-stdio connects to the approver channel, which is for root only, and it runs as uid %d; log in as root (ssh root@HOST)", u.UID)
	if want := `{"type":"result","error":"` + msg + `"}` + "\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
	if want := "agent-sudo: " + msg + "\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

// TestApproverStdioBridges: lines go both ways unchanged; the end of stdin
// reaches the daemon as a half close, the daemon's answer to the last line
// still arrives, and the exit status is 0.
func TestApproverStdioBridges(t *testing.T) {
	got := make(chan string, 1)
	sock := fakeApproverSocket(t, func(c *net.UnixConn) {
		_, _ = io.WriteString(c, `{"type":"hello","version":"v1"}`+"\n")
		all, _ := io.ReadAll(c) // until the half close
		got <- string(all)
		_, _ = io.WriteString(c, `{"type":"result","id":"r1","ok":true}`+"\n")
	})
	var stdout, stderr bytes.Buffer
	in := `{"type":"decide","id":"r1","hash":"h","decision":"deny"}` + "\n"
	inv := &invocation{stdin: strings.NewReader(in), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
	code := approverStdio(context.Background(), inv, []string{"--approver-socket", sock}, approverStdioDeps{geteuid: func() int { return 0 }, dial: dialUnix})
	if code != 0 || stderr.String() != "" {
		t.Fatalf("approver-stdio = %d, stderr %q", code, stderr.String())
	}
	if s := <-got; s != in {
		t.Errorf("the daemon got %q, want %q", s, in)
	}
	if want := `{"type":"hello","version":"v1"}` + "\n" + `{"type":"result","id":"r1","ok":true}` + "\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
}

// TestApproverStdioDaemonCloses: when the daemon ends the channel first,
// approver-stdio says so and exits 69, with what the daemon sent passed on.
func TestApproverStdioDaemonCloses(t *testing.T) {
	sock := fakeApproverSocket(t, func(c *net.UnixConn) {
		_, _ = io.WriteString(c, `{"type":"hello","version":"v1"}`+"\n")
	})
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	var stdout, stderr bytes.Buffer
	inv := &invocation{stdin: stdinR, stdout: &stdout, stderr: &stderr, getenv: func(k string) string {
		if k == envApproverSocket {
			return sock
		}
		return ""
	}}
	code := approverStdio(context.Background(), inv, nil, approverStdioDeps{geteuid: func() int { return 0 }, dial: dialUnix})
	if code != exitUnavailable || stdout.String() != `{"type":"hello","version":"v1"}`+"\n" ||
		stderr.String() != "agent-sudo: approver-stdio: agent-sudod closed the approver channel (it stopped or restarted)\n" {
		t.Fatalf("approver-stdio = %d\nstdout %q\nstderr %q", code, stdout.String(), stderr.String())
	}
}

// TestApproverStdioStdoutFails: a write to standard output that fails
// ends approver-stdio with 74, not with the daemon's 69, and says so.
func TestApproverStdioStdoutFails(t *testing.T) {
	sock := fakeApproverSocket(t, func(c *net.UnixConn) {
		_, _ = io.WriteString(c, `{"type":"hello","version":"v1"}`+"\n")
		_, _ = io.ReadAll(c) // until approver-stdio closes the connection
	})
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	var stderr bytes.Buffer
	inv := &invocation{stdin: stdinR, stdout: failWriter{}, stderr: &stderr, getenv: func(string) string { return "" }}
	code := approverStdio(context.Background(), inv, []string{"--approver-socket", sock}, approverStdioDeps{geteuid: func() int { return 0 }, dial: dialUnix})
	if want := "agent-sudo: approver-stdio: write to standard output: " + os.ErrClosed.Error() + "\n"; code != exitIO || stderr.String() != want {
		t.Fatalf("approver-stdio = %d, stderr %q; want %d, %q", code, stderr.String(), exitIO, want)
	}
}

func TestApproverStdioUnreachable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	inv := &invocation{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
	missing := filepath.Join(t.TempDir(), "none.sock")
	code := approverStdio(context.Background(), inv, []string{"--approver-socket", missing}, approverStdioDeps{geteuid: func() int { return 0 }, dial: dialUnix})
	if code != exitUnavailable || stdout.Len() != 0 || !strings.Contains(stderr.String(), "approver-stdio: cannot reach agent-sudod: ") {
		t.Fatalf("approver-stdio = %d\nstdout %q\nstderr %q", code, stdout.String(), stderr.String())
	}
}

// TestApproverStdioHidden: the command is left out of the command list
// but has its help.
func TestApproverStdioHidden(t *testing.T) {
	if got := runCLI(context.Background(), nil, "help"); strings.Contains(got.stdout, "approver-stdio") {
		t.Errorf("help lists the hidden approver-stdio:\n%s", got.stdout)
	}
	got := runCLI(context.Background(), nil, "help", "approver-stdio")
	if got.code != 0 || !strings.Contains(got.stdout, "usage: agent-sudo approver-stdio [--approver-socket PATH]\n") ||
		!strings.Contains(got.stdout, "  77   not run as root\n") {
		t.Errorf("help approver-stdio = %d\n%s", got.code, got.stdout)
	}
	sc := bufio.NewScanner(strings.NewReader(got.stdout))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "\x1b") {
			t.Errorf("help has an escape: %q", sc.Text())
		}
	}
}
