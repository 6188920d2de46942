package spawn

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// TestTerminalRefused: what the terminal policy does not start, each with
// the reason.
func TestTerminalRefused(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	testenv.WriteExecutable(t, prog, []byte("#!/bin/sh\n"))
	ok := TerminalCmd{Path: prog, Args: []string{"prog"}, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	for _, tt := range []struct {
		name string
		edit func(*TerminalCmd)
		want string
	}{
		{"relative path", func(c *TerminalCmd) { c.Path = "prog" }, `spawn: program "prog" is not an absolute path`},
		{"no argv", func(c *TerminalCmd) { c.Args = nil }, "spawn: " + prog + ": no argument vector (argv[0] is missing)"},
		{"no stderr", func(c *TerminalCmd) { c.Stderr = nil }, "spawn: " + prog + ": a terminal program needs stdin, stdout and stderr"},
		{"missing", func(c *TerminalCmd) { c.Path = filepath.Join(dir, "none") }, "the program " + dir + "/none does not exist"},
		{"a symbolic link", func(c *TerminalCmd) {
			c.Path = filepath.Join(dir, "link")
			if err := os.Symlink(prog, c.Path); err != nil {
				t.Fatal(err)
			}
		}, "the program " + dir + "/link is not a regular file"},
	} {
		c := ok
		tt.edit(&c)
		if _, err := RunOnTerminal(context.Background(), c); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: RunOnTerminal = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

// TestTerminalCommandPolicy: the exec.Cmd built for a terminal child: the
// files given as its descriptors 0, 1 and 2 and nothing more; no new
// session nor process group (it keeps the daemon's terminal as its
// controlling terminal, in the foreground group) and no other user; SIGTERM
// as its parent death signal; "/" and exactly the caller's environment.
func TestTerminalCommandPolicy(t *testing.T) {
	in, out, errs := os.NewFile(10, "in"), os.NewFile(11, "out"), os.NewFile(12, "err")
	cmd, err := terminalCommand(context.Background(), TerminalCmd{Path: "/usr/bin/agent-sudo", Args: []string{"agent-sudo", "approve"},
		Env: []string{"TERM=xterm"}, Stdin: in, Stdout: out, Stderr: errs})
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Stdin != in || cmd.Stdout != out || cmd.Stderr != errs || len(cmd.ExtraFiles) != 0 {
		t.Errorf("Stdin %v Stdout %v Stderr %v ExtraFiles %v: want the three files given, nothing more", cmd.Stdin, cmd.Stdout, cmd.Stderr, cmd.ExtraFiles)
	}
	sys := cmd.SysProcAttr
	if sys.Setsid || sys.Setpgid || sys.Setctty || sys.Noctty || sys.Foreground || sys.Credential != nil || sys.Pdeathsig != syscall.SIGTERM {
		t.Errorf("SysProcAttr %+v: want the daemon's session, process group and user, and SIGTERM when the daemon dies", sys)
	}
	if cmd.Dir != "/" || strings.Join(cmd.Env, " ") != "TERM=xterm" || strings.Join(cmd.Args, " ") != "agent-sudo approve" {
		t.Errorf("Dir %q Env %q Args %q: want /, exactly TERM=xterm, agent-sudo approve", cmd.Dir, cmd.Env, cmd.Args)
	}
	if cmd.WaitDelay != DefaultStopGrace {
		t.Errorf("WaitDelay %v, want the default stop grace %v", cmd.WaitDelay, DefaultStopGrace)
	}
}

// TestRunOnTerminalStops: when ctx ends, a terminal child is sent SIGTERM;
// one that ignores it is killed StopGrace later, and the terminal it left
// raw gets its modes back and is told to leave the alternate screen.
func TestRunOnTerminalStops(t *testing.T) {
	// The grace is long where the child must die of the SIGTERM, so that
	// a slow machine cannot turn it into a kill, and short where it
	// ignores it, so that the kill comes soon.
	for _, tt := range []struct {
		name, script string
		grace        time.Duration
		want         syscall.Signal
	}{
		{"SIGTERM", `stty raw -echo; echo ready; exec sleep 600`, 10 * time.Minute, syscall.SIGTERM},
		{"SIGKILL", `stty raw -echo; trap "" TERM; echo ready; exec sleep 600`, 200 * time.Millisecond, syscall.SIGKILL},
	} {
		t.Run(tt.name, func(t *testing.T) {
			master, tty, _ := testenv.Pty(t, 80, 24)
			before, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
			if err != nil {
				t.Fatal(err)
			}
			prog := filepath.Join(t.TempDir(), "child")
			testenv.WriteExecutable(t, prog, []byte("#!/bin/sh\n"+tt.script+"\n"))
			screen := make(chan []byte, 64)
			go func() {
				defer close(screen)
				for {
					b := make([]byte, 4096)
					n, err := master.Read(b)
					if n > 0 {
						screen <- b[:n]
					}
					if err != nil {
						return
					}
				}
			}()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type result struct {
				end End
				err error
			}
			done := make(chan result, 1)
			go func() {
				end, err := RunOnTerminal(ctx, TerminalCmd{Path: prog, Args: []string{"child"}, Env: []string{"PATH=/usr/bin:/bin"},
					Stdin: tty, Stdout: tty, Stderr: tty, StopGrace: tt.grace})
				done <- result{end, err}
			}()
			var seen []byte
			wait := func(want string) {
				t.Helper()
				for !bytes.Contains(seen, []byte(want)) {
					select {
					case b, ok := <-screen:
						if !ok {
							t.Fatalf("the terminal closed; it got %q, no %q", seen, want)
						}
						seen = append(seen, b...)
					case <-time.After(time.Minute):
						t.Fatalf("the terminal got %q: no %q after a minute", seen, want)
					}
				}
			}
			wait("ready")
			cancel()
			r := <-done
			if r.err != nil || r.end.Signal != tt.want {
				t.Fatalf("RunOnTerminal = %v, %v; want it killed by %v", r.end, r.err, tt.want)
			}
			after, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
			if err != nil {
				t.Fatal(err)
			}
			if *after != *before {
				t.Errorf("the terminal's modes after the child are %+v, want those before it %+v", *after, *before)
			}
			// The sequence that leaves the alternate screen follows.
			wait(leaveScreen)
		})
	}
}
