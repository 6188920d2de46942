package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-sudo/agent-sudo/daemon"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/internal/spawn"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/internal/tmuxtest"
)

func TestMain(m *testing.M) { daemontest.Main(m) }

// TestHungUp: how the console child's end maps to what the daemon stops
// with. Exit 0 (the human quit) is nil; exit 129 (agent-sudo approve
// --stops-daemon's status for a terminal that hung up) or death by SIGHUP
// is daemon.ErrTerminalHungUp, which stops the daemon with that reason;
// ended with the daemon's context, it is that context's error; anything
// else is an error that says how the console ended, and not a hang-up.
func TestHungUp(t *testing.T) {
	live := context.Background()
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range []struct {
		ctx     context.Context
		end     spawn.End
		nilErr  bool
		hungUp  bool
		wantCtx bool
		says    string
	}{
		{ctx: live, end: spawn.End{Code: 0}, nilErr: true},
		{ctx: live, end: spawn.End{Code: 129}, hungUp: true, says: "exit status 129"},
		{ctx: live, end: spawn.End{Code: -1, Signal: syscall.SIGHUP}, hungUp: true, says: "killed by signal SIGHUP"},
		{ctx: stopped, end: spawn.End{Code: 129}, hungUp: true, says: "exit status 129"},
		{ctx: stopped, end: spawn.End{Code: 130}, wantCtx: true, says: "exit status 130"},
		{ctx: stopped, end: spawn.End{Code: -1, Signal: syscall.SIGKILL}, wantCtx: true, says: "killed by signal SIGKILL"},
		{ctx: live, end: spawn.End{Code: 70}, says: "exit status 70"},
		{ctx: live, end: spawn.End{Code: -1, Signal: syscall.SIGSEGV}, says: "killed by signal SIGSEGV"},
	} {
		err := consoleResult(tt.ctx, tt.end)
		switch {
		case tt.nilErr:
			if err != nil {
				t.Errorf("consoleResult(%v) = %v, want nil (the human quit)", tt.end, err)
			}
		case err == nil:
			t.Errorf("consoleResult(%v) = nil, want an error", tt.end)
		case errors.Is(err, daemon.ErrTerminalHungUp) != tt.hungUp,
			errors.Is(err, context.Canceled) != tt.wantCtx,
			!strings.Contains(err.Error(), tt.says):
			t.Errorf("consoleResult(ctx err %v, %v) = %v; want hung up %v, the context's error %v, saying %q",
				tt.ctx.Err(), tt.end, err, tt.hungUp, tt.wantCtx, tt.says)
		}
	}
}

// TestConsoleCommand: the console is "agent-sudo approve --stops-daemon"
// for the approver socket, with the desktop mode; its environment has
// only the terminal's variables of the daemon's, nothing else the daemon
// has (its PATH, SSH_AUTH_SOCK, LD_PRELOAD, HOME), and no empty ones.
func TestConsoleCommand(t *testing.T) {
	args := consoleArgs("/run/agent-sudo/approver.sock", "osc9")
	if want := "agent-sudo approve --stops-daemon --approver-socket /run/agent-sudo/approver.sock --desktop-notify osc9"; strings.Join(args, " ") != want {
		t.Errorf("args %q, want %q", args, want)
	}
	env := map[string]string{
		"TERM": "xterm-256color", "COLORTERM": "truecolor", "TERM_PROGRAM": "WezTerm", "TMUX": "/tmp/tmux-0/default,1,0",
		"LANG": "C.UTF-8", "LC_ALL": "", "PATH": "/usr/bin", "SSH_AUTH_SOCK": "/tmp/ssh/agent", "LD_PRELOAD": "/tmp/x.so",
		"HOME": "/root", "GORACE": "atexit_sleep_ms=0",
	}
	got := consoleEnv(func(k string) string { return env[k] })
	want := []string{"TERM=xterm-256color", "COLORTERM=truecolor", "TERM_PROGRAM=WezTerm", "TMUX=/tmp/tmux-0/default,1,0", "LANG=C.UTF-8"}
	if slices.Contains(raceEnvNames, "GORACE") {
		want = append(want, "GORACE=atexit_sleep_ms=0")
	}
	if !slices.Equal(got, want) {
		t.Errorf("consoleEnv = %q, want %q", got, want)
	}
}

