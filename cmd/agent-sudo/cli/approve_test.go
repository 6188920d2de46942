package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/console"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// fakeApprove records what approve did with its dependencies.
type fakeApprove struct {
	euid     int
	terminal bool
	dialErr  error
	runErr   error
	// dialed lists the sockets dialled and the commands started, in order.
	dialed  []string
	ran     bool
	desktop console.DesktopNotify
	// daemonConsole is the socket runDaemonConsole ran for, stopsDaemon
	// its Options.StopsDaemon.
	daemonConsole string
	stopsDaemon   bool
}

func (f *fakeApprove) deps() approveDeps {
	return approveDeps{
		geteuid:  func() int { return f.euid },
		terminal: func(io.Reader, io.Writer) bool { return f.terminal },
		dialSocket: func(_ context.Context, path string) (net.Conn, error) {
			f.dialed = append(f.dialed, path)
			return nil, f.dialErr
		},
		dialCommand: func(_ context.Context, argv []string) (net.Conn, error) {
			f.dialed = append(f.dialed, strings.Join(argv, " "))
			return nil, f.dialErr
		},
		run: func(ctx context.Context, daemons []console.Daemon, _ io.Reader, _ io.Writer, opts console.Options) error {
			f.ran, f.desktop = true, opts.Desktop
			for _, d := range daemons {
				if _, err := d.Dial(ctx); err != nil {
					return fmt.Errorf("%w: %w", console.ErrUnreachable, err)
				}
			}
			return f.runErr
		},
		runDaemonConsole: func(_ context.Context, path string, _ io.Reader, _ io.Writer, opts console.Options) error {
			f.daemonConsole, f.stopsDaemon, f.desktop = path, opts.StopsDaemon, opts.Desktop
			return f.runErr
		},
	}
}

func runApprove(ctx context.Context, f *fakeApprove, env map[string]string, args ...string) result {
	return runApproveDeps(ctx, f.deps(), env, args...)
}

func runApproveDeps(ctx context.Context, deps approveDeps, env map[string]string, args ...string) result {
	var stdout, stderr bytes.Buffer
	inv := &invocation{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }}
	code := approve(ctx, inv, args, deps)
	return result{code, stdout.String(), stderr.String()}
}

