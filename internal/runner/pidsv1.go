package runner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
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
// for the fork and moved back after (see [forkInPidsV1]). Moving a thread in
// is never refused by pids.max (cgroup-v1/pids.rst: attaching may take
// pids.current past pids.max; only fork and clone are refused).
type pidsV1 struct {
	// mount is where the hierarchy is mounted, root the cgroup path that
	// mount shows at its top ("/" unless mounted from a sub-cgroup).
	mount, root string
	// parent is the daemon's own cgroup in it: request cgroups are made
	// there.
	parent string
}

// findPidsV1 finds the cgroup v1 hierarchy with the pids controller (from a
// mountinfo file) and the cgroup of the process whose cgroup file (as
// /proc/self/cgroup) is given in it.
func findPidsV1(mountinfo, cgroupFile string) (*pidsV1, error) {
	mount, root, err := pidsV1Mount(mountinfo)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(cgroupFile)
	if err != nil {
		return nil, fmt.Errorf("cgroup: reading %s: %w", cgroupFile, err)
	}
	own, err := pidsV1Path(string(b))
	if err != nil {
		return nil, fmt.Errorf("cgroup: %s: %w", cgroupFile, err)
	}
	h := &pidsV1{mount: mount, root: root}
	parent, err := h.dir(own)
	if err != nil {
		return nil, err
	}
	h.parent = parent
	return h, nil
}

// pidsV1Mount returns where the cgroup v1 hierarchy holding the pids
// controller is mounted and the cgroup path at the top of that mount.
func pidsV1Mount(mountinfo string) (mount, root string, err error) {
	b, err := os.ReadFile(mountinfo)
	if err != nil {
		return "", "", fmt.Errorf("cgroup: reading %s: %w", mountinfo, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 || g[0] != "cgroup" || !slices.Contains(strings.Split(g[2], ","), "pids") {
			continue
		}
		return unescapeMountinfo(f[4]), unescapeMountinfo(f[3]), nil
	}
	return "", "", errors.New("cgroup: no cgroup v1 hierarchy with the pids controller is mounted")
}

// pidsV1Path returns the path, in the v1 pids hierarchy, of the cgroup a
// /proc/PID/cgroup (or /proc/thread-self/cgroup) text names: its
// "ID:CONTROLLERS:PATH" line whose controllers include pids.
func pidsV1Path(cgroupText string) (string, error) {
	for line := range strings.SplitSeq(cgroupText, "\n") {
		id, rest, ok := strings.Cut(line, ":")
		if !ok || id == "0" {
			continue
		}
		ctrls, path, ok := strings.Cut(rest, ":")
		if !ok || !slices.Contains(strings.Split(ctrls, ","), "pids") {
			continue
		}
		if !strings.HasPrefix(path, "/") || strings.HasSuffix(path, " (deleted)") {
			return "", fmt.Errorf("the pids cgroup %q is not usable", path)
		}
		return path, nil
	}
	return "", errors.New("no cgroup v1 pids entry")
}

// dir is the directory of the cgroup at path (as /proc/PID/cgroup names
// it) in the hierarchy.
func (h *pidsV1) dir(path string) (string, error) {
	rel := path
	if h.root != "/" {
		var ok bool
		if rel, ok = strings.CutPrefix(path, h.root); !ok || (rel != "" && rel[0] != '/') {
			return "", fmt.Errorf("cgroup: the pids cgroup %q is outside the hierarchy's mount (%s, of %q)", path, h.mount, h.root)
		}
	}
	return filepath.Join(h.mount, rel), nil
}

// threadDir is the directory of the calling thread's cgroup in the
// hierarchy (from /proc/thread-self/cgroup: a thread's own, which in v1 may
// differ from its process's).
func (h *pidsV1) threadDir() (string, error) {
	b, err := sysfile.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return "", fmt.Errorf("cgroup: reading /proc/thread-self/cgroup: %w", err)
	}
	path, err := pidsV1Path(string(b))
	if err != nil {
		return "", fmt.Errorf("cgroup: /proc/thread-self/cgroup: %w", err)
	}
	return h.dir(path)
}

// probe shows that a request cgroup can be made in the parent, limited
// and removed.
func (h *pidsV1) probe(name string) error {
	dir := filepath.Join(h.parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("cgroup: creating %s: %w", dir, err)
	}
	err := sysfile.WriteFile(filepath.Join(dir, "pids.max"), []byte("1"))
	if err != nil {
		err = fmt.Errorf("cgroup: setting pids.max of %s: %w", dir, err)
	}
	if rerr := unix.Rmdir(dir); rerr != nil {
		err = errors.Join(err, fmt.Errorf("cgroup: removing %s: %w", dir, rerr))
	}
	return err
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
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			res <- h.forkOnThread(dir, fork)
			return
		}
		// The main thread: keep it locked to this goroutine, so that
		// the one below runs on another thread.
		inner := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			if unix.Gettid() == unix.Getpid() {
				runtime.UnlockOSThread()
				inner <- errors.New("cgroup: no thread but the main one to fork from")
				return
			}
			inner <- h.forkOnThread(dir, fork)
		}()
		res <- <-inner
		runtime.UnlockOSThread()
	}()
	return <-res
}