// TestConsoleProgram: the console is the agent-sudo beside the daemon's
// executable, and only one that nobody but root can change; each refusal
// says what is wrong, and a missing one says what to do.
func TestConsoleProgram(t *testing.T) {
	testenv.NeedsRoot(t) // files owned by root and by another user
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string // "" for accepted
	}{
		{"beside the daemon", func(t *testing.T, dir string) { write(t, dir, 0o755) }, ""},
		{"missing", func(*testing.T, string) {},
			`--tty runs its console "DIR/agent-sudo", which must be beside agent-sudod, and there is none` +
				"\nhint: install or build both binaries together (make build puts both in bin/), or start agent-sudod without --tty and approve from another terminal with 'sudo agent-sudo approve'"},
		{"writable by group", func(t *testing.T, dir string) { write(t, dir, 0o775) },
			"--tty: refusing to run its console: the console program DIR/agent-sudo is writable by group or others (mode 0775)"},
		{"owned by another user", func(t *testing.T, dir string) {
			write(t, dir, 0o755)
			if err := os.Chown(filepath.Join(dir, "agent-sudo"), 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "--tty: refusing to run its console: the console program DIR/agent-sudo is owned by uid 65534, not root"},
		{"a symbolic link", func(t *testing.T, dir string) {
			if err := os.Symlink("/bin/true", filepath.Join(dir, "agent-sudo")); err != nil {
				t.Fatal(err)
			}
		}, "the console program DIR/agent-sudo is not a regular file"},
		{"not executable", func(t *testing.T, dir string) { write(t, dir, 0o644) }, "the console program DIR/agent-sudo is not executable"},
		{"in a directory others can write", func(t *testing.T, dir string) {
			write(t, dir, 0o755)
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, "the directory DIR of the console program is writable by group or others (mode 0777)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			prog, err := consoleProgram(filepath.Join(dir, "agent-sudod"))
			want := strings.ReplaceAll(tt.want, "DIR", dir)
			switch {
			case want == "" && (err != nil || prog != filepath.Join(dir, "agent-sudo")):
				t.Errorf("consoleProgram = %q, %v; want %s/agent-sudo", prog, err, dir)
			case want != "" && (err == nil || !strings.Contains(err.Error()+"\nhint: "+strings.Join(hint.Of(err), "\nhint: "), want)):
				t.Errorf("consoleProgram = %q, %v; want an error containing %q", prog, err, want)
			}
		})
	}
}

// write writes a program agent-sudo of mode perm in dir.
func write(t *testing.T, dir string, perm os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, "agent-sudo")
	testenv.WriteExecutable(t, p, []byte("#!/bin/sh\n"))
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
}

// TestE2ETTYNeedsTheConsoleBeside: agent-sudod --tty whose directory has no
// agent-sudo fails at start, on a real terminal, saying what is missing and
// what to do, with status 1, and serves nothing: its socket never appears.
func TestE2ETTYNeedsTheConsoleBeside(t *testing.T) {
	testenv.NeedsRoot(t)
	testenv.NeedsTmux(t)
	daemonBin, _ := daemontest.Binaries(t)
	bin := t.TempDir()
	alone := filepath.Join(bin, "agent-sudod")
	testenv.CopyExecutable(t, daemonBin, alone)
	d := daemontest.Configure(t, daemontest.Config{})
	tm := tmuxtest.Start(t, tmuxtest.Config{Command: fmt.Sprintf("%s --tty --config %s --log-file %s", alone, d.ConfigPath, d.ForegroundLog())})
	screen := tm.WaitFor("exited with status 1")
	// The error on its line, then the advice on its own (package hint),
	// which tmux wraps at 200 columns.
	flat := strings.ReplaceAll(screen, "\n", "")
	for _, want := range []string{
		fmt.Sprintf("agent-sudod: --tty runs its console %q, which must be beside agent-sudod, and there is none\n", bin+"/agent-sudo"),
		"agent-sudod: hint: install or build both binaries together (make build puts both in bin/), " +
			"or start agent-sudod without --tty and approve from another terminal with 'sudo agent-sudo approve'",
	} {
		if !strings.Contains(flat, strings.TrimSuffix(want, "\n")) || strings.HasSuffix(want, "\n") && !strings.Contains(screen, want) {
			t.Errorf("the terminal does not say %q:\n%s", want, screen)
		}
	}
	if strings.Contains(flat, "approving on this terminal") {
		t.Errorf("the daemon said it approves on this terminal before refusing:\n%s", screen)
	}
	if _, err := os.Lstat(d.Socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the agent socket %s exists (%v): the daemon started serving", d.Socket, err)
	}
}