func TestApprove(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name       string
		ctx        context.Context
		fake       fakeApprove
		env        map[string]string
		args       []string
		wantCode   int
		wantStderr string // exact
		wantDialed string // each socket or command, joined by " | "
		wantRan    bool
	}{
		{name: "quit", fake: fakeApprove{terminal: true}, wantCode: 0,
			wantDialed: "/run/agent-sudo/approver.sock", wantRan: true},
		{name: "flag", fake: fakeApprove{terminal: true}, args: []string{"--approver-socket", "/tmp/a.sock"},
			wantDialed: "/tmp/a.sock", wantRan: true},
		{name: "env", fake: fakeApprove{terminal: true}, env: map[string]string{envApproverSocket: "/tmp/e.sock"},
			wantDialed: "/tmp/e.sock", wantRan: true},
		{name: "flag beats env", fake: fakeApprove{terminal: true}, env: map[string]string{envApproverSocket: "/tmp/e.sock"},
			args: []string{"-approver-socket=/tmp/f.sock"}, wantDialed: "/tmp/f.sock", wantRan: true},
		{name: "not root", fake: fakeApprove{euid: 1000, terminal: true}, wantCode: 77,
			wantStderr: "agent-sudo: approve must run as root, e.g. sudo agent-sudo approve\n"},
		{name: "not a terminal", fake: fakeApprove{}, wantCode: 2,
			wantStderr: "agent-sudo: approve needs a terminal on stdin and stdout: run it in an interactive shell, not in a pipe or a script\n"},
		{name: "unknown flag", fake: fakeApprove{terminal: true}, args: []string{"--socket", "x"}, wantCode: 2,
			wantStderr: "agent-sudo: approve: flag provided but not defined: -socket; see 'agent-sudo help approve'\n"},
		{name: "argument", fake: fakeApprove{terminal: true}, args: []string{"now"}, wantCode: 2,
			wantStderr: "agent-sudo: approve: unexpected argument \"now\"; see 'agent-sudo help approve'\n"},
		{name: "several sockets and hosts", fake: fakeApprove{terminal: true},
			args: []string{"--approver-socket", "/tmp/a.sock", "--ssh", "root@b", "--approver-socket=/tmp/c.sock", "--ssh", "ssh://root@d:2222",
				"--ssh-option", "UserKnownHostsFile=/tmp/known hosts", "--ssh-option", "IdentityFile=/tmp/id", "--ssh-program", "/usr/local/bin/ssh"},
			env: map[string]string{envApproverSocket: "/tmp/e.sock"},
			wantDialed: "/tmp/a.sock | /tmp/c.sock | " +
				"/usr/local/bin/ssh -T -o BatchMode=yes -o UserKnownHostsFile=/tmp/known hosts -o IdentityFile=/tmp/id -- root@b agent-sudo approver-stdio | " +
				"/usr/local/bin/ssh -T -o BatchMode=yes -o UserKnownHostsFile=/tmp/known hosts -o IdentityFile=/tmp/id -- ssh://root@d:2222 agent-sudo approver-stdio",
			wantRan: true},
		{name: "ssh only: no local socket", fake: fakeApprove{terminal: true}, args: []string{"--ssh", "root@b"},
			wantDialed: "ssh -T -o BatchMode=yes -- root@b agent-sudo approver-stdio", wantRan: true},
		{name: "ssh destination like an option", fake: fakeApprove{terminal: true}, args: []string{"--ssh", "-oProxyCommand=x"}, wantCode: 2,
			wantStderr: "agent-sudo: approve: invalid value \"-oProxyCommand=x\" for flag -ssh: the destination \"-oProxyCommand=x\" starts with '-', which ssh would take for an option; see 'agent-sudo help approve'\n"},
		{name: "ssh destination with a space", fake: fakeApprove{terminal: true}, args: []string{"--ssh", "root@b c"}, wantCode: 2,
			wantStderr: "agent-sudo: approve: invalid value \"root@b c\" for flag -ssh: the destination \"root@b c\" contains a space or a control character; see 'agent-sudo help approve'\n"},
		{name: "unreachable", fake: fakeApprove{terminal: true, dialErr: errors.New("connect to the approver socket /x: no such file or directory")},
			wantCode: 69, wantDialed: "/run/agent-sudo/approver.sock", wantRan: true,
			wantStderr: "agent-sudo: approve: no agent-sudod could be reached: connect to the approver socket /x: no such file or directory; is the daemon running? (systemctl status agent-sudo)\n"},
		{name: "daemon went away", fake: fakeApprove{terminal: true, runErr: fmt.Errorf("%w: EOF", console.ErrDisconnected)},
			wantCode: 69, wantDialed: "/run/agent-sudo/approver.sock", wantRan: true,
			wantStderr: "agent-sudo: approve: lost agent-sudod: agent-sudod closed the approver channel: EOF; is the daemon running? (systemctl status agent-sudo)\n"},
		{name: "refused", fake: fakeApprove{terminal: true, runErr: errors.New("agent-sudod refused this console: no\x1b[2J")},
			wantCode: 70, wantDialed: "/run/agent-sudo/approver.sock", wantRan: true,
			wantStderr: "agent-sudo: approve: agent-sudod refused this console: no\\x1b[2J\n"},
		{name: "interrupted", ctx: cancelled, fake: fakeApprove{terminal: true, runErr: context.Canceled},
			wantCode: 130, wantDialed: "/run/agent-sudo/approver.sock", wantRan: true,
			wantStderr: "agent-sudo: approve: interrupted; nothing was decided by quitting\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			f := tt.fake
			got := runApprove(ctx, &f, tt.env, tt.args...)
			if got.code != tt.wantCode || got.stderr != tt.wantStderr || got.stdout != "" {
				t.Errorf("approve %q = %d\nstdout %q\nstderr %q\nwant %d, stderr %q", tt.args, got.code, got.stdout, got.stderr, tt.wantCode, tt.wantStderr)
			}
			if dialed := strings.Join(f.dialed, " | "); dialed != tt.wantDialed || f.ran != tt.wantRan {
				t.Errorf("dialed %q ran %v, want %q %v", dialed, f.ran, tt.wantDialed, tt.wantRan)
			}
		})
	}
}

