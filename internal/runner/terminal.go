package runner

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/internal/sysfile"
)

// hasControllingTerminal reports whether the daemon has a controlling
// terminal: whether /dev/tty opens (ENXIO means it has none), else from the
// tty_nr field of /proc/self/stat. When in doubt it says yes, which selects
// the layout that is safe either way. It runs for every pipeline, and the
// kernel builds /proc/self/stat from every thread of the daemon, so the
// open, one system call when there is no terminal, comes first.
func hasControllingTerminal() bool {
	fd, err := unix.Open("/dev/tty", unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case err == nil:
		_ = unix.Close(fd)
		return true
	case err == unix.ENXIO:
		return false
	}
	b, err := sysfile.ReadFile("/proc/self/stat")
	if err != nil {
		return true
	}
	// The command name, field 2, is in parentheses and may contain spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return true
	}
	f := strings.Fields(string(b[i+1:]))
	// state ppid pgrp session tty_nr
	if len(f) < 5 {
		return true
	}
	return f[4] != "0"
}
