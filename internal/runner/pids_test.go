package runner

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestCgroupEnablePids: the pids controller is used where the daemon's
// cgroup already enables it for its children, enabled ("+pids") where the
// cgroup offers it, and otherwise refused with a message that says what the
// cgroup offers; a request cgroup whose pids.max cannot be set is not made,
// so no request runs without the limit the daemon said it applies (issue
// 32, fault 3). The cgroup files are plain files here: what the kernel
// does with them is TestE2EForkBombDoesNotTakeTheDaemon's (daemon).
func TestCgroupEnablePids(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, controllers, subtree string
		wantErr                    string // substring; "" means enabled
		wantSubtree                string
	}{
		{name: "enabled", controllers: "cpu memory pids", subtree: "memory pids", wantSubtree: "memory pids"},
		{name: "offered", controllers: "cpu pids", subtree: "", wantSubtree: "+pids"},
		{name: "not offered (hybrid layout)", controllers: "hugetlb", subtree: "", wantErr: `the pids controller is not available in`, wantSubtree: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, content := range map[string]string{"cgroup.controllers": tc.controllers, "cgroup.subtree_control": tc.subtree} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c := &Cgroups{parent: dir, prefix: "agent-sudo-1-"}
			// No v1 pids hierarchy either (TestCgroupEnablePidsV1Refused
			// has the hybrid layout's).
			err := c.enablePids(func() (*pidsV1, error) { return nil, errors.New("no v1 pids hierarchy") })
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("EnablePids: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.controllers)):
				t.Fatalf("EnablePids: %v; want %q naming what is offered (%q)", err, tc.wantErr, tc.controllers)
			}
			if c.pids != (tc.wantErr == "") {
				t.Errorf("pids = %v after EnablePids returned %v", c.pids, err)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); string(b) != tc.wantSubtree {
				t.Errorf("cgroup.subtree_control = %q; want %q", b, tc.wantSubtree)
			}
			// A plain directory has no pids.max: with the controller
			// enabled, the cgroup is not made; without, no limit is asked.
			g, err := c.create("", 64)
			if c.pids {
				if err == nil || !strings.Contains(err.Error(), "setting pids.max") {
					t.Errorf("create with a pids.max that cannot be set: %v; want it refused", err)
				}
				if entries, _ := os.ReadDir(dir); len(entries) != 2 {
					t.Errorf("a refused cgroup was left behind: %v", entries)
				}
			} else if err != nil {
				t.Errorf("create without the pids controller: %v", err)
			} else {
				_ = g.remove()
			}
		})
	}
}

// TestDupAboveOutOfDescriptors: when no descriptor number above those the
// child may overwrite is free under the daemon's RLIMIT_NOFILE (fcntl's
// F_DUPFD fails EINVAL past the limit, EMFILE below it), the error says
// the daemon is out of file descriptors, not "invalid argument" (issue 32,
// "also seen"). The files handed to the child are stood in for by a
// descriptor number at the limit, which is never open.
func TestDupAboveOutOfDescriptors(t *testing.T) {
	t.Parallel()
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	prog, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	// Not an open descriptor: only its number is read, and it is never
	// closed (no finalizer runs for a file that stays reachable).
	atLimit := os.NewFile(uintptr(lim.Cur), "at the limit")
	dup, err := dupAbove(prog, []*os.File{nil, nil, nil, atLimit})
	if err == nil {
		dup.Close()
		t.Fatalf("dupAbove above RLIMIT_NOFILE (%d) succeeded", lim.Cur)
	}
	if !strings.Contains(err.Error(), "the daemon is out of file descriptors") {
		t.Errorf("error %q; want it to say the daemon is out of file descriptors", err)
	}
	runtime.KeepAlive(atLimit)
}
