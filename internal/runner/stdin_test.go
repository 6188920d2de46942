package runner

import (
	"bytes"
	"strings"
	"syscall"
	"testing"
)

// TestRunStdin checks that Spec.Stdin reaches the first stage in full and
// then ends, in both modes; and that a stage that does not read it, or reads
// only part of it, neither blocks the pipeline nor changes its exit status.
func TestRunStdin(t *testing.T) {
	requireRoot(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: far more than a pipe holds
	tests := []struct {
		name   string
		argv   [][]string
		stdin  []byte
		stdout string
	}{
		{"cat", [][]string{{"cat"}}, []byte("hello\n"), "hello\n"},
		{"binary", [][]string{{"od", "-An", "-c"}}, []byte{0, 0xff, '\n'}, "  \\0 377  \\n\n"},
		{"through a pipeline", [][]string{{"cat"}, {"tr", "a-z", "A-Z"}}, []byte("hi"), "HI"},
		{"empty is /dev/null", [][]string{{"wc", "-c"}}, nil, "0\n"},
		{"large", [][]string{{"wc", "-c"}}, big, "1048576\n"},
		{"not read", [][]string{{"true"}}, big, ""},
		{"partly read", [][]string{{"head", "-c", "3"}}, big, "012"},
	}
	for _, m := range allModes() {
		for _, tt := range tests {
			t.Run(string(m)+"/"+tt.name, func(t *testing.T) {
				requireSudo(t, m)
				var stages []Command
				for _, argv := range tt.argv {
					stages = append(stages, cmd(t, argv...))
				}
				spec := newSpec(t, m, "root", stages...)
				spec.Stdin = tt.stdin
				res := mustRun(t, spec)
				if got := strings.TrimLeft(string(res.Stdout.Copy()), " "); got != strings.TrimLeft(tt.stdout, " ") {
					t.Errorf("stdout %q, want %q%s", res.Stdout.Copy(), tt.stdout, stderrs(res))
				}
				for i, st := range res.Stages {
					if st.ExitCode != 0 {
						t.Errorf("stage %d exit %d%s", i, st.ExitCode, stderrs(res))
					}
				}
				if res.TimedOut {
					t.Error("timed out")
				}
			})
		}
	}
}

// TestRunStdinEscapedReader checks that a process which leaves the group
// holding the stdin pipe open without reading it does not keep Run (nor the
// goroutine feeding the pipe) alive after the stages have exited.
func TestRunStdinEscapedReader(t *testing.T) {
	requireRoot(t)
	spec := newSpec(t, ModeDirect, "root", cmd(t, "sh", "-c",
		`setsid sleep 30 >/dev/null 2>&1 & pid=$!; while [ "$(cut -d" " -f6 /proc/$pid/stat)" != $pid ]; do :; done; echo $pid`))
	spec.Stdin = bytes.Repeat([]byte("x"), 1<<20)
	res := mustRun(t, spec)
	_ = syscall.Kill(sleeperPID(t, res), syscall.SIGKILL) // it escaped on purpose; clean up
	if res.Stages[0].ExitCode != 0 {
		t.Errorf("exit %d%s", res.Stages[0].ExitCode, stderrs(res))
	}
}
