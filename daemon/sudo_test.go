package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// TestNewSudoImplementation: with exec = "sudo" the daemon does not start
// on a sudo_path it cannot tell is sudo or sudo-rs, or one too old to be
// given the approved environment, and says what it found; sudo and sudo-rs
// start it.
func TestNewSudoImplementation(t *testing.T) {
	testenv.NeedsRoot(t) // the daemon asks sudo_path --version as nobody
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, tt := range []struct{ version, err string }{
		{"doas 6.8", `its --version says "doas 6.8", which is neither sudo`},
		{"Sudo version 1.8.20", "sudo 1.8.21 or newer"},
		{"sudo-rs 0.2.4", "sudo-rs 0.2.5 or newer"},
		{"sudo-rs 0.2.5", ""},
		{"Sudo version 1.9.16p2", ""},
	} {
		path := filepath.Join(dir, "sudo"+string(rune('a'+i)))
		if err := os.WriteFile(path, []byte("#!/bin/sh\necho '"+tt.version+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		ts := &testServer{t: t, socket: filepath.Join(dir, "agent.sock"), approverSocket: filepath.Join(dir, "approver.sock"),
			auditPath: filepath.Join(dir, "audit"+string(rune('a'+i)), "audit.jsonl")}
		cfg := ts.config("")
		cfg.Exec, cfg.SudoPath = runner.ModeSudo, path
		alog, err := audit.Open(ts.auditPath, audit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(cfg, Options{Audit: alog})
		alog.Close()
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%q: New: %v", tt.version, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), `exec = "sudo": sudo_path `+path)):
			t.Errorf("%q: New: %v; want an error naming exec, sudo_path and %q", tt.version, err, tt.err)
		}
	}
}
