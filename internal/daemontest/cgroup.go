package daemontest

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/internal/runner"
)

// Cgroup makes a cgroup v2 directory of the test's own, under the test
// process's cgroup, for Config.CgroupDir; when the test ends, whatever it
// still holds is killed and it is removed. Where the pids controller is
// cgroup v1's (systemd's hybrid layout), it also makes a twin of the same
// name under the test process's v1 pids cgroup, which the daemon is started
// in too (see PidsDir). It skips the test where the daemon cannot make
// per-request cgroups (see RequireCgroups).
func Cgroup(t testing.TB) string {
	t.Helper()
	RequireRoot(t)
	RequireCgroups(t)
	parent, _, err := runner.OwnCgroupDirs()
	if err != nil {
		t.Fatal(err)
	}
	// The pids controller, for tests that set pids.max on their cgroup,
	// is enabled once, before any test cgroup holds a process: beside
	// populated children the kernel refuses it (EBUSY). Where it cannot
	// be, the v1 pids hierarchy is looked for; where neither is usable,
	// PidsEnabled says why.
	pidsOnce.Do(func() { pidsV1, pidsErr = enablePids(parent) })
	// Not a request cgroup's name (agent-sudo-PID-N): no daemon reaps it.
	name := fmt.Sprintf("asd-test-%d-%d", os.Getpid(), rand.Uint64())
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("making a test cgroup: %v", err)
	}
	var twin string
	if pidsV1 != "" {
		twin = filepath.Join(pidsV1, name)
		if err := os.Mkdir(twin, 0o755); err != nil {
			_ = os.Remove(dir)
			t.Fatalf("making a test cgroup's twin in the v1 pids hierarchy: %v", err)
		}
	}
	t.Cleanup(func() {
		// The v2 cgroup first: killing what it holds empties the twin.
		if err := removeCgroup(dir); err != nil {
			t.Errorf("removing the test cgroup: %v", err)
		}
		if twin != "" {
			if err := removeTree(twin); err != nil {
				t.Errorf("removing the test cgroup's v1 pids twin: %v", err)
			}
		}
	})
	return dir
}

var (
	pidsOnce sync.Once
	pidsErr  error
	// pidsV1 is the test process's cgroup in the v1 pids hierarchy, when
	// the pids controller is there.
	pidsV1 string
)

// PidsEnabled reports whether the cgroups Cgroup makes have the pids
// controller (pids.max, in PidsDir), and if not, why. Call it after Cgroup.
func PidsEnabled() error { return pidsErr }

// PidsDir is the directory whose pids.max limits what runs in the cgroup
// dir that Cgroup made: dir itself, or its twin in the v1 pids hierarchy
// (systemd's hybrid layout). The daemon's request cgroups (its pids.max
// and pids.events) are made in it. Call it after PidsEnabled.
func PidsDir(dir string) string {
	if pidsV1 == "" {
		return dir
	}
	return filepath.Join(pidsV1, filepath.Base(dir))
}

// startIn starts cmd in the cgroup v2 directory dir (made by Cgroup), from
// its first instruction, and in dir's v1 pids twin where there is one.
func startIn(cmd *exec.Cmd, dir string) error {
	cg, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer cg.Close()
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd())}
	if pidsV1 == "" {
		return cmd.Start()
	}
	return runner.ForkInPidsV1(PidsDir(dir), cmd.Start)
}

// enablePids enables the pids controller for the children of cgroup dir;
// where the v2 hierarchy has none, it returns the test process's cgroup in
// the v1 pids hierarchy instead.
func enablePids(dir string) (v1 string, err error) {
	sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return "", err
	}
	if slices.Contains(strings.Fields(string(sub)), "pids") {
		return "", nil
	}
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return "", err
	}
	if !slices.Contains(strings.Fields(string(avail)), "pids") {
		_, v1, v1err := runner.OwnCgroupDirs()
		if v1err == nil && v1 == "" {
			v1err = errors.New("no cgroup v1 hierarchy with the pids controller is mounted at its root")
		}
		if v1err != nil {
			return "", fmt.Errorf("%s offers no pids controller (its cgroup.controllers: %q), and cgroup v1: %w", dir, strings.TrimSpace(string(avail)), v1err)
		}
		return v1, nil
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+pids"), 0); err != nil {
		return "", fmt.Errorf("enabling the pids controller in %s: %w", dir, err)
	}
	return "", nil
}

// removeTree removes the empty cgroup v1 directory dir and those inside
// it, deepest first.
func removeTree(dir string) error {
	var dirs []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := unix.Rmdir(dirs[i]); err != nil && err != unix.ENOENT {
			errs = append(errs, fmt.Errorf("%s: %w", dirs[i], err))
		}
	}
	return errors.Join(errs...)
}

// removeCgroup kills what dir and the cgroups inside it hold and removes
// them, deepest first.
func removeCgroup(dir string) error {
	var dirs []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	if len(dirs) == 0 {
		return nil
	}
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
		if err != nil || strings.Contains(string(b), "populated 0") || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := unix.Rmdir(dirs[i]); err != nil && err != unix.ENOENT {
			errs = append(errs, fmt.Errorf("%s: %w", dirs[i], err))
		}
	}
	return errors.Join(errs...)
}
