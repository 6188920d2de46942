package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFindPidsV1: the cgroup v1 hierarchy of the pids controller is found
// in mountinfo by its super options (alone or co-mounted), and the
// process's cgroup in it from its cgroup file's pids line, also when the
// hierarchy is mounted from a sub-cgroup (a container); what cannot be used
// is refused with a message that says why. Plain files (issue 32, fault 3).
func TestFindPidsV1(t *testing.T) {
	t.Parallel()
	const v2 = "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
	const pids = "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
	for _, tc := range []struct {
		name, mountinfo, cgroup string
		wantParent, wantErr     string
	}{
		{name: "hybrid", mountinfo: v2 + pids, cgroup: "9:name=systemd:/system.slice/a.service\n8:pids:/system.slice/a.service\n0::/system.slice/a.service\n",
			wantParent: "/sys/fs/cgroup/pids/system.slice/a.service"},
		{name: "co-mounted", mountinfo: "39 31 0:36 / /sys/fs/cgroup/cpu,pids rw - cgroup cgroup rw,cpu,pids\n", cgroup: "4:cpu,pids:/x\n",
			wantParent: "/sys/fs/cgroup/cpu,pids/x"},
		{name: "mounted from a sub-cgroup", mountinfo: "39 31 0:36 /docker/ab /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n", cgroup: "8:pids:/docker/ab/y\n",
			wantErr: "no v1 pids hierarchy is mounted"},
		{name: "v2 only", mountinfo: "25 1 0:22 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n", cgroup: "0::/\n",
			wantErr: "no v1 pids hierarchy is mounted"},
		{name: "name=pids is not the controller", mountinfo: "40 31 0:37 / /sys/fs/cgroup/x rw - cgroup cgroup rw,name=pids\n", cgroup: "9:name=pids:/\n",
			wantErr: "no v1 pids hierarchy is mounted"},
		{name: "no pids line", mountinfo: v2 + pids, cgroup: "0::/\n", wantErr: "has no v1 pids line"},
		{name: "deleted cgroup", mountinfo: v2 + pids, cgroup: "8:pids:/gone (deleted)\n", wantErr: "not usable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			mi, cg := filepath.Join(dir, "mountinfo"), filepath.Join(dir, "cgroup")
			if err := os.WriteFile(mi, []byte(tc.mountinfo), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cg, []byte(tc.cgroup), 0o644); err != nil {
				t.Fatal(err)
			}
			h, err := findPidsV1(mi, cg)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("findPidsV1: %+v, %v; want an error with %q", h, err, tc.wantErr)
				}
			case err != nil:
				t.Errorf("findPidsV1: %v", err)
			case h.parent != tc.wantParent:
				t.Errorf("parent %q; want %q", h.parent, tc.wantParent)
			}
		})
	}
}

// TestCgroupEnablePidsV1Refused: where the v2 hierarchy has no pids
// controller, a v1 one that cannot be used (none, or a request cgroup's
// twin whose pids.max cannot be set: a plain directory stands in) is
// refused, the error naming both reasons, so the daemon warns and never
// claims a limit it does not apply.
func TestCgroupEnablePidsV1Refused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		v1      func(dir string) (*pidsV1, error)
		wantErr string
	}{
		{name: "no v1 pids hierarchy", v1: func(string) (*pidsV1, error) { return nil, errors.New("no v1 here") }, wantErr: "no v1 here"},
		{name: "pids.max cannot be set", v1: func(dir string) (*pidsV1, error) {
			return &pidsV1{mount: dir, parent: dir}, nil
		}, wantErr: "setting pids.max of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v2, v1 := t.TempDir(), t.TempDir()
			for name, content := range map[string]string{"cgroup.controllers": "hugetlb", "cgroup.subtree_control": ""} {
				if err := os.WriteFile(filepath.Join(v2, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c := &Cgroups{parent: v2, prefix: "agent-sudo-1-"}
			err := c.enablePids(func() (*pidsV1, error) { return tc.v1(v1) })
			if err == nil || !strings.Contains(err.Error(), "hugetlb") || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("enablePids: %v; want the v2 reason and %q", err, tc.wantErr)
			}
			if c.pids || c.v1 != nil {
				t.Errorf("after a refusal: pids %v, v1 %+v", c.pids, c.v1)
			}
			if entries, _ := os.ReadDir(v1); len(entries) != 0 {
				t.Errorf("the probe left %v", entries)
			}
		})
	}
}

