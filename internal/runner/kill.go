package runner

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// goneTimeout bounds how long Run waits, after reaping the stages, for the
// processes it killed in their groups to be gone. SIGKILL cannot be caught,
// so this only waits for the kernel to finish them (and for their new parent
// to reap them).
const goneTimeout = 2 * time.Second

// endCgroup kills whatever is still in the pipeline's cgroup, waits for it
// to be empty and removes it. Every stage is reaped by then.
func (p *pipeline) endCgroup() error {
	g := p.cg
	if g == nil {
		return nil
	}
	p.cg = nil
	var errs []error
	if err := g.kill(); err != nil {
		errs = append(errs, err)
	}
	if !g.waitEmpty(goneTimeout) {
		errs = append(errs, fmt.Errorf("cgroup: %s still has processes %s after SIGKILL", g.dir, goneTimeout))
	}
	if err := g.remove(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// signal sends sig to every process group of the pipeline.
func (p *pipeline) signal(sig syscall.Signal) {
	for _, pgid := range p.pgids {
		// ESRCH only means the group is already gone.
		_ = syscall.Kill(-pgid, sig)
	}
}

// awaitGroupsGone waits, at most goneTimeout, until no live process is left
// in the pipeline's process groups, so that when Run returns nothing it
// started still runs, holds files or holds locks. Zombies do not count: they
// have released everything, and reaping them is their new parent's business.
func (p *pipeline) awaitGroupsGone() {
	if p.cg != nil {
		return // endCgroup waits for the whole cgroup, which holds the groups
	}
	deadline := time.Now().Add(goneTimeout)
	for _, pgid := range p.pgids {
		awaitGroupGone(pgid, deadline)
	}
}

// awaitGroupGone waits until process group pgid has no live member, or
// until deadline. The kernel says when: the members still alive are found
// once in /proc, each is opened as a pidfd, which becomes readable when the
// process exits, and the pidfds are polled together; then the group is
// looked at again, in case a member was missed. Only where pidfds are not
// available (Linux before 5.3) is the group looked at every 5 ms instead.
// It is only called once the stages are reaped and the group was sent
// SIGKILL, so what it waits for is the kernel finishing the members.
func awaitGroupGone(pgid int, deadline time.Time) {
	for {
		if syscall.Kill(-pgid, 0) == syscall.ESRCH {
			return // the common case: nothing was left behind
		}
		members := liveInGroup(pgid)
		if len(members) == 0 || !time.Now().Before(deadline) {
			return
		}
		if !awaitExits(pgid, members, deadline) {
			time.Sleep(5 * time.Millisecond) // no pidfds: look again
		}
	}
}

// awaitExits waits until each of pids, members of process group pgid, has
// exited, or until deadline. It reports false when pidfds are not available.
func awaitExits(pgid int, pids []int, deadline time.Time) bool {
	var fds []unix.PollFd
	defer func() {
		for _, f := range fds {
			_ = unix.Close(int(f.Fd))
		}
	}()
	want := strconv.Itoa(pgid)
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if errors.Is(err, unix.ENOSYS) {
			return false
		}
		if err != nil {
			continue // gone meanwhile (ESRCH)
		}
		// The pidfd pins the pid: if the process is still a live member
		// now, the pidfd is that member, not a process that reused its pid.
		if state, pgrp := statStatePgrp(pid); pgrp != want || state == "Z" || state == "X" {
			_ = unix.Close(fd)
			continue
		}
		fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
	}
	for len(fds) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			return true
		}
		n, err := unix.Poll(fds, int(left/time.Millisecond)+1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return true
		}
		if n <= 0 {
			continue
		}
		live := fds[:0]
		for _, f := range fds {
			if f.Revents != 0 {
				_ = unix.Close(int(f.Fd))
				continue
			}
			live = append(live, f)
		}
		fds = live
	}
	return true
}

// statStatePgrp returns the state and process group fields of
// /proc/PID/stat, or empty strings when it cannot be read.
func statStatePgrp(pid int) (state, pgrp string) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", ""
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", ""
	}
	f := strings.Fields(string(b[i+1:])) // state ppid pgrp ...
	if len(f) < 3 {
		return "", ""
	}
	return f[0], f[2]
}

// liveInGroup returns the members of process group pgid that are not
// zombies. It is only called once the stages are reaped, so the group id
// could in theory have been reused; it therefore only observes, with /proc,
// and never signals.
func liveInGroup(pgid int) []int {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil // cannot tell; do not wait
	}
	names, err := dir.Readdirnames(-1)
	_ = dir.Close()
	if err != nil {
		return nil
	}
	want := strconv.Itoa(pgid)
	var pids []int
	for _, name := range names {
		if name[0] < '0' || name[0] > '9' {
			continue
		}
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if state, pgrp := statStatePgrp(pid); pgrp == want && state != "Z" && state != "X" {
			pids = append(pids, pid)
		}
	}
	return pids
}
