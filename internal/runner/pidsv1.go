package runner

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/agent-sudo/agent-sudo/internal/sysfile"
	"golang.org/x/sys/unix"
)

// pidsV1 is the cgroup v1 hierarchy the pids controller is bound to, in
// systemd's hybrid layout, where the v2 hierarchy (at /sys/fs/cgroup/unified)
// offers no pids controller. Request cgroups there are twins of the v2 ones
// (same name), made in the daemon's own v1 pids cgroup, so that a request's
// processes count against both its own pids.max and every limit above the
// daemon (systemd's TasksMax).
//
// A v1 cgroup cannot be named at clone time (CLONE_INTO_CGROUP is for the v2
// hierarchy only); in v1 a forked child joins the cgroups of the thread that
// forked it, and one thread can be moved alone by writing its id to a
// cgroup's "tasks" file (Documentation/admin-guide/cgroup-v1/cgroups.rst).
// So each stage is forked from a thread moved into the request's v1 cgroup
// for the fork and moved back after (see [ForkInPidsV1]). Moving a thread in
// is never refused by pids.max (cgroup-v1/pids.rst: attaching may take
// pids.current past pids.max; only fork and clone are refused).
type pidsV1 struct {
	// mount is where the hierarchy is mounted, from its root.
	mount string
	// parent is the daemon's own cgroup in it: request cgroups' twins
	// are made there.
	parent string
}

// findPidsV1 finds the cgroup v1 hierarchy with the pids controller (from a
// mountinfo file) and, in it, the cgroup of the process whose cgroup file
// (as /proc/self/cgroup) is given.
func findPidsV1(mountinfo, cgroupFile string) (*pidsV1, error) {
	mount, err := cgroupMount(mountinfo, "pids")
	if err != nil {
		return nil, err
	}
	h := &pidsV1{mount: mount}
	if h.parent, err = h.fileDir(cgroupFile); err != nil {
		return nil, err
	}
	return h, nil
}

// fileDir is the directory in the hierarchy of the cgroup that a cgroup
// file names on its "ID:CONTROLLERS:PATH" line whose controllers include
// pids: /proc/PID/cgroup, or /proc/thread-self/cgroup (a thread's own,
// which in v1 may differ from its process's).
func (h *pidsV1) fileDir(name string) (string, error) {
	b, err := sysfile.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("cgroup: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || f[0] == "0" || !slices.Contains(strings.Split(f[1], ","), "pids") {
			continue
		}
		if !strings.HasPrefix(f[2], "/") || strings.HasSuffix(f[2], " (deleted)") {
			return "", fmt.Errorf("cgroup: %s: pids cgroup %q not usable", name, f[2])
		}
		return filepath.Join(h.mount, f[2]), nil
	}
	return "", fmt.Errorf("cgroup: %s has no v1 pids line", name)
}

// ForkInPidsV1 calls fork on an operating-system thread moved, for the call
// only, into the cgroup v1 directory dir of the hierarchy that holds the
// pids controller, so that the processes fork starts are in dir there (a
// forked child joins the v1 cgroups of the thread that forked it). It is
// how the runner starts each stage of a request whose pids cgroup is v1;
// tests use it to start a daemon in a v1 pids cgroup of their own.
//
// The thread is one of the Go runtime's, locked to a goroutine of its own
// (runtime.LockOSThread) that only moves itself in, calls fork and moves
// itself back. While it is locked, the runtime starts any new thread from
// its template thread, never by cloning this one (runtime.newm checks the
// M's lockedExt), so no runtime thread is made in dir. The thread is given
// back to the runtime only once /proc/thread-self/cgroup shows it back
// where it was; otherwise its goroutine ends still locked, and the runtime
// ends the thread (runtime.LockOSThread: "If the calling goroutine exits
// without unlocking the thread, the thread will be terminated"), which
// runs nothing else meanwhile and, still locked as it exits, starts no
// thread either; it leaves dir as it exits, just after ForkInPidsV1
// returns. The main thread is never used: locked at its goroutine's end,
// it is parked for ever, not ended, and it is the thread /proc/PID/cgroup
// shows.
//
// fork runs on that thread; goroutines it starts run on others. An error
// moving the thread is returned joined with fork's.
func ForkInPidsV1(dir string, fork func() error) error {
	h, err := findPidsV1("/proc/self/mountinfo", "/proc/self/cgroup")
	if err != nil {
		return err
	}
	return h.forkIn(dir, fork)
}

// forkIn is ForkInPidsV1 in this hierarchy.
func (h *pidsV1) forkIn(dir string, fork func() error) error {
	res := make(chan error, 1)
	go h.forkLocked(dir, fork, res, true)
	return <-res
}

// forkLocked locks its goroutine, which must end when it returns, to its
// thread, moves the thread into dir, calls fork, moves the thread back and
// sends the outcome to res. It unlocks the thread only once it is shown
// back where it was: otherwise the thread ends with the goroutine. On the
// main thread it keeps that locked and, when nest is set, does all this
// from a goroutine of its own, which cannot run there.
func (h *pidsV1) forkLocked(dir string, fork func() error, res chan<- error, nest bool) {
	runtime.LockOSThread()
	tid := unix.Gettid()
	if tid == unix.Getpid() {
		if nest {
			inner := make(chan error, 1)
			go h.forkLocked(dir, fork, inner, false)
			res <- <-inner
		} else {
			res <- errors.New("cgroup: on the main thread")
		}
		runtime.UnlockOSThread()
		return
	}
	const self = "/proc/thread-self/cgroup"
	home, err := h.fileDir(self)
	if err != nil {
		runtime.UnlockOSThread() // not moved
		res <- err
		return
	}
	if err = writeTask(dir, tid); err == nil {
		err = fork()
		if werr := writeTask(home, tid); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	if now, nerr := h.fileDir(self); nerr != nil || now != home {
		// Left locked: the runtime ends the thread with this goroutine.
		res <- fmt.Errorf("cgroup: thread %d is not back in %s (%v, %v); it was ended", tid, home, err, nerr)
		return
	}
	runtime.UnlockOSThread()
	res <- err
}

// writeTask moves thread tid into the v1 cgroup dir.
func writeTask(dir string, tid int) error {
	if err := sysfile.WriteFile(filepath.Join(dir, "tasks"), []byte(strconv.Itoa(tid))); err != nil {
		return fmt.Errorf("cgroup: moving thread %d into %s: %w", tid, dir, err)
	}
	return nil
}
