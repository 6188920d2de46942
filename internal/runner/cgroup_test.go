package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// requireCgroups skips a test when this system offers no usable cgroup v2
// hierarchy (or the test is not root), and returns the manager.
func requireCgroups(t testing.TB) *Cgroups {
	t.Helper()
	requireRoot(t)
	c, err := OpenCgroups()
	if err != nil {
		t.Skipf("no per-request cgroups on this system: %v", err)
	}
	return c
}

// escapeMarker returns a sleep duration unique to this test run, so that
// the test can find its sleeper, and only its sleeper, in /proc.
func escapeMarker() string {
	return fmt.Sprintf("%d.%06d", 900+rand.IntN(99), rand.IntN(1000000))
}

// escapers are commands whose sleep leaves the process group and outlives
// the stage: setsid -f (fork and new session), and a double fork into a new
// session whose middle process exits. Each waits until the sleeper runs,
// then exits 0.
func escaper(name, marker string) []string {
	wait := `while ! pgrep -f "^sleep ` + marker + `$" >/dev/null; do :; done`
	switch name {
	case "setsid -f":
		return []string{"sh", "-c", `setsid -f sleep ` + marker + `; ` + wait}
	case "double fork":
		return []string{"sh", "-c", `setsid sh -c 'sleep ` + marker + ` & exit 0' & ` + wait}
	}
	panic("unknown escaper " + name)
}

var escaperNames = []string{"setsid -f", "double fork"}

