package daemontest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/tmuxtest"
)

// Foreground starts d, configured by Configure and not started, as
// agent-sudod --tty on a terminal of its own (a tmux session), with its log
// in LogPath, which the test's log gets when it fails. It returns once the
// console shows it waits for requests and the daemon answers a ping.
func (d *Daemon) Foreground(t testing.TB) *tmuxtest.Session {
	t.Helper()
	daemonBin, _ := Binaries(t)
	logPath := d.ForegroundLog()
	tm := tmuxtest.Start(t, tmuxtest.Config{Command: fmt.Sprintf("%s --tty --config %s --log-file %s", daemonBin, d.ConfigPath, logPath)})
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := os.ReadFile(logPath)
			t.Logf("agent-sudod's log:\n%s", logs)
		}
	})
	tm.WaitFor("waiting for requests…")
	d.WaitReady()
	return tm
}

// ForegroundLog is the log file of a daemon started by Foreground.
func (d *Daemon) ForegroundLog() string { return filepath.Join(d.Dir, "agent-sudod.log") }
