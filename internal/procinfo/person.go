package procinfo

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// maxEnviron bounds how much of /proc/PID/environ is searched for SUDO_*.
const maxEnviron = 256 << 10

// unsetLoginUID is /proc/PID/loginuid of a process no login set it for.
const unsetLoginUID = 1<<32 - 1

// Person is who is behind a process (a console), as far as /proc says.
type Person struct {
	// LoginUID is /proc/PID/loginuid: the uid that logged in on the session
	// the process descends from, set once by the login service (pam_loginuid)
	// and kept across su and sudo. Nil when unset or unreadable.
	LoginUID *uint32 `json:"login_uid,omitempty"`
	// TTY is the target of /proc/PID/fd/0 and TTYOwner the owner of that
	// file when it is a terminal (a terminal is chowned to whoever logged
	// in on it).
	TTY      string  `json:"tty,omitempty"`
	TTYOwner *uint32 `json:"tty_owner,omitempty"`
	// SudoUser and SudoUID are the process's SUDO_USER and SUDO_UID
	// environment variables: what sudo sets when it starts a program, but
	// also whatever its starter put there. They are claims, not kernel
	// facts, shown as such.
	SudoUser string `json:"sudo_user,omitempty"`
	SudoUID  string `json:"sudo_uid,omitempty"`
}

// Person reads who is behind pid. Whatever cannot be read is left empty.
func (p Proc) Person(pid int32) Person {
	var who Person
	if b, _, err := readBounded(p.path(pid, "loginuid")); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32); err == nil && n != unsetLoginUID {
			u := uint32(n)
			who.LoginUID = &u
		}
	}
	fd0 := p.path(pid, "fd/0")
	if t, err := os.Readlink(fd0); err == nil {
		who.TTY = t
		if fi, err := os.Stat(fd0); err == nil && fi.Mode()&os.ModeCharDevice != 0 && isTerminal(t) {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				o := st.Uid
				who.TTYOwner = &o
			}
		}
	}
	if f, err := os.Open(p.path(pid, "environ")); err == nil {
		b, _ := io.ReadAll(io.LimitReader(f, maxEnviron))
		_ = f.Close()
		who.SudoUser, who.SudoUID = sudoVars(b)
	}
	return who
}

// sudoVars finds SUDO_USER and SUDO_UID in an environ block (NUL-separated
// NAME=value), each value cut to MaxArg bytes.
func sudoVars(b []byte) (user, uid string) {
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("SUDO_USER=")); ok {
			user = string(v[:min(len(v), MaxArg)])
		} else if v, ok := bytes.CutPrefix(kv, []byte("SUDO_UID=")); ok {
			uid = string(v[:min(len(v), MaxArg)])
		}
	}
	return user, uid
}

// isTerminal reports whether path names a terminal device: a
// pseudo-terminal, a virtual console or a serial line, not /dev/null.
func isTerminal(path string) bool {
	return strings.HasPrefix(path, "/dev/pts/") || strings.HasPrefix(path, "/dev/tty") || path == "/dev/console"
}
