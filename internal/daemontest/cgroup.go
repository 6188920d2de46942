package daemontest

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroup makes a cgroup v2 directory of the test's own, under the test
// process's cgroup, for Config.CgroupDir; when the test ends, whatever it
// still holds is killed and it is removed. It skips the test where the
// daemon cannot make per-request cgroups (see RequireCgroups).
func Cgroup(t testing.TB) string {
	t.Helper()
	RequireRoot(t)
	RequireCgroups(t)
	parent, err := ownCgroupDir()
	if err != nil {
		t.Fatal(err)
	}
	// The pids controller, for tests that set pids.max on their cgroup,
	// is enabled once, before any test cgroup holds a process: beside
	// populated children the kernel refuses it (EBUSY). Where it cannot
	// be, PidsEnabled says why.
	pidsOnce.Do(func() { pidsErr = enablePids(parent) })
	// Not a request cgroup's name (agent-sudo-PID-N): no daemon reaps it.
	dir := filepath.Join(parent, fmt.Sprintf("asd-test-%d-%d", os.Getpid(), rand.Uint64()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("making a test cgroup: %v", err)
	}
	t.Cleanup(func() {
		if err := removeCgroup(dir); err != nil {
			t.Errorf("removing the test cgroup: %v", err)
		}
	})
	return dir
}

var (
	pidsOnce sync.Once
	pidsErr  error
)

// PidsEnabled reports whether the cgroups Cgroup makes have the pids
// controller (pids.max), and if not, why. Call it after Cgroup.
func PidsEnabled() error { return pidsErr }

// enablePids enables the pids controller for the children of cgroup dir.
func enablePids(dir string) error {
	sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	if slices.Contains(strings.Fields(string(sub)), "pids") {
		return nil
	}
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return err
	}
	if !slices.Contains(strings.Fields(string(avail)), "pids") {
		return fmt.Errorf("%s offers no pids controller (its cgroup.controllers: %q)", dir, strings.TrimSpace(string(avail)))
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+pids"), 0); err != nil {
		return fmt.Errorf("enabling the pids controller in %s: %w", dir, err)
	}
	return nil
}

// ownCgroupDir is this process's directory in the cgroup v2 hierarchy.
func ownCgroupDir() (string, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	mount := ""
	for line := range strings.SplitSeq(string(mi), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if ok && len(f) >= 5 && len(g) >= 1 && g[0] == "cgroup2" && f[3] == "/" {
			mount = f[4]
			break
		}
	}
	if mount == "" {
		return "", errors.New("no cgroup v2 hierarchy is mounted")
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return filepath.Join(mount, p), nil
		}
	}
	return "", errors.New("/proc/self/cgroup has no cgroup v2 entry")
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