// consoleProbe stands in for agent-sudo beside agent-sudod in
// TestE2ETTYConsoleChild: at once, before it opens anything, it reports
// its descriptors and where they lead, its pid, the fields of
// /proc/self/stat after the command (state ppid pgrp session tty_nr
// tpgid), its uid, the names of the environment it was started with and
// its arguments (after argv[0], which the kernel replaces for a script),
// into OUT/probe; then it waits for OUT/go and exits with
// the status written there.
const consoleProbe = `#!/usr/bin/python3
import os, sys, time
out = OUT
def isopen(n):
    try:
        os.fstat(n)
        return True
    except OSError:
        return False
fds = [n for n in range(1024) if isopen(n)]
links = [os.readlink('/proc/self/fd/%d' % n) for n in fds]
with open('/proc/self/stat') as f:
    stat = f.read().rsplit(')', 1)[1].split()[:6]
with open('/proc/self/environ', 'rb') as f:
    env = [kv.split(b'=', 1)[0].decode() for kv in f.read().split(b'\0') if kv]
argv = ' '.join(sys.argv[1:])
lines = [' '.join(map(str, fds)), ' '.join(links), str(os.getpid()), ' '.join(stat), str(os.getuid()), ' '.join(env), argv]
with open(os.path.join(out, 'probe.tmp'), 'w') as f:
    f.write('\n'.join(lines) + '\n')
os.rename(os.path.join(out, 'probe.tmp'), os.path.join(out, 'probe'))
for _ in range(1200):
    try:
        with open(os.path.join(out, 'go')) as f:
            sys.exit(int(f.read()))
    except FileNotFoundError:
        time.sleep(0.05)
sys.exit(3)
`

