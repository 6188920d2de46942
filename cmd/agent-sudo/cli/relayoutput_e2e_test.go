package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/account"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// TestE2EWebApproverLeavesTheTerminal runs the real web approver with a
// terminal (a pty) as its output, as a human starts it: once it serves,
// it holds no descriptor of the terminal (its output goes through pipes),
// and what it prints reaches the terminal through its relay, which runs
// as --user (nobody), not dumpable, and holds the terminal.
func TestE2EWebApproverLeavesTheTerminal(t *testing.T) {
	daemontest.RequireRoot(t)
	nobody, err := account.UID("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	ptmx, pts, ptsName := testenv.Pty(t, 0, 0)
	// What the terminal shows; changed is signalled after each growth
	// (one pending signal covers every change before it), and closed when
	// the terminal's reading side ends.
	var mu sync.Mutex
	var screen []byte
	changed := make(chan struct{}, 1)
	go func() {
		defer close(changed)
		buf := make([]byte, 4096)
		for {
			k, err := ptmx.Read(buf)
			mu.Lock()
			screen = append(screen, buf[:k]...)
			mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	shown := func() string { mu.Lock(); defer mu.Unlock(); return string(screen) }

	d := daemontest.Start(t, daemontest.Config{})
	_, cli := daemontest.Binaries(t)
	web := exec.Command(cli, "approve", "--web", "localhost:"+testenv.FreePrivilegedPort(t), "--no-tls", "--approver-socket", d.ApproverSocket, "--user", "nobody")
	web.Env = daemontest.RaceEnv(os.Environ())
	web.Stdin, web.Stdout, web.Stderr = pts, pts, pts
	web.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	// A descriptor whoever started it left open, which it must not keep
	// nor pass on.
	strayPath := filepath.Join(t.TempDir(), "stray")
	stray, err := os.Create(strayPath)
	if err != nil {
		t.Fatal(err)
	}
	defer stray.Close()
	web.ExtraFiles = []*os.File{stray}
	if err := web.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = web.Process.Signal(os.Interrupt); _ = web.Wait() })

	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for !strings.Contains(shown(), "web approver for ") {
		select {
		case _, open := <-changed:
			if !open && !strings.Contains(shown(), "web approver for ") {
				t.Fatalf("the terminal closed before it showed the web approver's first line:\n%s", shown())
			}
		case <-timeout.C:
			t.Fatalf("the terminal did not show the web approver's first line within 30s:\n%s", shown())
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", web.Process.Pid))
	if err != nil || len(fds) < 3 {
		t.Fatalf("the web approver's descriptors: %d, %v", len(fds), err)
	}
	for _, fd := range fds {
		if got, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", web.Process.Pid, fd.Name())); err != nil || got == ptsName || got == strayPath {
			t.Errorf("the web approver's descriptor %s is %q (%v): the terminal, or the one it was started with", fd.Name(), got, err)
		}
	}
	relay := childOf(t, web.Process.Pid)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", relay))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("\t%d\t%d\t%d\t%d\n", nobody, nobody, nobody, nobody); !strings.Contains(string(status), "\nUid:"+want) {
		t.Errorf("the relay (pid %d) does not run as nobody:\n%s", relay, status)
	}
	// A process that is not dumpable has its /proc files owned by root,
	// whoever it runs as: nobody's other processes cannot trace it.
	if fi, err := os.Stat(fmt.Sprintf("/proc/%d/fd", relay)); err != nil || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Errorf("the relay's /proc/%d/fd: %v, %v; want it root's: the relay not dumpable", relay, fi, err)
	}
	for _, fd := range []int{1, 2} {
		if got, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", relay, fd)); got != ptsName {
			t.Errorf("the relay's descriptor %d is %q, want the terminal %s", fd, got, ptsName)
		}
	}
	relayFDs, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", relay))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range relayFDs {
		if got, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", relay, fd.Name())); got == strayPath {
			t.Errorf("the relay holds, as descriptor %s, the file the web approver was started with", fd.Name())
		}
	}
}

// TestRelayOutputByHand: the relay, which anyone may start, does nothing
// but say how it is started when its descriptors 3 and 4 are not pipes,
// or when it is not given the ids to drop to, or root's.
func TestRelayOutputByHand(t *testing.T) {
	_, cli := daemontest.Binaries(t)
	f, err := os.Open("/etc/hostname")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	for name, extra := range map[string][]*os.File{"no descriptors": nil, "files": {f, f}} {
		cmd := exec.Command(cli, "approve", "web", "relay-output")
		cmd.Env = daemontest.RaceEnv(os.Environ())
		cmd.ExtraFiles = extra
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "is not a pipe: started by approve --web, not by hand") {
			t.Errorf("%s: %v, %q; want exit 2 saying how it is started", name, err, out)
		}
	}
	var pipes []*os.File
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		pipes = append(pipes, r)
	}
	for _, ids := range [][]string{nil, {"0", "0"}, {"65534", "0"}, {"nobody", "nogroup"}, {"65534"}} {
		cmd := exec.Command(cli, append([]string{"approve", "web", "relay-output"}, ids...)...)
		cmd.Env = daemontest.RaceEnv(os.Environ())
		cmd.ExtraFiles = pipes
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "want the uid and gid to run as, neither 0") {
			t.Errorf("ids %q: %v, %q; want exit 2 asking for the ids", ids, err, out)
		}
	}
}
