package console_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/consoletest"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2EWritableProgramWarnedInTmux: on the real console, a program reached
// through an agent-owned directory is shown with each hop of its symlink
// chain quoted on its own (a directory named "d -> " cannot pass for a hop),
// a loud NOT ROOT-ONLY warning, and the reason no session grant is offered;
// a working directory reached through a symlink is shown resolved with its
// chain (issue 10 H1, M1, M3).
func TestE2EWritableProgramWarnedInTmux(t *testing.T) {
	t.Parallel()
	needE2E(t)
	root, err := os.MkdirTemp("/run", "asx")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	u := daemontest.AddUser(t, "execc")
	agent := filepath.Join(root, "a")
	if err := os.Mkdir(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(agent, int(u.UID), int(u.GID)); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`cd %s && mkdir -p 'd -> /usr/bin' && printf '#!/bin/sh\necho hi\n' > 'd -> /usr/bin/apt-get' && chmod 755 'd -> /usr/bin/apt-get' && ln -s 'd -> /usr/bin/apt-get' apt-get && ln -s /etc proj`, agent)
	if out, err := u.Command("/bin/sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	d := daemontest.Start(t, daemonConfig)
	tm := startApprove(t, d, 0, 0)
	r := ask(t, d, &proto.Request{Pipeline: [][]string{{agent + "/apt-get", "update"}}, Session: "e2e", Cwd: agent + "/proj"})
	screen := tm.WaitFor("NOT ROOT-ONLY")
	for _, want := range []string{
		fmt.Sprintf("stage 1    %s/apt-get -> '%s/d -> /usr/bin/apt-get' update", agent, agent),
		fmt.Sprintf("⚠ NOT ROOT-ONLY: %s the directory is owned by uid %d", agent, u.UID),
		"is not granted for the session",
		fmt.Sprintf("cwd        /etc (requested as %s/proj -> /etc)", agent),
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	denyWithoutNote(t, tm, r)
	if resp := r.Wait(); resp.Status != proto.StatusDenied {
		t.Fatalf("denied request: %+v", resp)
	}
}

// TestE2EForegroundTTYChildFDsDirect: with the console on the daemon's own
// terminal (agent-sudod --tty), whose terminal reader holds an epoll
// descriptor, a command sees only fds 0, 1 and 2, in direct and in sudo
// mode (issue 10 L3).
func TestE2EForegroundTTYChildFDsDirect(t *testing.T) { foregroundChildFDs(t, "direct") }

// TestE2EForegroundTTYChildFDsSudo is the same in sudo mode.
func TestE2EForegroundTTYChildFDsSudo(t *testing.T) { foregroundChildFDs(t, "sudo") }

func foregroundChildFDs(t *testing.T, mode string) {
	t.Parallel()
	needE2E(t)
	var nums []string
	for n := range 64 {
		nums = append(nums, strconv.Itoa(n))
	}
	script := "for n in " + strings.Join(nums, " ") + "; do [ -e /proc/$$/fd/$n ] && printf '%s ' $n; done; true"
	cfg := daemonConfig
	cfg.Exec = mode
	d := daemontest.Configure(t, cfg)
	tm := d.Foreground(t)
	r := ask(t, d, &proto.Request{Pipeline: [][]string{{"bash", "-c", script}}, Session: "fds"})
	tm.WaitFor("command    bash -c")
	consoletest.Press(t, tm, "a", "request "+r.ID+" was allowed by")
	if resp := r.Wait(); resp.Status != proto.StatusOK || string(resp.Stdout) != "0 1 2 " {
		t.Fatalf("status %q stdout %q message %q: want only fds 0 1 2", resp.Status, resp.Stdout, resp.Message)
	}
	consoletest.Press(t, tm, "q", "exited with status 0")
}