// requirePidsV1 skips a test unless the pids controller is cgroup v1's
// here (systemd's hybrid layout), and returns the manager with it enabled.
func requirePidsV1(t *testing.T) *Cgroups {
	t.Helper()
	c := requireCgroups(t)
	if err := c.EnablePids(); err != nil {
		t.Skipf("no pids controller: %v", err)
	}
	if c.v1 == nil {
		t.Skip("the pids controller is cgroup v2's here")
	}
	return c
}

// threadsOutside lists this process's threads whose v1 pids cgroup is not
// home, and where each is.
func threadsOutside(t *testing.T, h *pidsV1, home string) []string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, task := range tasks {
		dir, err := h.fileDir("/proc/self/task/" + task.Name() + "/cgroup")
		if errors.Is(err, os.ErrNotExist) {
			continue // ended meanwhile
		}
		if err != nil || dir != home {
			out = append(out, fmt.Sprintf("%s in %s (%v)", task.Name(), dir, err))
		}
	}
	return out
}

// TestPidsV1StagesForkedIntoTwin: in systemd's hybrid layout, the stages of
// concurrent pipelines each run in their request cgroup's v1 twin, whose
// pids.max is Spec.PidsMax, while no thread of the process that started
// them (the daemon: the runner runs in-process here) is anywhere but its
// own v1 pids cgroup; once the pipelines end the twins are gone (issue 32,
// fault 3).
func TestPidsV1StagesForkedIntoTwin(t *testing.T) {
	c := requirePidsV1(t)
	home := c.v1.parent
	const n = 6
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		s := newSpec(t, ModeDirect, "root", cmd(t, "sleep", "1000"), cmd(t, "cat"))
		s.Cgroups, s.PidsMax, s.Timeout = c, 77, time.Minute // past the wait below: cancelled
		wg.Go(func() {
			res, err := Run(ctx, s)
			switch {
			case err != nil:
				errs <- err
			case res.CgroupError != "":
				errs <- errors.New(res.CgroupError)
			}
		})
	}
	// Every pipeline's two stages, and nothing else, are in a twin: no
	// thread of this process is on its way in or out.
	var twins []string
	deadline := time.Now().Add(20 * time.Second)
	for {
		var bad []string
		twins = twins[:0]
		entries, err := os.ReadDir(home)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), c.prefix) {
				continue
			}
			dir := filepath.Join(home, e.Name())
			twins = append(twins, dir)
			b, _ := os.ReadFile(filepath.Join(dir, "tasks"))
			tids := strings.Fields(string(b))
			for _, tid := range tids {
				if _, err := os.Stat("/proc/self/task/" + tid); err == nil {
					bad = append(bad, dir+" holds thread "+tid+" of the daemon")
				}
			}
			if len(tids) != 2 {
				bad = append(bad, fmt.Sprintf("%s holds %d threads", dir, len(tids)))
			}
		}
		if len(twins) == n && len(bad) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d twins; want %d, each with its two stages only: %v", len(twins), n, bad)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, dir := range twins {
		if b, err := os.ReadFile(filepath.Join(dir, "pids.max")); err != nil || strings.TrimSpace(string(b)) != "77" {
			t.Errorf("%s: pids.max %q, %v; want 77", dir, b, err)
		}
	}
	if out := threadsOutside(t, c.v1, home); len(out) > 0 {
		t.Errorf("threads of the daemon outside its pids cgroup %s while stages run: %v", home, out)
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Run: %v", err)
	}
	for _, dir := range twins {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("twin %s is still there after its pipeline (%v)", dir, err)
		}
	}
	if out := threadsOutside(t, c.v1, home); len(out) > 0 {
		t.Errorf("threads outside %s after the pipelines: %v", home, out)
	}
}

