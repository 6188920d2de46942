// Package tmuxtest runs a program on a real terminal for end-to-end tests:
// a detached session of a tmux server of the test's own, which the test
// reads with capture-pane and types into with send-keys, as a human at a
// terminal would. It is for tests only; no production code imports it.
//
// The waits are driven by the pane's output, not by sleeping: a tmux
// control-mode client, attached read-only and without a say in the
// window's size, reports each write of the program (%output), and a wait
// captures the screen again after each one, until the screen shows what it
// waits for or its time runs out. A write that comes between a capture and
// the wait for the next report is not lost: the report stays pending.
package tmuxtest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Config says what a Session runs and how.
type Config struct {
	// Command is the shell command line the session runs. When it ends,
	// the pane says "exited with status N" and keeps its last screen.
	Command string
	// Cols and Rows are the terminal's size; 200×50 when zero.
	Cols, Rows int
	// Timeout is the longest a wait waits before it fails the test; 30 s
	// when zero.
	Timeout time.Duration
}

// Session is a detached tmux session running Config.Command on a server
// of its own, killed when the test ends (the last screen is logged when
// the test failed).
type Session struct {
	t testing.TB
	// Socket is the tmux server's socket (tmux -S), in a directory of its
	// own, and Name the session's, the target of commands given to Run.
	Socket, Name string
	timeout      time.Duration
	// output receives a value (without blocking, so at most one waits)
	// after each write of the program; it is closed when the control
	// client ends.
	output  chan struct{}
	control *exec.Cmd
}

// Start starts c.Command in a new session of a new tmux server, and a
// control-mode client that reports the pane's output. It fails the test
// when tmux is missing or does not start.
func Start(t testing.TB, c Config) *Session {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("the test needs tmux: %v", err)
	}
	if c.Cols == 0 {
		c.Cols = 200
	}
	if c.Rows == 0 {
		c.Rows = 50
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
	// Not t.TempDir: its path can be too long for a socket's.
	dir, err := os.MkdirTemp("", "agent-sudo-tmux-")
	if err != nil {
		t.Fatalf("a directory for the tmux socket: %v", err)
	}
	s := &Session{t: t, Socket: filepath.Join(dir, "socket"), Name: "main", timeout: c.Timeout, output: make(chan struct{}, 1)}
	// The pane keeps its last screen and says how the command ended.
	shell := c.Command + `; echo "exited with status $?"; sleep 600`
	s.Run("-f", "/dev/null", "new-session", "-d", "-s", s.Name, "-x", strconv.Itoa(c.Cols), "-y", strconv.Itoa(c.Rows), shell)
	t.Cleanup(func() {
		if t.Failed() {
			if screen, err := s.run("capture-pane", "-p", "-t", s.Name); err == nil {
				t.Logf("the terminal's last screen:\n%s", screen)
			}
		}
		_, _ = s.run("kill-server")
		if s.control != nil {
			for range s.output { // until the control client's output ends
			}
			_ = s.control.Wait()
		}
		_ = os.RemoveAll(dir)
	})
	s.watch()
	return s
}

// watch starts the control-mode client that reports the pane's output,
// and waits until it is attached: from then on each write is reported, and
// what came before is on the screen the first capture of a wait reads. Its
// stdin stays open (an empty line or EOF would detach it) until the test
// ends.
func (s *Session) watch() {
	s.t.Helper()
	cmd := s.command("-C", "attach-session", "-t", s.Name, "-f", "read-only,ignore-size")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		s.t.Fatalf("tmux control client: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatalf("tmux control client: %v", err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start the tmux control client: %v", err)
	}
	s.control = cmd
	s.t.Cleanup(func() { _ = stdin.Close() })
	attached := make(chan struct{})
	go func() {
		defer close(s.output)
		r := bufio.NewReader(stdout)
		told := false
		for {
			line, err := r.ReadString('\n')
			switch {
			case strings.HasPrefix(line, "%session-changed ") && !told:
				close(attached)
				told = true
			case strings.HasPrefix(line, "%output ") || strings.HasPrefix(line, "%extended-output "):
				select {
				case s.output <- struct{}{}:
				default:
				}
			}
			if err != nil {
				_, _ = io.Copy(io.Discard, stdout)
				return
			}
		}
	}()
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	for {
		select {
		case <-attached:
			return
		case _, open := <-s.output:
			if !open {
				_ = cmd.Wait()
				s.t.Fatalf("the tmux control client ended before it attached: %s", stderr.String())
			}
		case <-timer.C:
			s.t.Fatalf("the tmux control client did not attach within %v", s.timeout)
		}
	}
}

// command is tmux with args on the session's server, in this process's
// environment without TMUX (so that a test run inside tmux does not talk
// to the human's server).
func (s *Session) command(args ...string) *exec.Cmd {
	cmd := exec.Command("tmux", append([]string{"-S", s.Socket}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMUX=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd
}

func (s *Session) run(args ...string) (string, error) {
	cmd := s.command(args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("tmux %q: %w: %s", args, err, stderr.String())
	}
	return out.String(), nil
}

// Run runs the tmux command args on the session's server and returns its
// output; it fails the test when tmux fails.
func (s *Session) Run(args ...string) string {
	s.t.Helper()
	out, err := s.run(args...)
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// Screen is what the pane shows now (capture-pane).
func (s *Session) Screen() string {
	s.t.Helper()
	return s.Run("capture-pane", "-p", "-t", s.Name)
}

// Keys types keys (tmux key names, or text) into the pane (send-keys).
func (s *Session) Keys(keys ...string) {
	s.t.Helper()
	s.Run(append([]string{"send-keys", "-t", s.Name}, keys...)...)
}

// Resize makes the terminal cols×rows.
func (s *Session) Resize(cols, rows int) {
	s.t.Helper()
	s.Run("resize-window", "-t", s.Name, "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows))
}

// WaitFor waits until the screen shows want, and returns the screen.
func (s *Session) WaitFor(want string) string {
	s.t.Helper()
	return s.Wait(func(screen string) bool { return strings.Contains(screen, want) }, fmt.Sprintf("show %q", want))
}

// WaitGone waits until the screen no longer shows gone, and returns the
// screen.
func (s *Session) WaitGone(gone string) string {
	s.t.Helper()
	return s.Wait(func(screen string) bool { return !strings.Contains(screen, gone) }, fmt.Sprintf("stop showing %q", gone))
}

// Wait waits until ok accepts the screen, and returns the screen: it
// captures the screen now and again after each write of the program. When
// the timeout passes first, it fails the test saying the screen did not
// do what (e.g. `show "x"`) and what it shows.
func (s *Session) Wait(ok func(screen string) bool, what string) string {
	s.t.Helper()
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	for {
		screen := s.Screen()
		if ok(screen) {
			return screen
		}
		select {
		case _, open := <-s.output:
			if !open {
				s.t.Fatalf("the screen did not %s, and the tmux control client that reports its changes ended; it shows:\n%s", what, screen)
			}
		case <-timer.C:
			s.t.Fatalf("the screen did not %s within %v; it shows:\n%s", what, s.timeout, screen)
		}
	}
}
