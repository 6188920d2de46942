package console

import (
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// maxAncestry bounds the walk up the process tree; real trees are a few
// dozen deep at most, and the bound also stops a cycle in a fake /proc.
const maxAncestry = 128

// DetectMultiplexer reports which terminal multiplexer, if any, the process
// pid runs under: "tmux" or "screen", or "" when none was found. proc is the
// proc file system (os.DirFS("/proc") for the real one); getenv reads the
// environment (os.Getenv).
//
// It walks pid's ancestors through the ppid field of /proc/PID/stat and
// matches each one's name (/proc/PID/comm, where the tmux server is called
// "tmux: server" and screen's "SCREEN") and executable (/proc/PID/exe). The
// TMUX and STY variables, and a TERM of screen* or tmux*, count too: they
// reveal a multiplexer on another machine (ssh from inside tmux), which the
// local ancestry cannot show. Errors reading /proc end the walk; they do not
// hide what the environment says.
func DetectMultiplexer(proc fs.FS, pid int, getenv func(string) string) string {
	if proc != nil {
		seen := make(map[int]bool)
		for i := 0; pid > 0 && i < maxAncestry && !seen[pid]; i++ {
			seen[pid] = true
			dir := strconv.Itoa(pid)
			if comm, err := fs.ReadFile(proc, dir+"/comm"); err == nil {
				if m := multiplexerName(strings.TrimSuffix(string(comm), "\n")); m != "" {
					return m
				}
			}
			if exe, err := fs.ReadLink(proc, dir+"/exe"); err == nil {
				if m := multiplexerName(path.Base(strings.TrimSuffix(exe, " (deleted)"))); m != "" {
					return m
				}
			}
			pid = parentPID(proc, dir)
		}
	}
	if getenv == nil {
		return ""
	}
	term := getenv("TERM")
	switch {
	case getenv("TMUX") != "" || strings.HasPrefix(term, "tmux"):
		return "tmux"
	case getenv("STY") != "" || strings.HasPrefix(term, "screen"):
		return "screen"
	}
	return ""
}

// multiplexerName maps a process or executable name to "tmux", "screen" or
// "".
func multiplexerName(name string) string {
	switch {
	case name == "tmux" || strings.HasPrefix(name, "tmux:") || strings.HasPrefix(name, "tmux "):
		return "tmux"
	case name == "screen" || name == "SCREEN":
		return "screen"
	}
	return ""
}

// parentPID returns the ppid field of /proc/dir/stat, or 0 when it cannot
// be read. The second field, the command name in parentheses, may itself
// contain spaces and parentheses, so the fields are counted from the last
// ')'.
func parentPID(proc fs.FS, dir string) int {
	stat, err := fs.ReadFile(proc, dir+"/stat")
	if err != nil {
		return 0
	}
	s := string(stat)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0
	}
	f := strings.Fields(s[end+1:]) // state ppid ...
	if len(f) < 2 {
		return 0
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil || ppid < 0 {
		return 0
	}
	return ppid
}