// TestE2ETTYConsoleChild: agent-sudod --tty on a real terminal starts its
// console as the agent-sudo beside it (here a probe that reports what it
// got), as root, with exactly descriptors 0, 1 and 2, all the daemon's
// terminal (not its sockets, audit log or log file); in the daemon's
// session and process group, which is the terminal's foreground group; with
// none of the daemon's environment but the terminal's variables; and with
// the command line "agent-sudo approve --stops-daemon" for the approver
// socket. The console's exit status decides why the daemon stops: 0 is
// the human quitting it, 129 the terminal hanging up.
func TestE2ETTYConsoleChild(t *testing.T) {
	testenv.NeedsRoot(t)
	testenv.NeedsTmux(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skipf("the probe console is a python3 script: %v", err)
	}
	daemonBin, _ := daemontest.Binaries(t)
	for _, tt := range []struct {
		exit int
		why  error
	}{
		{0, daemon.ErrStoppedAtTerminal},
		{129, daemon.ErrTerminalHungUp},
	} {
		t.Run(strconv.Itoa(tt.exit), func(t *testing.T) {
			bin := t.TempDir()
			out := t.TempDir()
			sudod := filepath.Join(bin, "agent-sudod")
			testenv.CopyExecutable(t, daemonBin, sudod)
			testenv.WriteExecutable(t, filepath.Join(bin, "agent-sudo"), []byte(strings.Replace(consoleProbe, "OUT", strconv.Quote(out), 1)))
			d := daemontest.Configure(t, daemontest.Config{})
			tm := tmuxtest.Start(t, tmuxtest.Config{Command: fmt.Sprintf("TERM=xterm-probe FOO=bar %s --tty --config %s --log-file %s", sudod, d.ConfigPath, d.ForegroundLog())})
			got := strings.Split(strings.TrimSuffix(testenv.WaitForFile(t, filepath.Join(out, "probe"), ""), "\n"), "\n")
			if len(got) != 7 {
				t.Fatalf("probe = %q, want 7 lines", got)
			}
			cpid, _ := strconv.Atoi(got[2])
			links := strings.Fields(got[1])
			if got[0] != "0 1 2" || len(links) != 3 || links[0] != links[1] || links[1] != links[2] || !strings.HasPrefix(links[0], "/dev/pts/") {
				t.Errorf("the console's descriptors are %q, leading to %q: want exactly 0, 1 and 2, all the terminal", got[0], got[1])
			}
			dpid := daemonPID(t, d)
			if term := readlink(t, dpid, "fd/0"); len(links) > 0 && links[0] != term {
				t.Errorf("the console's terminal is %s, the daemon's %s", links[0], term)
			}
			cstat, dstat := strings.Fields(got[3]), testenv.MustProcStat(t, dpid).Fields
			// state ppid pgrp session tty_nr tpgid
			if len(cstat) != 6 || cstat[1] != strconv.Itoa(dpid) || cstat[2] != dstat[2] || cstat[3] != dstat[3] || cstat[4] != dstat[4] || cstat[5] != cstat[2] {
				t.Errorf("the console (pid %d): ppid pgrp session tty_nr tpgid %v; the daemon (pid %d): %v; want the daemon's child, in its process group and session, on its terminal, in the terminal's foreground group",
					cpid, cstat[1:], dpid, dstat[1:6])
			}
			if got[4] != "0" {
				t.Errorf("the console runs as uid %s, want 0 as the daemon", got[4])
			}
			env := strings.Fields(got[5])
			if !slices.Contains(env, "TERM") {
				t.Errorf("the console's environment %q has no TERM", env)
			}
			for _, name := range env {
				if !slices.Contains(consoleEnvNames, name) {
					t.Errorf("the console's environment has %s (the daemon's: FOO=bar was set for it), want only %q", name, consoleEnvNames)
				}
			}
			if want := "approve --stops-daemon --approver-socket " + d.ApproverSocket + " --desktop-notify auto"; got[6] != want {
				t.Errorf("the console's arguments are %q, want %q", got[6], want)
			}

			if err := os.WriteFile(filepath.Join(out, "go"), []byte(strconv.Itoa(tt.exit)), 0o644); err != nil {
				t.Fatal(err)
			}
			tm.WaitFor("exited with status 0")
			if logs, _ := os.ReadFile(d.ForegroundLog()); !strings.Contains(string(logs), fmt.Sprintf("msg=stopped why=%q", tt.why.Error())) {
				t.Errorf("the console exited %d; the daemon's log does not say it stopped because %q:\n%s", tt.exit, tt.why, logs)
			}
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", cpid)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the console (pid %d) is still there after the daemon exited: %v", cpid, err)
			}
		})
	}
}

// daemonPID is the pid of d's running daemon, from its start record.
func daemonPID(t *testing.T, d *daemontest.Daemon) int {
	t.Helper()
	for _, r := range d.AuditRecords("") {
		if r.Type == audit.TypeDaemon && r.Daemon.Event == audit.DaemonStarted {
			return r.Daemon.PID
		}
	}
	t.Fatalf("the audit log has no start record")
	return 0
}

// readlink reads /proc/PID/name.
func readlink(t *testing.T, pid int, name string) string {
	t.Helper()
	s, err := os.Readlink(fmt.Sprintf("/proc/%d/%s", pid, name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
