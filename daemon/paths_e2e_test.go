package daemon_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// TestE2EUnsafePathsRefused (issue 10 L4): agent-sudod refuses to start
// with a socket in a world-writable sticky directory such as /tmp itself,
// and refuses a log file path where a symbolic link was planted, leaving
// the link's target untouched.
func TestE2EUnsafePathsRefused(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	bin, _ := daemontest.Binaries(t)
	d := daemontest.Configure(t, daemontest.Config{})
	// A daemon that wrongly starts is stopped after this long.
	timeout := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		t.Cleanup(cancel)
		return ctx
	}

	t.Run("socket in /tmp", func(t *testing.T) {
		sock := filepath.Join("/tmp", "asudo-l4-"+filepath.Base(d.Dir)+".sock")
		out, err := exec.CommandContext(timeout(t), bin, "--config", d.ConfigPath, "--socket", sock).CombinedOutput()
		_ = os.Remove(sock)
		want := "socket directory /tmp has mode 1777 (sticky, like /tmp: others can still create names in it): others could plant or replace files there"
		if err == nil || !strings.Contains(string(out), want) {
			t.Fatalf("agent-sudod --socket %s: %v\n%s\nwant a refusal containing %q", sock, err, out, want)
		}
	})
	t.Run("planted log symlink", func(t *testing.T) {
		target := filepath.Join(d.Dir, "victim")
		if err := os.WriteFile(target, []byte("root's file\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		logPath := filepath.Join(d.Dir, "agent-sudod.log")
		if err := os.Symlink(target, logPath); err != nil {
			t.Fatal(err)
		}
		out, err := exec.CommandContext(timeout(t), bin, "--config", d.ConfigPath, "--log-file", logPath).CombinedOutput()
		want := "log file " + logPath + " is a symbolic link; refusing to follow it"
		if err == nil || !strings.Contains(string(out), want) {
			t.Fatalf("agent-sudod --log-file <symlink>: %v\n%s\nwant a refusal containing %q", err, out, want)
		}
		if b, _ := os.ReadFile(target); string(b) != "root's file\n" {
			t.Errorf("the symlink's target was written: %q", b)
		}
	})
}