// forkOnThread moves the calling thread, locked and not the main one, into
// dir, calls fork and moves the thread back. It unlocks the thread only
// once it is shown back where it was; otherwise the thread ends with the
// calling goroutine, which must end at once.
func (h *pidsV1) forkOnThread(dir string, fork func() error) error {
	tid := unix.Gettid()
	home, err := h.threadDir()
	if err != nil {
		runtime.UnlockOSThread() // not moved
		return err
	}
	back := func() error {
		now, err := h.threadDir()
		if err != nil {
			return err
		}
		if now != home {
			return fmt.Errorf("cgroup: a thread of the daemon is in %s, not back in %s", now, home)
		}
		return nil
	}
	if err := writeTask(dir, tid); err != nil {
		if back() == nil {
			runtime.UnlockOSThread()
		}
		return err
	}
	forkErr := fork()
	err = writeTask(home, tid)
	if err == nil {
		err = back()
	}
	if err != nil {
		// Left locked: the thread ends with this goroutine.
		return errors.Join(forkErr, fmt.Errorf("%w; the thread was ended", err))
	}
	runtime.UnlockOSThread()
	return forkErr
}

// writeTask moves thread tid into the v1 cgroup dir.
func writeTask(dir string, tid int) error {
	if err := sysfile.WriteFile(filepath.Join(dir, "tasks"), []byte(strconv.Itoa(tid))); err != nil {
		return fmt.Errorf("cgroup: moving thread %d into %s: %w", tid, dir, err)
	}
	return nil
}

// createTwin makes the v1 twin, named name, of a request cgroup, with
// pids.max set to pidsMax before anything enters it.
func (h *pidsV1) createTwin(name string, pidsMax int) (string, error) {
	dir := filepath.Join(h.parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("cgroup: creating %s: %w", dir, err) // the caller skips an existing name
	}
	if err := sysfile.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(pidsMax))); err != nil {
		_ = unix.Rmdir(dir)
		return "", fmt.Errorf("cgroup: setting pids.max of %s: %w", dir, err)
	}
	return dir, nil
}

// reapV1 empties and removes the stale v1 twin dir. Its processes are
// normally gone with the v2 twin's (a process is in both); only one that
// left the v2 cgroup (a root command can) is still here, and gets SIGKILL
// through a pidfd taken while it was a member, so that a reused pid is
// never signalled. It returns the processes killed.
func reapV1(dir string) ([]Survivor, error) {
	var killed []Survivor
	for try := 0; ; try++ {
		err := unix.Rmdir(dir)
		if err == nil || err == unix.ENOENT {
			return killed, nil
		}
		if err != unix.EBUSY || try >= reapTries {
			return killed, fmt.Errorf("cgroup: removing %s: %w", dir, err)
		}
		g := &cgroup{dir: dir}
		pids, lerr := g.members()
		if lerr != nil {
			return killed, lerr
		}
		if try == 0 {
			killed = g.survivors(nil)
		}
		var fds []unix.PollFd
		for _, pid := range pids {
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue
			}
			if inV1(pid, dir) {
				_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
				fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
			} else {
				_ = unix.Close(fd)
			}
		}
		// The pidfds become readable as the processes exit.
		for len(fds) > 0 {
			if _, err := unix.Poll(fds, int(goneTimeout.Milliseconds())); err != nil && err != unix.EINTR {
				break
			}
			live := fds[:0]
			for _, f := range fds {
				if f.Revents != 0 {
					_ = unix.Close(int(f.Fd))
				} else {
					live = append(live, f)
				}
			}
			if len(live) == len(fds) {
				break // timed out
			}
			fds = live
		}
		for _, f := range fds {
			_ = unix.Close(int(f.Fd))
		}
	}
}

// inParent reports whether process pid runs in the parent (its main
// thread does), or whether that cannot be told.
func (h *pidsV1) inParent(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	path, err := pidsV1Path(string(b))
	if err != nil {
		return true
	}
	dir, err := h.dir(path)
	return err != nil || dir == h.parent
}

// inV1 reports whether process pid's v1 pids cgroup directory ends in the
// name of dir (its cgroup file shows paths, not directories).
func inV1(pid int, dir string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	path, err := pidsV1Path(string(b))
	return err == nil && filepath.Base(path) == filepath.Base(dir)
}