func TestApproveHelp(t *testing.T) {
	got := runCLI(context.Background(), map[string]string{envApproverSocket: "/tmp/x.sock"}, "help", "approve")
	for _, want := range []string{
		"usage: sudo agent-sudo approve [--approver-socket PATH]... [--desktop-notify MODE]\n",
		"  --approver-socket path\n",
		"  --ssh destination\n",
		"  77   not run as root\n",
	} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("help approve:\n%s\nwant it to contain %q", got.stdout, want)
		}
	}
	// Every key of every screen, as console.Keys lists them (a console
	// test binds that list to what the screens act on), on one line with
	// the start of what it does; and no line of them wider than 79 columns.
	for _, g := range console.Keys() {
		if !strings.Contains(got.stdout, "\nkeys "+g.Screen+":\n") {
			t.Errorf("help approve has no keys section %q:\n%s", g.Screen, got.stdout)
		}
		for _, k := range g.Keys {
			first := strings.Fields(k.Does)[0]
			if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(k.Keys) + ` +` + regexp.QuoteMeta(first) + ` `).MatchString(got.stdout) {
				t.Errorf("help approve does not list %q (%s) %s", k.Keys, k.Does, g.Screen)
			}
		}
	}
	for _, l := range strings.Split(approveKeys(), "\n") {
		if termtext.Width(l) > 79 {
			t.Errorf("help approve: a line of the keys is wider than 79 columns: %q", l)
		}
	}
	if got := runCLI(context.Background(), nil, "approve", "-h"); got.code != 0 || !strings.Contains(got.stdout, "usage: sudo agent-sudo approve") {
		t.Errorf("approve -h = %d %q %q", got.code, got.stdout, got.stderr)
	}
	if got := runCLI(context.Background(), nil, "help"); !strings.Contains(got.stdout, "approve") {
		t.Errorf("help does not list approve:\n%s", got.stdout)
	}
}

// TestApproveNeedsATerminal runs the real dependencies: the test's stdin
// is a string, not a terminal (or, for a non-root run, the root check
// comes first).
func TestApproveNeedsATerminal(t *testing.T) {
	got := runCLI(context.Background(), nil, "approve")
	want := "agent-sudo: approve needs a terminal on stdin and stdout: run it in an interactive shell, not in a pipe or a script\n"
	if os.Geteuid() != 0 {
		want = "agent-sudo: approve must run as root, e.g. sudo agent-sudo approve\n"
	}
	if got.code == 0 || got.stderr != want {
		t.Errorf("approve without a terminal = %d %q, want %q", got.code, got.stderr, want)
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f, f) || isTerminal(strings.NewReader(""), io.Discard) {
		t.Errorf("a file or a buffer counts as a terminal")
	}
}

// TestApproveDesktopNotify: --desktop-notify chooses the console's desktop
// notification (auto by default), and a mode it does not know is a usage
// error that says which modes there are.
func TestApproveDesktopNotify(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want console.DesktopNotify
	}{
		{nil, console.DesktopAuto},
		{[]string{"--desktop-notify", "osc777"}, console.DesktopOSC777},
		{[]string{"--desktop-notify=off"}, console.DesktopOff},
		{[]string{"-desktop-notify", "osc9"}, console.DesktopOSC9},
	} {
		f := fakeApprove{terminal: true}
		if got := runApprove(context.Background(), &f, nil, tt.args...); got.code != 0 || f.desktop != tt.want {
			t.Errorf("approve %q: exit %d (%s), console got desktop mode %q; want 0 and %q", tt.args, got.code, got.stderr, f.desktop, tt.want)
		}
	}
	f := fakeApprove{terminal: true}
	got := runApprove(context.Background(), &f, nil, "--desktop-notify", "yes")
	if want := "agent-sudo: approve: --desktop-notify: \"yes\" is not a desktop notification mode; want auto, osc9, osc777 or off; see 'agent-sudo help approve'\n"; got.code != 2 || got.stderr != want || f.ran {
		t.Errorf("approve --desktop-notify yes: exit %d, stderr %q, ran %v; want 2, %q, not run", got.code, got.stderr, f.ran, want)
	}
}

