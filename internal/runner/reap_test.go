package runner

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
)

// TestCgroupReapStale: at start the daemon empties and removes the request
// cgroups of daemons that no longer run, and says what it killed in each
// (issue 32, fault 2): a cgroup named for a dead pid, and one named for a
// pid now used by a process outside the parent cgroup (no daemon making
// request cgroups there), are emptied with SIGKILL and removed, each
// Leftover naming the daemon's pid, the tag and the processes killed; a
// cgroup named for a live process in the parent (a live daemon) is left
// alone. The parent is a cgroup of the test's own, so that no daemon of
// another test reaps its cgroups.
func TestCgroupReapStale(t *testing.T) {
	own := requireCgroups(t)
	parent := filepath.Join(own.Parent(), fmt.Sprintf("reap-test-%d-%d", os.Getpid(), rand.Uint64()))
	if err := os.Mkdir(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	var made []string
	var procs []*exec.Cmd
	t.Cleanup(func() {
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
		for _, d := range slices.Backward(made) {
			_ = os.Remove(d)
		}
		_ = os.Remove(parent)
	})
	// sleepIn starts a sleep in cgroup dir, from its first instruction.
	sleepIn := func(dir string) *exec.Cmd {
		t.Helper()
		f, err := os.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		c := exec.Command("sleep", "1000")
		c.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, c)
		return c
	}
	mkdir := func(name string) string {
		t.Helper()
		d := filepath.Join(parent, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		made = append(made, d)
		return d
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	liveDaemon := sleepIn(parent) // stands in for a live daemon
	elsewhere := exec.Command("sleep", "1000")
	if err := elsewhere.Start(); err != nil {
		t.Fatal(err)
	}
	procs = append(procs, elsewhere)

	deadDir := mkdir("agent-sudo-" + strconv.Itoa(gone.Process.Pid) + "-3-0123456789abcdef")
	deadSleep := sleepIn(deadDir)
	reusedDir := mkdir("agent-sudo-" + strconv.Itoa(elsewhere.Process.Pid) + "-1")
	reusedSleep := sleepIn(reusedDir)
	liveDir := mkdir("agent-sudo-" + strconv.Itoa(liveDaemon.Process.Pid) + "-1")
	liveSleep := sleepIn(liveDir)

	c := &Cgroups{parent: parent, prefix: "agent-sudo-" + strconv.Itoa(os.Getpid()) + "-", hasKill: own.hasKill}
	left := c.ReapStale()
	want := map[string]struct {
		pid   int
		tag   string
		sleep *exec.Cmd
	}{
		deadDir:   {gone.Process.Pid, "0123456789abcdef", deadSleep},
		reusedDir: {elsewhere.Process.Pid, "", reusedSleep},
	}
	if len(left) != len(want) {
		t.Fatalf("ReapStale: %+v; want the cgroups of the dead pid and of the reused pid", left)
	}
	for _, lo := range left {
		w, ok := want[lo.Dir]
		if !ok || lo.DaemonPID != w.pid || lo.Tag != w.tag || lo.Err != nil {
			t.Errorf("leftover %+v; want dir in %v, pid %d, tag %q, no error", lo, want, w.pid, w.tag)
			continue
		}
		if len(lo.Killed) != 1 || lo.Killed[0].PID != w.sleep.Process.Pid || lo.Killed[0].Exe != "/usr/bin/sleep" {
			t.Errorf("%s: killed %+v; want its sleep (pid %d)", lo.Dir, lo.Killed, w.sleep.Process.Pid)
		}
		if _, err := os.Stat(lo.Dir); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", lo.Dir, err)
		}
		// Killed: Wait returns at once, with SIGKILL.
		if err := w.sleep.Wait(); err == nil || w.sleep.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("%s: its sleep ended with %v; want SIGKILL", lo.Dir, err)
		}
	}
	if err := syscall.Kill(liveSleep.Process.Pid, 0); err != nil {
		t.Errorf("the live daemon's request was killed: %v", err)
	}
	if _, err := os.Stat(liveDir); err != nil {
		t.Errorf("the live daemon's cgroup was removed: %v", err)
	}
}