// checkNoneAlive fails when a live process with argument marker exists, and
// kills it.
func checkNoneAlive(t *testing.T, marker string) {
	t.Helper()
	if left := withArg(t, marker); len(left) > 0 {
		t.Errorf("processes survived the request: %v", left)
		for _, l := range left {
			var pid int
			if _, err := fmt.Sscanf(l, "%d:", &pid); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// TestCgroupKillsEscapeesAtExit: a process that left the process group is
// still in the pipeline's cgroup; after a normal exit it is reported as a
// survivor and killed, and nothing is alive when Run returns.
func TestCgroupKillsEscapeesAtExit(t *testing.T) {
	cgs := requireCgroups(t)
	for _, m := range allModes() {
		for _, name := range escaperNames {
			t.Run(string(m)+"/"+name, func(t *testing.T) {
				requireSudo(t, m)
				marker := escapeMarker()
				argv := escaper(name, marker)
				s := newSpec(t, m, "root", cmd(t, argv...))
				s.Cgroups = cgs
				res := mustRun(t, s)
				checkNoneAlive(t, marker)
				if res.TimedOut || res.Stages[0].ExitCode != 0 {
					t.Fatalf("TimedOut %v, exit %d%s", res.TimedOut, res.Stages[0].ExitCode, stderrs(res))
				}
				if !slices.ContainsFunc(res.Survivors, func(s Survivor) bool { return filepath.Base(s.Exe) == "sleep" }) {
					t.Errorf("Survivors = %+v; want the escaped sleep", res.Survivors)
				}
				if res.CgroupError != "" {
					t.Errorf("CgroupError = %q", res.CgroupError)
				}
			})
		}
	}
	checkNoLeftovers(t)
	checkNoRequestCgroups(t, cgs)
}

// TestCgroupKillsEscapeesAtTimeout: at command_timeout the whole cgroup is
// killed, including what left the process group.
func TestCgroupKillsEscapeesAtTimeout(t *testing.T) {
	cgs := requireCgroups(t)
	for _, m := range allModes() {
		for _, name := range escaperNames {
			t.Run(string(m)+"/"+name, func(t *testing.T) {
				requireSudo(t, m)
				marker := escapeMarker()
				argv := escaper(name, marker)
				argv[2] += "; exec sleep 1000"
				s := newSpec(t, m, "root", cmd(t, argv...))
				s.Cgroups = cgs
				s.Timeout = 2 * time.Second
				s.KillGrace = 0
				res := mustRun(t, s)
				checkNoneAlive(t, marker)
				if !res.TimedOut {
					t.Errorf("TimedOut = false; want the pipeline stopped at its timeout%s", stderrs(res))
				}
			})
		}
	}
	checkNoLeftovers(t)
	checkNoRequestCgroups(t, cgs)
}

// TestCgroupKillsEscapeesOnCancel: cancelling the context (a client's stop,
// the daemon's shutdown) kills the whole cgroup.
func TestCgroupKillsEscapeesOnCancel(t *testing.T) {
	cgs := requireCgroups(t)
	marker := escapeMarker()
	argv := escaper("setsid -f", marker)
	argv[2] += "; echo started; exec sleep 1000"
	s := newSpec(t, ModeDirect, "root", cmd(t, argv...))
	s.Cgroups = cgs
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the escapee runs.
		for len(withArg(t, marker)) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	res, err := Run(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	checkNoneAlive(t, marker)
	if !res.TimedOut {
		t.Errorf("TimedOut = false; want the pipeline stopped")
	}
	checkNoRequestCgroups(t, cgs)
}

// TestCgroupStagesStartInside: every stage, and in sudo mode sudo's command,
// is in the request's cgroup from the start.
func TestCgroupStagesStartInside(t *testing.T) {
	cgs := requireCgroups(t)
	for _, m := range allModes() {
		t.Run(string(m), func(t *testing.T) {
			requireSudo(t, m)
			s := newSpec(t, m, "root", cmd(t, "cat", "/proc/self/cgroup"), cmd(t, "grep", "^0::"))
			s.Cgroups = cgs
			res := mustRun(t, s)
			got := strings.TrimSpace(string(res.Stdout.Copy()))
			own, err := ownCgroup2("/proc/self/cgroup")
			if err != nil {
				t.Fatal(err)
			}
			if want := "0::" + filepath.Join(own, cgs.prefix); !strings.HasPrefix(got, want) {
				t.Errorf("stage's cgroup %q; want a request cgroup %s...", got, want)
			}
		})
	}
	checkNoRequestCgroups(t, cgs)
}

// checkNoRequestCgroups fails when a request cgroup of this process is left.
func checkNoRequestCgroups(t testing.TB, c *Cgroups) {
	t.Helper()
	ents, err := os.ReadDir(c.parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), c.prefix) {
			t.Errorf("request cgroup %s left behind", filepath.Join(c.parent, e.Name()))
		}
	}
}

// TestCgroup2Mount reads both layouts' mountinfo lines.
func TestCgroup2Mount(t *testing.T) {
	for _, tc := range []struct{ name, info, want string }{
		{"unified", "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n", "/sys/fs/cgroup"},
		{"hybrid", "31 30 0:27 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n32 30 0:28 / /sys/fs/cgroup/unified rw shared:9 - cgroup2 cgroup2 rw\n", "/sys/fs/cgroup/unified"},
		{"escaped", `40 1 0:30 / /mnt/a\040b rw - cgroup2 none rw` + "\n", "/mnt/a b"},
		{"bind of a subtree is skipped", "40 1 0:30 /sub /x rw - cgroup2 none rw\n", ""},
		{"v1 only", "31 30 0:27 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "mountinfo")
			if err := os.WriteFile(p, []byte(tc.info), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := cgroup2Mount(p)
			if tc.want == "" {
				if err == nil {
					t.Errorf("got %q; want an error", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestCgroupKillByFreezing: on kernels without cgroup.kill (before 5.14)
// the cgroup is frozen and each member killed; escapees die all the same.
func TestCgroupKillByFreezing(t *testing.T) {
	cgs := requireCgroups(t)
	noKill := &Cgroups{parent: cgs.parent, prefix: cgs.prefix + "freeze-"}
	for _, name := range escaperNames {
		t.Run(name, func(t *testing.T) {
			marker := escapeMarker()
			s := newSpec(t, ModeDirect, "root", cmd(t, escaper(name, marker)...))
			s.Cgroups = noKill
			res := mustRun(t, s)
			checkNoneAlive(t, marker)
			// The double fork's middle shell may still be alive too.
			if !slices.ContainsFunc(res.Survivors, func(s Survivor) bool { return filepath.Base(s.Exe) == "sleep" }) || res.CgroupError != "" {
				t.Errorf("Survivors %+v, CgroupError %q; want the sleep, no error", res.Survivors, res.CgroupError)
			}
		})
	}
	checkNoRequestCgroups(t, cgs)
}

// TestCgroupStaleNames: request cgroups left by an earlier daemon neither
// block a new one nor stay. An empty one named for a pid with no process is
// removed when the cgroups are opened; a name with the new daemon's own pid
// (a crashed daemon whose pid was reused) is skipped, whether empty or not.
// Creating the first cgroup used to fail with "file exists".
func TestCgroupStaleNames(t *testing.T) {
	c := requireCgroups(t)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(c.Parent(), "agent-sudo-"+strconv.Itoa(gone.Process.Pid)+"-1")
	// The next daemon with this pid starts counting at 1 again.
	prefix := "agent-sudo-" + strconv.Itoa(os.Getpid()) + "-"
	empty := filepath.Join(c.Parent(), prefix+"1")
	busy := filepath.Join(c.Parent(), prefix+"2")
	made := []string{dead, empty, busy, filepath.Join(busy, "child")}
	for _, d := range made {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, d := range slices.Backward(made) {
			_ = os.Remove(d)
		}
	})
	again, err := OpenCgroups()
	if err != nil {
		t.Fatalf("OpenCgroups with stale names present: %v", err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the empty cgroup of the dead pid %d is still there (%v)", gone.Process.Pid, err)
	}
	s := newSpec(t, ModeDirect, "root", cmd(t, "true"))
	s.Cgroups = again
	res, err := Run(t.Context(), s)
	if err != nil {
		t.Fatalf("Run with stale names of this pid present: %v", err)
	}
	res.Release()
}

// TestCgroupKilledOnce: after cgroup.kill was written nothing can enter the
// cgroup, so a second kill writes nothing (here the file is gone, and a
// write would fail).
func TestCgroupKilledOnce(t *testing.T) {
	dir := t.TempDir()
	kill := dir + "/cgroup.kill"
	if err := os.WriteFile(kill, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	g := &cgroup{dir: dir, hasKill: true}
	if err := g.kill(); err != nil {
		t.Fatalf("first kill: %v", err)
	}
	if b, _ := os.ReadFile(kill); string(b) != "1" {
		t.Fatalf("cgroup.kill holds %q after the first kill, want 1", b)
	}
	if err := os.Remove(kill); err != nil {
		t.Fatal(err)
	}
	if err := g.kill(); err != nil {
		t.Errorf("second kill: %v; want nothing written", err)
	}
}
