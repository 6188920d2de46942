package console

import (
	"fmt"
	"io/fs"
	"os"
	"testing"
	"testing/fstest"
)

// proc builds a fake /proc: each process is pid -> {ppid, comm, exe}.
type fakeProc struct {
	ppid      int
	comm, exe string
}

func procFS(procs map[int]fakeProc) fstest.MapFS {
	m := fstest.MapFS{}
	for pid, p := range procs {
		dir := fmt.Sprint(pid)
		m[dir+"/stat"] = &fstest.MapFile{Data: fmt.Appendf(nil, "%d (%s) S %d %d 0 0", pid, p.comm, p.ppid, p.ppid)}
		m[dir+"/comm"] = &fstest.MapFile{Data: []byte(p.comm + "\n")}
		if p.exe != "" {
			m[dir+"/exe"] = &fstest.MapFile{Data: []byte(p.exe), Mode: fs.ModeSymlink}
		}
	}
	return m
}

func noEnv(string) string { return "" }

func TestDetectMultiplexer(t *testing.T) {
	tests := []struct {
		name  string
		procs map[int]fakeProc
		env   map[string]string
		want  string
	}{
		{"tmux server two levels up", map[int]fakeProc{
			100: {50, "agent-sudo", "/usr/bin/agent-sudo"},
			50:  {10, "bash", "/usr/bin/bash"},
			10:  {1, "tmux: server", "/usr/bin/tmux"},
			1:   {0, "systemd", "/usr/lib/systemd/systemd"},
		}, nil, "tmux"},
		{"tmux found by exe alone", map[int]fakeProc{
			100: {50, "agent-sudo", ""},
			50:  {1, "renamed", "/opt/tmux-3.4/bin/tmux"},
		}, nil, "tmux"},
		{"screen server", map[int]fakeProc{
			100: {60, "sudo", "/usr/bin/sudo"},
			60:  {40, "bash", "/usr/bin/bash"},
			40:  {1, "SCREEN", "/usr/bin/screen"},
		}, nil, "screen"},
		{"screen client name", map[int]fakeProc{
			100: {40, "agent-sudo", ""},
			40:  {1, "screen", ""},
		}, nil, "screen"},
		{"deleted executable", map[int]fakeProc{
			100: {40, "x", "/usr/bin/tmux (deleted)"},
		}, nil, "tmux"},
		{"comm with parentheses and spaces", map[int]fakeProc{
			100: {77, "evil) S 1 (x", ""},
			77:  {1, "tmux: server", ""},
		}, nil, "tmux"},
		{"no multiplexer", map[int]fakeProc{
			100: {50, "agent-sudo", "/usr/bin/agent-sudo"},
			50:  {40, "bash", "/usr/bin/bash"},
			40:  {30, "sshd", "/usr/sbin/sshd"},
			30:  {1, "sshd", "/usr/sbin/sshd"},
			1:   {0, "systemd", ""},
		}, nil, ""},
		{"a name that merely contains tmux", map[int]fakeProc{
			100: {50, "tmuxinator-helper", "/usr/bin/notmux"},
			50:  {1, "myscreen", ""},
		}, nil, ""},
		{"cycle", map[int]fakeProc{
			100: {50, "a", ""},
			50:  {100, "b", ""},
		}, nil, ""},
		{"unreadable proc falls back to TMUX", nil, map[string]string{"TMUX": "/tmp/tmux-0/default,1,0"}, "tmux"},
		{"STY", nil, map[string]string{"STY": "1234.pts-0.host"}, "screen"},
		{"TERM says tmux (ssh from inside tmux)", nil, map[string]string{"TERM": "tmux-256color"}, "tmux"},
		{"TERM says screen", nil, map[string]string{"TERM": "screen.xterm-256color"}, "screen"},
		{"plain xterm", nil, map[string]string{"TERM": "xterm-256color"}, ""},
		// The variables can be unset by anyone; the ancestry still tells.
		{"unset variables do not hide tmux", map[int]fakeProc{
			100: {10, "agent-sudo", ""},
			10:  {1, "tmux: server", ""},
		}, map[string]string{"TERM": "xterm"}, "tmux"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			if got := DetectMultiplexer(procFS(tt.procs), 100, getenv); got != tt.want {
				t.Errorf("DetectMultiplexer = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDetectMultiplexerOddInputs(t *testing.T) {
	for name, fsys := range map[string]fs.FS{
		"nil":      nil,
		"empty":    fstest.MapFS{},
		"bad stat": fstest.MapFS{"100/stat": {Data: []byte("100 no parens")}, "100/comm": {Data: []byte("x")}},
		"short":    fstest.MapFS{"100/stat": {Data: []byte("100 (x) S")}},
		"negative": fstest.MapFS{"100/stat": {Data: []byte("100 (x) S -5")}},
	} {
		if got := DetectMultiplexer(fsys, 100, noEnv); got != "" {
			t.Errorf("%s: DetectMultiplexer = %q, want none", name, got)
		}
	}
	if got := DetectMultiplexer(nil, 100, nil); got != "" {
		t.Errorf("nil getenv: %q", got)
	}
}

// TestDetectMultiplexerRealProc runs against this machine's /proc: the
// test process's own ancestry must agree with whether TMUX is set, which
// holds when the tests run from a shell (in or out of tmux).
func TestDetectMultiplexerRealProc(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	got := DetectMultiplexer(os.DirFS("/proc"), os.Getpid(), noEnv)
	if os.Getenv("TMUX") != "" && got != "tmux" {
		t.Errorf("inside tmux (TMUX=%q), ancestry says %q", os.Getenv("TMUX"), got)
	}
	t.Logf("this test runs under %q", got)
}
