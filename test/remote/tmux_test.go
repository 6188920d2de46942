//go:build remote

package remote

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// tmuxSession is a detached session on a tmux server of its own: the
// console's real terminal. The test reads the screen with capture-pane and
// types with send-keys, like a human at a terminal.
type tmuxSession struct {
	t            *testing.T
	server, name string
}

func startTmux(t *testing.T, command string) *tmuxSession {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("the console needs tmux: %v", err)
	}
	tm := &tmuxSession{t: t, server: fmt.Sprintf("agent-sudo-remote-%d-%s", os.Getpid(), t.Name()), name: "approve"}
	// The pane keeps its last screen and says how the command ended.
	shell := command + `; echo "exited with status $?"; sleep 600`
	tm.run("-f", "/dev/null", "new-session", "-d", "-s", tm.name, "-x", "200", "-y", "50", shell)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the console's last screen:\n%s", tm.capture())
		}
		tm.run("kill-server")
	})
	return tm
}

// run runs a tmux command on the session's server.
func (tm *tmuxSession) run(args ...string) string {
	tm.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-L", tm.server}, args...)...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TMUX=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil && args[0] != "kill-server" && args[0] != "capture-pane" {
		tm.t.Fatalf("tmux %q: %v: %s", args, err, stderr.String())
	}
	return out.String()
}

func (tm *tmuxSession) capture() string {
	return tm.run("capture-pane", "-p", "-t", tm.name)
}

// keys types keys (tmux key names, or text) into the pane.
func (tm *tmuxSession) keys(keys ...string) {
	tm.t.Helper()
	tm.run(append([]string{"send-keys", "-t", tm.name}, keys...)...)
}

// waitFor polls the screen until it shows want, and returns it.
func (tm *tmuxSession) waitFor(want string) string {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		screen := tm.capture()
		if strings.Contains(screen, want) {
			return screen
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("the screen did not show %q within 30s; it shows:\n%s", want, screen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitPastGuard waits until the prompt's key guard has ended: the screen
// no longer counts down to the keys being enabled.
func (tm *tmuxSession) waitPastGuard() {
	tm.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		screen := tm.capture()
		if !strings.Contains(screen, "keys enabled in") {
			return
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("the keys were not enabled within 30s:\n%s", screen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