// TestApproveStopsDaemon: the hidden --stops-daemon, which agent-sudod
// --tty passes to the console it starts: it runs the daemon's console
// (Options.StopsDaemon) for exactly one approver socket, and its exit
// status says how it ended: 0 quit, 129 the terminal hung up (the end of
// its input, or EIO), 130 without a word when agent-sudod stopped it, 70
// otherwise; it is refused with --ssh or without exactly one socket; the
// help does not show it.
func TestApproveStopsDaemon(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	sock := []string{"--stops-daemon", "--approver-socket", "/run/x/approver.sock", "--desktop-notify", "osc9"}
	const refused = "agent-sudo: approve: --stops-daemon needs exactly one --approver-socket, and no --ssh nor --web; see 'agent-sudo help approve'\n"
	for _, tt := range []struct {
		name     string
		ctx      context.Context
		args     []string
		runErr   error
		code     int
		stderr   string
		consoled bool
	}{
		{name: "quit", args: sock, consoled: true},
		{name: "hung up", args: sock, runErr: fmt.Errorf("console: program was killed: %w", console.ErrHungUp), code: 129, consoled: true,
			stderr: "agent-sudo: approve: the terminal hung up: console: program was killed: the terminal's input ended: it hung up\n"},
		{name: "EIO", args: sock, runErr: &os.PathError{Op: "read", Path: "/dev/stdin", Err: syscall.EIO}, code: 129, consoled: true,
			stderr: "agent-sudo: approve: the terminal hung up: read /dev/stdin: input/output error\n"},
		{name: "stopped by the daemon", ctx: cancelled, args: sock, runErr: context.Canceled, code: 130, consoled: true},
		{name: "failed", args: sock, runErr: errors.New("connect to the approver socket /run/x/approver.sock: refused"), code: 70, consoled: true,
			stderr: "agent-sudo: approve: the console of agent-sudod --tty: connect to the approver socket /run/x/approver.sock: refused; agent-sudod stops with it\n"},
		{name: "no socket", args: []string{"--stops-daemon"}, code: 2, stderr: refused},
		{name: "two sockets", args: append(slices.Clone(sock), "--approver-socket", "/b"), code: 2, stderr: refused},
		{name: "ssh", args: append(slices.Clone(sock), "--ssh", "root@b"), code: 2, stderr: refused},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			f := fakeApprove{terminal: true, runErr: tt.runErr}
			got := runApprove(ctx, &f, nil, tt.args...)
			if got.code != tt.code || got.stderr != tt.stderr || got.stdout != "" {
				t.Errorf("approve %q = %d\nstdout %q\nstderr %q\nwant %d, stderr %q", tt.args, got.code, got.stdout, got.stderr, tt.code, tt.stderr)
			}
			if tt.consoled != (f.daemonConsole == "/run/x/approver.sock" && f.stopsDaemon && f.desktop == console.DesktopOSC9) || f.ran {
				t.Errorf("ran the daemon's console for %q (stops the daemon %v, desktop %q), the usual console %v; want the daemon's: %v",
					f.daemonConsole, f.stopsDaemon, f.desktop, f.ran, tt.consoled)
			}
		})
	}
	if got := runCLI(context.Background(), nil, "help", "approve"); got.code != 0 || strings.Contains(got.stdout, "stops-daemon") {
		t.Errorf("help approve = %d, shows the internal --stops-daemon:\n%s", got.code, got.stdout)
	}
}

// TestApproveNoDaemonReachable: with several daemons and none reachable at
// start, approve exits 69 naming each one and why, through the real console
// and dialers: a local socket that is not there, and an ssh that ends with
// ssh's words for a refused connection.
func TestApproveNoDaemonReachable(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "approver.sock")
	ssh := filepath.Join(dir, "ssh")
	testenv.WriteExecutable(t, ssh, []byte("#!/bin/sh\necho 'ssh: connect to host b port 22: Connection refused' >&2\nexit 255\n"))
	deps := realApproveDeps()
	deps.geteuid = func() int { return 0 }
	deps.terminal = func(io.Reader, io.Writer) bool { return true }
	got := runApproveDeps(context.Background(), deps, nil, "--approver-socket", sock, "--ssh", "root@b", "--ssh-program", ssh)
	want := "agent-sudo: approve: no agent-sudod could be reached: " +
		sock + ": connect to the approver socket " + sock + ": dial unix " + sock + ": connect: no such file or directory; " +
		"ssh root@b: read the daemon's greeting: " + ssh + " ended: exit status 255: ssh: connect to host b port 22: Connection refused; " +
		"is the daemon running? (systemctl status agent-sudo)\n"
	if got.code != exitUnavailable || got.stderr != want || got.stdout != "" {
		t.Fatalf("approve = %d\nstdout %q\nstderr %q\nwant 69, stderr %q", got.code, got.stdout, got.stderr, want)
	}
}
