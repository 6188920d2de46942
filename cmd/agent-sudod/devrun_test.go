package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/consoletest"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/internal/tmuxtest"
)

// TestDevRun is make run's script, scripts/dev-run.sh, on a real terminal:
// the console comes up, the agent-side command it prints and README.md
// gives (agent-sudo run --socket bin/dev.sock ...) reaches the daemon, and
// when the console quits the temporary directory and the link are gone.
func TestDevRun(t *testing.T) {
	testenv.NeedsRoot(t)
	testenv.NeedsTmux(t)
	daemonBin, cliBin := daemontest.Binaries(t)
	bin := t.TempDir()
	testenv.CopyExecutable(t, daemonBin, filepath.Join(bin, "agent-sudod"))
	testenv.CopyExecutable(t, cliBin, filepath.Join(bin, "agent-sudo"))
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// umask 0002, as a Debian user's, which sudo-rs keeps: the script's
	// files for root must not depend on it (issue 34).
	tm := tmuxtest.Start(t, tmuxtest.Config{Command: fmt.Sprintf("umask 0002 && cd %s && AGENT_SUDO_DEV_BIN=%s scripts/dev-run.sh", repo, bin)})
	tm.WaitFor("waiting for requests…")
	link := filepath.Join(bin, "dev.sock")
	sock, err := os.Readlink(link)
	if err != nil || !strings.HasPrefix(sock, "/tmp/agent-sudo-dev.") {
		t.Fatalf("%s -> %q, %v; want a link to the temporary directory's socket", link, sock, err)
	}
	// The agent side, as README.md's "Try it" gives it.
	out, err := exec.Command(filepath.Join(bin, "agent-sudo"), "run", "--socket", link, "--", "id", "-u").CombinedOutput()
	if err != nil || string(out) != "0\n" {
		t.Fatalf("agent-sudo run --socket %s -- id -u: %v, %q", link, err, out)
	}
	consoletest.Press(t, tm, "q", "exited with status 0")
	if _, err := os.Lstat(filepath.Dir(sock)); !os.IsNotExist(err) {
		t.Errorf("the temporary directory %s is still there after the console quit (%v)", filepath.Dir(sock), err)
	}
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Errorf("the link %s is still there after the console quit (%v)", link, err)
	}
}
