package web

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// DefaultUser is the user the web approver and the enrolment page run as
// once they drop root (--user): a user of their own, created by the
// package (packaging/sysusers.d/agent-sudo.conf), so that no other
// program's process shares their uid and could signal, trace or prlimit
// them (as nobody's many users could).
const DefaultUser = "agent-sudo-web"

// DetachTerminal gives up the process's controlling terminal (TIOCNOTTY)
// and points its standard input at /dev/null, so that a compromised web
// approver cannot type into the terminal it was started from (TIOCSTI
// needs the terminal to be the caller's controlling one) nor read what is
// typed there. SIGHUP is ignored from then on: giving up the terminal of a
// session leader (as under sudo's use_pty) hangs up its process group. The
// standard output and error stay where they were, for the log; what is
// written there is escaped (visible). A process without a controlling
// terminal is left as it is.
func DetachTerminal() error {
	devnull, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("detach from the terminal: %w", err)
	}
	defer unix.Close(devnull)
	if err := unix.Dup3(devnull, 0, 0); err != nil {
		return fmt.Errorf("detach from the terminal: standard input: %w", err)
	}
	tty, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENXIO) {
		return nil // no controlling terminal
	}
	if err != nil {
		return fmt.Errorf("detach from the terminal: %w", err)
	}
	defer unix.Close(tty)
	signal.Ignore(syscall.SIGHUP)
	if err := unix.IoctlSetInt(tty, unix.TIOCNOTTY, 0); err != nil {
		return fmt.Errorf("detach from the terminal: TIOCNOTTY: %w", err)
	}
	return nil
}

// DropPrivileges detaches the process from its terminal (DetachTerminal)
// and makes it uid:gid with no supplementary groups,
// for good (real, effective and saved ids), and sets no_new_privs so that
// nothing it runs can regain privilege. The web approver calls it after it
// has opened its channel, its listener and its certificate, before it
// serves a page: a compromised web approver then holds only its
// signed-only channel. It fails unless every id reads back as asked.
func DropPrivileges(uid, gid uint32) error {
	if err := DetachTerminal(); err != nil {
		return fmt.Errorf("drop privileges: %w", err)
	}
	// On every thread: the runtime's threads share no credentials in the
	// kernel's eyes. syscall's set*id and setgroups do that themselves.
	if _, _, errno := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); errno != 0 && errno != syscall.ENOTSUP {
		return fmt.Errorf("drop privileges: no_new_privs: %w", errno)
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("drop privileges: setgroups: %w", err)
	}
	if err := syscall.Setresgid(int(gid), int(gid), int(gid)); err != nil {
		return fmt.Errorf("drop privileges: setresgid: %w", err)
	}
	if err := syscall.Setresuid(int(uid), int(uid), int(uid)); err != nil {
		return fmt.Errorf("drop privileges: setresuid: %w", err)
	}
	r, e, s := unix.Getresuid()
	rg, eg, sg := unix.Getresgid()
	if uint32(r) != uid || uint32(e) != uid || uint32(s) != uid || uint32(rg) != gid || uint32(eg) != gid || uint32(sg) != gid {
		return fmt.Errorf("drop privileges: ids are %d/%d/%d:%d/%d/%d, not %d:%d", r, e, s, rg, eg, sg, uid, gid)
	}
	// Not dumpable: a process of the same uid (an agent's command run as
	// nobody) can neither ptrace it nor read its memory through /proc.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("drop privileges: dumpable: %w", err)
	}
	if err := syscall.Setuid(0); err == nil && uid != 0 {
		return fmt.Errorf("drop privileges: could become root again")
	}
	return nil
}

// ArmParentDeath asks the kernel to kill this process (SIGKILL) when its
// parent dies, then checks that the parent is still parent, the process
// whose id was read at start: a change of uid (DropPrivileges) clears
// that request, so a process started with Pdeathsig arms it again after
// the drop, and the parent may have died before that. It returns an
// error, and the caller exits, when the parent is gone.
func ArmParentDeath(parent int) error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("parent death signal: %w", err)
	}
	if p := os.Getppid(); p != parent {
		return fmt.Errorf("the parent process %d is gone (the parent is now %d)", parent, p)
	}
	return nil
}