// TestForkInPidsV1EndsAThreadThatCannotGoBack: when the thread that forked
// into a v1 cgroup cannot be moved back (here: its home is made to name a
// directory with no tasks file), the error says so and the thread is ended,
// never handed back to the runtime: it leaves the cgroup, which can then be
// removed, and no thread of the process is left in it.
func TestForkInPidsV1EndsAThreadThatCannotGoBack(t *testing.T) {
	c := requirePidsV1(t)
	dir := filepath.Join(c.v1.parent, fmt.Sprintf("forkin-test-%d-%d", os.Getpid(), rand.Uint64()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Rmdir(dir) })
	// A hierarchy whose mount is a plain directory: the thread's home
	// there has no tasks file; dir, named in full, is the real cgroup.
	fake := &pidsV1{mount: t.TempDir()}
	var tid int
	var inDir bool
	err := fake.forkIn(dir, func() error {
		tid = unix.Gettid()
		b, err := os.ReadFile(filepath.Join(dir, "tasks"))
		inDir = err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(tid)
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "it was ended") {
		t.Fatalf("forkIn with no way back: %v; want it to say the thread was ended", err)
	}
	if !inDir {
		t.Fatalf("fork did not run on a thread alone in %s", dir)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid))
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d still runs (%v)", tid, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := unix.Rmdir(dir); err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "tasks"))
		t.Errorf("removing %s once the thread ended: %v (tasks %q)", dir, err, b)
	}
}

// TestReapStaleV1: at start, a dead daemon's request cgroup is reaped with
// its twin in the daemon's v1 pids cgroup; a twin that still holds a
// process (a root command that left the v2 cgroup can) keeps its cgroup
// too, and the Leftover says so; the twins of this process's and of a live
// daemon's cgroups are left alone.
func TestReapStaleV1(t *testing.T) {
	c := requirePidsV1(t)
	name := fmt.Sprintf("reapv1-test-%d-%d", os.Getpid(), rand.Uint64())
	v1, v2 := filepath.Join(c.v1.parent, name), filepath.Join(c.Parent(), name)
	var made []string
	t.Cleanup(func() {
		for i := len(made) - 1; i >= 0; i-- {
			_ = unix.Rmdir(made[i])
		}
	})
	mkdir := func(d string) string {
		t.Helper()
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		made = append(made, d)
		return d
	}
	mkdir(v1)
	mkdir(v2)
	// startIn starts a sleep in the v2 cgroup v2dir and the v1 one v1dir.
	startIn := func(v2dir, v1dir string) *exec.Cmd {
		t.Helper()
		f, err := os.Open(v2dir)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd := exec.Command("sleep", "1000")
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		if err := os.WriteFile(filepath.Join(v1dir, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	pair := func(name string) (string, string) {
		return mkdir(filepath.Join(v2, name)), mkdir(filepath.Join(v1, name))
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := "agent-sudo-" + strconv.Itoa(gone.Process.Pid)
	deadV2, deadV1 := pair(dead + "-4-0123abcd")
	startIn(deadV2, deadV1) // killed with the v2 cgroup
	heldV2, heldV1 := pair(dead + "-5")
	startIn(v2, heldV1) // left the v2 cgroup
	ownV2, ownV1 := pair("agent-sudo-" + strconv.Itoa(os.Getpid()) + "-1")
	liveDaemon := startIn(v2, v1)
	liveV2, liveV1 := pair("agent-sudo-" + strconv.Itoa(liveDaemon.Process.Pid) + "-1")
	liveStage := startIn(liveV2, liveV1)

	c2 := &Cgroups{parent: v2, prefix: c.prefix}
	out := c2.reapStale(&pidsV1{mount: c.v1.mount, parent: v1})
	got := map[string]Leftover{}
	for _, lo := range out {
		got[lo.Dir] = lo
	}
	if len(out) != 2 {
		t.Errorf("Leftovers %+v; want 2", out)
	}
	if lo, ok := got[deadV2]; !ok || lo.Err != nil || lo.Tag != "0123abcd" || len(lo.Killed) != 1 {
		t.Errorf("the dead daemon's cgroup's Leftover %+v (%v); want it, its sleep killed, no error", lo, ok)
	}
	if lo, ok := got[heldV2]; !ok || lo.Err == nil || !strings.Contains(lo.Err.Error(), "removing "+heldV1) {
		t.Errorf("the held twin's Leftover %+v (%v); want an error saying it could not be removed", lo, ok)
	}
	for _, d := range []string{deadV2, deadV1} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (%v)", d, err)
		}
	}
	for _, d := range []string{heldV2, heldV1, ownV2, ownV1, liveV2, liveV1} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
	if err := liveStage.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the live daemon's stage was killed: %v", err)
	}
}
