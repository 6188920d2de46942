// Package spawn starts every process of the daemon that is not an approved
// request's stage (those are package runner's), under one of two policies.
// [Run]'s is for helpers, today the notifiers, and whatever helper is added
// later: no such child can reach what the daemon holds, above all the
// terminal of agent-sudod --tty's console or of the root shell that
// started the daemon. Why each point is needed is written in
// docs/security.md, "Notifiers". [RunOnTerminal]'s is for the one child
// whose job is that terminal, the console of agent-sudod --tty
// ([TerminalCmd] says what it gets; docs/security.md, "Approving at a
// console").
//
// A child started by [Run]:
//
//   - is the leader of a new session (setsid): it has no controlling
//     terminal, and cannot get the daemon's back (a terminal that is
//     already a session's controlling terminal cannot become another's);
//     the session's id is its process group's, which is killed as a
//     whole;
//   - has exactly descriptors 0, 1 and 2: stdin from /dev/null, stdout
//     and stderr a pipe to the daemon (never a file of the daemon's, even
//     if the caller hands one over). Every other descriptor of the daemon
//     is marked close-on-exec first ([MarkCloseOnExec]), for those a
//     library opened without it;
//   - runs as the caller's user, never root, with the groups it is given
//     (none if none);
//   - has "/" as working directory and HOME=/ (a directory only root can
//     write, so no dotfile there can steer the program), and otherwise
//     exactly the environment its caller built, from nothing;
//   - is killed (SIGKILL, with its whole process group) when ctx ends and
//     when the daemon dies.
package spawn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Cmd is one process to start under the policy.
type Cmd struct {
	// Path is the program's absolute path.
	Path string
	// Args is its argument vector, Args[0] included.
	Args []string
	// UID, GID and Groups are the user it runs as; UID 0 is refused.
	UID, GID uint32
	Groups   []uint32
	// Env is its environment, built by the caller from nothing. It may not
	// set HOME (the policy does) nor PWD.
	Env []string
	// Output receives what it writes on stdout and stderr, through a pipe;
	// nil discards it.
	Output io.Writer
	// WaitDelay is how long the pipe stays open after the process exited
	// or was killed, for a process that left its group holding it.
	WaitDelay time.Duration
}

// Home is the working directory and HOME of every child.
const Home = "/"

// Run starts c under the policy, waits for it to end and returns
// exec.Cmd.Run's error (an *exec.ExitError for an exit status). When ctx
// ends first, the child's process group is killed with SIGKILL; when the
// child exits, whatever it left in its group (a "cmd &" of a script) is
// killed too. A Cmd the policy refuses (a relative path, no arguments, uid
// or a group 0, HOME in Env) is not started, and the error says why.
func Run(ctx context.Context, c Cmd) error {
	cmd, err := command(ctx, c)
	if err != nil {
		return err
	}
	MarkCloseOnExec()
	if err := cmd.Start(); err != nil {
		return err
	}
	// The leader is left unreaped until its group has been killed, so that
	// the group id cannot have been reused by then.
	pid := cmd.Process.Pid
	WaitExitNoReap(pid)
	_ = syscall.Kill(-pid, syscall.SIGKILL) // ESRCH: nothing was left
	return cmd.Wait()
}

// WaitExitNoReap blocks until the child pid has exited, leaving it a
// zombie, so that its pid and process group id stay reserved until the
// caller reaps it.
func WaitExitNoReap(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			// nil, or ECHILD if the child is somehow gone already; either
			// way there is nothing left to wait for.
			return
		}
	}
}

// command builds the exec.Cmd of c, or says why the policy refuses it.
func command(ctx context.Context, c Cmd) (*exec.Cmd, error) {
	switch {
	case !strings.HasPrefix(c.Path, "/"):
		return nil, fmt.Errorf("spawn: program %q is not an absolute path", c.Path)
	case len(c.Args) == 0:
		return nil, fmt.Errorf("spawn: %s: no argument vector (argv[0] is missing)", c.Path)
	case c.UID == 0:
		return nil, fmt.Errorf("spawn: %s: refusing to run a helper as root", c.Path)
	case c.GID == 0 || slices.Contains(c.Groups, 0):
		return nil, fmt.Errorf("spawn: %s: refusing to run a helper with root's group (gid 0)", c.Path)
	}
	for i, kv := range c.Env {
		if strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "PWD=") {
			return nil, fmt.Errorf("spawn: %s: Env[%d] sets %s, which the policy sets", c.Path, i, kv[:strings.IndexByte(kv, '=')])
		}
	}
	cmd := exec.CommandContext(ctx, c.Path)
	cmd.Args = slices.Clone(c.Args)
	// Non-nil: a nil Env would inherit the daemon's.
	cmd.Env = append([]string{"HOME=" + Home}, c.Env...)
	cmd.Dir = Home
	// Stdin nil is /dev/null. Wrapping Output hides any *os.File behind
	// it, so that exec always makes a pipe and never passes on a
	// descriptor of the daemon.
	var out io.Writer = io.Discard
	if c.Output != nil {
		out = writerOnly{c.Output}
	}
	cmd.Stdout, cmd.Stderr = out, out
	groups := slices.Clone(c.Groups)
	if groups == nil {
		groups = []uint32{} // setgroups(0): none of root's groups
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setsid:     true,
		Pdeathsig:  syscall.SIGKILL,
		Credential: &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: groups},
	}
	// The session leader's pid is its process group's id: the whole group
	// is killed, not only the program (a curl started by a script must not
	// outlive it).
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	cmd.WaitDelay = c.WaitDelay
	return cmd, nil
}

// writerOnly is an io.Writer and nothing else (not an *os.File).
type writerOnly struct{ w io.Writer }

func (w writerOnly) Write(p []byte) (int, error) { return w.w.Write(p) }

// CloseInherited closes every descriptor of this process from 3 up that
// is not marked close-on-exec. Called at a process's start, before it
// opened anything without going through Go (whose descriptors all have
// the flag), those are the descriptors it inherited from whoever started
// it, which it does not use: a process that will face the network, or
// drop to another user, must not keep them. It returns the first error
// other than a descriptor already closed.
func CloseInherited() error {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("close the inherited descriptors: %w", err)
	}
	names, err := d.Readdirnames(-1)
	_ = d.Close()
	if err != nil {
		return fmt.Errorf("close the inherited descriptors: %w", err)
	}
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd < 3 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue // closed since the listing (the listing's own), or ours
		}
		if err := unix.Close(fd); err != nil && err != unix.EBADF {
			return fmt.Errorf("close inherited descriptor %d: %w", fd, err)
		}
	}
	return nil
}

// MarkCloseOnExec sets close-on-exec on every descriptor of the process
// from 3 up. Go's own descriptors already have it; this catches those a
// library created without it (an epoll descriptor of a terminal reader,
// say) and those the process inherited (a socket from systemd). A
// descriptor handed to a child in os.ProcAttr.Files is still passed: the
// child dup2s it into place, which clears the flag.
func MarkCloseOnExec() {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return
	}
	// Kernels before 5.11: one descriptor at a time.
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	_ = d.Close()
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd > 2 {
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
}
