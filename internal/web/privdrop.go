package web

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// DropPrivileges makes the process uid:gid with no supplementary groups,
// for good (real, effective and saved ids), and sets no_new_privs so that
// nothing it runs can regain privilege. The web approver calls it after it
// has opened its channel, its listener and its certificate, before it
// serves a page: a compromised web approver then holds only its
// signed-only channel. It fails unless every id reads back as asked.
func DropPrivileges(uid, gid uint32) error {
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
