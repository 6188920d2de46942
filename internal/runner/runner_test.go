package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
)

// The tests in this file start real processes. They do not run in parallel:
// several of them count the test process's children and file descriptors.

func TestRunIdentity(t *testing.T) {
	requireRoot(t)
	for _, m := range allModes() {
		for _, user := range []string{"root", "nobody"} {
			t.Run(string(m)+"/"+user, func(t *testing.T) {
				requireSudo(t, m)
				tg := target(t, user)
				res := mustRun(t, newSpec(t, m, user, cmd(t, "sh", "-c", "id -u; id -g; id -G")))
				lines := strings.Split(strings.TrimSpace(string(res.Stdout.Copy())), "\n")
				if len(lines) != 3 || res.Stages[0].ExitCode != 0 {
					t.Fatalf("output %q, exit %v%s", res.Stdout.Copy(), exitCodes(res), stderrs(res))
				}
				if want := strconv.FormatUint(uint64(tg.UID), 10); lines[0] != want {
					t.Errorf("uid %s, want %s", lines[0], want)
				}
				if want := strconv.FormatUint(uint64(tg.GID), 10); lines[1] != want {
					t.Errorf("gid %s, want %s", lines[1], want)
				}
				var want []string
				for _, g := range tg.Groups {
					want = append(want, strconv.FormatUint(uint64(g), 10))
				}
				got := strings.Fields(lines[2])
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("groups %v, want %v", got, want)
				}
			})
		}
	}
}

func TestRunPipeline(t *testing.T) {
	requireRoot(t)
	tests := []struct {
		name   string
		stages [][]string
		stdout string
	}{
		{"single", [][]string{{"echo", "hello"}}, "hello\n"},
		{"three stages count", [][]string{{"printf", "%s", "hello world"}, {"tr", "a-z", "A-Z"}, {"wc", "-c"}}, "11\n"},
		{"three stages bytes", [][]string{{"printf", "%s", "hello world"}, {"tr", "a-z", "A-Z"}, {"cat"}}, "HELLO WORLD"},
		{"argument with shell syntax stays one argument", [][]string{{"printf", "%s|", "a b", "$(id)", ";rm -rf /", "*"}}, "a b|$(id)|;rm -rf /|*|"},
		{"first stage reads /dev/null", [][]string{{"wc", "-c"}}, "0\n"},
	}
	for _, m := range allModes() {
		for _, tt := range tests {
			t.Run(string(m)+"/"+tt.name, func(t *testing.T) {
				requireSudo(t, m)
				var stages []Command
				for _, argv := range tt.stages {
					stages = append(stages, cmd(t, argv...))
				}
				res := mustRun(t, newSpec(t, m, "root", stages...))
				if string(res.Stdout.Copy()) != tt.stdout || res.StdoutTruncated {
					t.Errorf("stdout %q (truncated %v), want %q", res.Stdout.Copy(), res.StdoutTruncated, tt.stdout)
				}
				for i, s := range res.Stages {
					if s.ExitCode != 0 || s.Stderr.Len() != 0 {
						t.Errorf("stage %d: exit %d, stderr %q", i, s.ExitCode, s.Stderr.Copy())
					}
				}
				if res.TimedOut || res.Ended.Before(res.Started) {
					t.Errorf("TimedOut %v, Started %v, Ended %v", res.TimedOut, res.Started, res.Ended)
				}
			})
		}
	}
	checkNoLeftovers(t)
}

func TestRunExitCodes(t *testing.T) {
	requireRoot(t)
	tests := []struct {
		name   string
		stages [][]string
		codes  []int
		stdout string
	}{
		{"false", [][]string{{"false"}}, []int{1}, ""},
		{"exit status", [][]string{{"sh", "-c", "exit 7"}}, []int{7}, ""},
		{"SIGTERM is 143", [][]string{{"sh", "-c", "kill -TERM $$"}}, []int{143}, ""},
		{"SIGKILL is 137", [][]string{{"sh", "-c", "kill -KILL $$"}}, []int{137}, ""},
		{"last stage exits early, writer gets SIGPIPE", [][]string{{"yes"}, {"head", "-n", "1"}}, []int{141, 0}, "y\n"},
		{"middle stage exits early", [][]string{{"yes"}, {"true"}, {"cat"}}, []int{141, 0, 0}, ""},
		{"each stage its own status", [][]string{{"sh", "-c", "echo a; exit 3"}, {"sh", "-c", "cat; exit 4"}}, []int{3, 4}, "a\n"},
	}
	for _, m := range allModes() {
		for _, tt := range tests {
			t.Run(string(m)+"/"+tt.name, func(t *testing.T) {
				requireSudo(t, m)
				var stages []Command
				for _, argv := range tt.stages {
					stages = append(stages, cmd(t, argv...))
				}
				res := mustRun(t, newSpec(t, m, "root", stages...))
				want := tt.codes
				if m == ModeSudo && sudoKind(t) == SudoRS && want[0] == 141 {
					// sudo-rs ignores SIGPIPE itself, so re-raising it on
					// itself does nothing, and it exits 0 for a command
					// SIGPIPE killed (0.2.5; docs/execution.md).
					want = append([]int{0}, want[1:]...)
				}
				if got := exitCodes(res); !slices.Equal(got, want) {
					t.Errorf("exit codes %v, want %v%s", got, want, stderrs(res))
				}
				if string(res.Stdout.Copy()) != tt.stdout {
					t.Errorf("stdout %q, want %q", res.Stdout.Copy(), tt.stdout)
				}
			})
		}
	}
	checkNoLeftovers(t)
}

func TestRunStderrPerStage(t *testing.T) {
	requireRoot(t)
	for _, m := range allModes() {
		t.Run(string(m), func(t *testing.T) {
			requireSudo(t, m)
			res := mustRun(t, newSpec(t, m, "root",
				cmd(t, "sh", "-c", "echo one >&2; echo data"),
				cmd(t, "sh", "-c", "cat; echo two >&2"),
				cmd(t, "cat"),
			))
			want := []string{"one\n", "two\n", ""}
			for i, s := range res.Stages {
				if string(s.Stderr.Copy()) != want[i] || s.StderrTruncated {
					t.Errorf("stage %d stderr %q (truncated %v), want %q", i, s.Stderr.Copy(), s.StderrTruncated, want[i])
				}
			}
			if string(res.Stdout.Copy()) != "data\n" {
				t.Errorf("stdout %q", res.Stdout.Copy())
			}
		})
	}
}

func TestRunTruncation(t *testing.T) {
	requireRoot(t)
	const limit = 10
	tests := []struct {
		name      string
		stages    [][]string
		stdout    string
		stdoutCut bool
		stderr    []string // per stage
		stderrCut []bool
	}{
		{
			name:   "stdout exactly at the cap is not truncated",
			stages: [][]string{{"printf", "0123456789"}},
			stdout: "0123456789", stderr: []string{""}, stderrCut: []bool{false},
		},
		{
			name:   "stdout over the cap",
			stages: [][]string{{"printf", "0123456789A"}},
			stdout: "0123456789", stdoutCut: true, stderr: []string{""}, stderrCut: []bool{false},
		},
		{
			name:   "stderr over the cap",
			stages: [][]string{{"sh", "-c", "printf 0123456789AB >&2"}},
			stderr: []string{"0123456789"}, stderrCut: []bool{true},
		},
		{
			name:   "both floods, command still completes",
			stages: [][]string{{"sh", "-c", "head -c 300000 /dev/zero | tr '\\0' o; head -c 300000 /dev/zero | tr '\\0' e >&2; echo done >&2"}},
			stdout: "oooooooooo", stdoutCut: true, stderr: []string{"eeeeeeeeee"}, stderrCut: []bool{true},
		},
		{
			name:   "stderr flood before stdout",
			stages: [][]string{{"sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' e >&2; echo done"}},
			stdout: "done\n", stderr: []string{"eeeeeeeeee"}, stderrCut: []bool{true},
		},
		{
			name: "middle stage floods stderr",
			stages: [][]string{
				{"printf", "abc"},
				{"sh", "-c", "head -c 1000000 /dev/zero | tr '\\0' e >&2; cat"},
				{"cat"},
			},
			stdout: "abc", stderr: []string{"", "eeeeeeeeee", ""}, stderrCut: []bool{false, true, false},
		},
	}
	for _, m := range allModes() {
		for _, tt := range tests {
			t.Run(string(m)+"/"+tt.name, func(t *testing.T) {
				requireSudo(t, m)
				var stages []Command
				for _, argv := range tt.stages {
					stages = append(stages, cmd(t, argv...))
				}
				s := newSpec(t, m, "root", stages...)
				s.MaxOutput = limit
				res := mustRun(t, s)
				for i, code := range exitCodes(res) {
					if code != 0 {
						t.Errorf("stage %d exit %d, want 0 (the reader must keep draining)", i, code)
					}
				}
				if string(res.Stdout.Copy()) != tt.stdout || res.StdoutTruncated != tt.stdoutCut {
					t.Errorf("stdout %q truncated %v, want %q truncated %v", res.Stdout.Copy(), res.StdoutTruncated, tt.stdout, tt.stdoutCut)
				}
				if capOf(res.Stdout) > limit {
					t.Errorf("stdout buffer capacity %d exceeds the cap %d", capOf(res.Stdout), limit)
				}
				for i, st := range res.Stages {
					if string(st.Stderr.Copy()) != tt.stderr[i] || st.StderrTruncated != tt.stderrCut[i] {
						t.Errorf("stage %d stderr %q truncated %v, want %q truncated %v", i, st.Stderr.Copy(), st.StderrTruncated, tt.stderr[i], tt.stderrCut[i])
					}
					if capOf(st.Stderr) > limit {
						t.Errorf("stage %d stderr buffer capacity %d exceeds the cap %d", i, capOf(st.Stderr), limit)
					}
				}
			})
		}
	}
}

// TestRunProductionCap checks the real cap: 20,000,000 bytes of stdout with a
// 16 MiB cap must end in exit 0 (not SIGPIPE) and a truncated stdout.
func TestRunProductionCap(t *testing.T) {
	requireRoot(t)
	const total = 20_000_000
	for _, m := range allModes() {
		t.Run(string(m), func(t *testing.T) {
			requireSudo(t, m)
			s := newSpec(t, m, "root", cmd(t, "head", "-c", strconv.Itoa(total), "/dev/zero"))
			s.MaxOutput = proto.MaxOutputBytes
			res := mustRun(t, s)
			if res.Stages[0].ExitCode != 0 {
				t.Fatalf("exit %d, want 0%s", res.Stages[0].ExitCode, stderrs(res))
			}
			if res.Stdout.Len() != proto.MaxOutputBytes || !res.StdoutTruncated {
				t.Errorf("stdout %d bytes truncated %v, want %d truncated", res.Stdout.Len(), res.StdoutTruncated, proto.MaxOutputBytes)
			}
			if capOf(res.Stdout) > proto.MaxOutputBytes {
				t.Errorf("stdout buffer capacity %d exceeds the cap", capOf(res.Stdout))
			}
			if i := bytes.IndexFunc(res.Stdout.Copy(), func(r rune) bool { return r != 0 }); i >= 0 {
				t.Errorf("stdout byte %d is not zero", i)
			}
		})
	}
}

// sleeperPID parses the pid a test program printed on its first line.
func sleeperPID(t *testing.T, res *Result) int {
	t.Helper()
	line, _, _ := strings.Cut(string(res.Stdout.Copy()), "\n")
	pid, err := strconv.Atoi(line)
	if err != nil {
		t.Fatalf("no pid in stdout %q%s", res.Stdout.Copy(), stderrs(res))
	}
	return pid
}

// layouts are the two process layouts: one group, or a session per stage.
func layouts() []struct {
	name     string
	sessions bool
} {
	return []struct {
		name     string
		sessions bool
	}{{"group", false}, {"sessions", true}}
}

// uniqueSleep returns a sleep duration argument no other process uses, so
// that the test can find its sleeps in /proc.
func uniqueSleep(t *testing.T, n int) string {
	t.Helper()
	return strconv.Itoa(30000+os.Getpid()%10000) + "." + strconv.Itoa(n)
}

// cancelWhenRunning runs s in the background, cancels it as soon as a process
// with each marker among its arguments is alive, and returns the result and
// how long Run took after the cancellation. In sudo mode sudo's own process
// does not count: its argv holds the markers too, before its PAM checks are
// done and the command runs, and a signal then makes sudo fail (exit 1,
// "account validation failure") rather than the command die of it.
func cancelWhenRunning(t *testing.T, s Spec, sessions bool, markers ...string) (*Result, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		res *Result
		err error
		at  time.Time
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := run(ctx, s, sessions)
		done <- outcome{res, err, time.Now()}
	}()
	running := func(marker string) bool {
		for _, p := range withArg(t, marker) {
			_, cmdline, _ := strings.Cut(p, ": ")
			if s.Mode != ModeSudo || !strings.HasPrefix(cmdline, s.SudoPath+" ") {
				return true
			}
		}
		return false
	}
	for _, marker := range markers {
		for deadline := time.Now().Add(15 * time.Second); !running(marker); {
			if time.Now().After(deadline) {
				t.Fatalf("no process with argument %s started", marker)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	cancelled := time.Now()
	cancel()
	o := <-done
	if o.err != nil {
		t.Fatalf("run: %v", o.err)
	}
	return o.res, o.at.Sub(cancelled)
}

func TestRunTimeoutKillsGroup(t *testing.T) {
	requireRoot(t)
	const grace = 500 * time.Millisecond
	for _, m := range allModes() {
		for _, user := range []string{"root", "nobody"} {
			for _, l := range layouts() {
				t.Run(string(m)+"/"+user+"/"+l.name, func(t *testing.T) {
					requireSudo(t, m)
					if !l.sessions && hasControllingTerminal() {
						t.Skip("the group layout is not used when the daemon has a controlling terminal")
					}
					// The first stage and its background sleep ignore
					// SIGTERM, so only SIGKILL after the grace ends them.
					// The second stage's sh carries a marker as $0, so
					// that the test cancels only once both stages run.
					marker, marker2 := uniqueSleep(t, 1), uniqueSleep(t, 4)
					s := newSpec(t, m, user,
						cmd(t, "sh", "-c", `trap "" TERM; echo started >&2; sleep `+marker+` & wait`),
						cmd(t, "sh", "-c", "cat; true", marker2))
					s.KillGrace = grace
					res, took := cancelWhenRunning(t, s, l.sessions, marker, marker2)
					if !res.TimedOut {
						t.Errorf("TimedOut not set")
					}
					if took < grace || took > grace+3*time.Second {
						t.Errorf("returned %v after the cancellation, want about %v", took, grace)
					}
					// The second stage dies of SIGTERM. sudo then re-raises
					// it, unless, on a loaded machine, sudo is still
					// finishing up when the grace ends.
					got := exitCodes(res)
					stage1OK := got[1] == 143 || (m == ModeSudo && got[1] == 137)
					if got[0] != 137 || !stage1OK {
						t.Errorf("exit codes %v, want [137 143]%s", got, stderrs(res))
					}
					if got := string(res.Stages[0].Stderr.Copy()); got != "started\n" {
						t.Errorf("stage 0 stderr %q, want the output from before the kill", got)
					}
					if left := append(withArg(t, marker), withArg(t, marker2)...); len(left) > 0 {
						t.Errorf("processes survived the timeout: %v", left)
						for _, l := range left {
							pid, _, _ := strings.Cut(l, ":")
							n, _ := strconv.Atoi(pid)
							_ = syscall.Kill(n, syscall.SIGKILL)
						}
					}
					checkNoLeftovers(t)
				})
			}
		}
	}
}

// TestRunTimeoutTimer checks that Spec.Timeout itself triggers the kill.
func TestRunTimeoutTimer(t *testing.T) {
	requireRoot(t)
	const timeout, grace = time.Second, 300 * time.Millisecond
	for _, m := range allModes() {
		t.Run(string(m), func(t *testing.T) {
			requireSudo(t, m)
			marker := uniqueSleep(t, 2)
			s := newSpec(t, m, "root", cmd(t, "sh", "-c", `trap "" TERM; sleep `+marker))
			s.Timeout, s.KillGrace = timeout, grace
			start := time.Now()
			res := mustRun(t, s)
			if elapsed := time.Since(start); elapsed < timeout+grace || elapsed > timeout+grace+3*time.Second {
				t.Errorf("returned after %v, want about %v", elapsed, timeout+grace)
			}
			if !res.TimedOut || res.Stages[0].ExitCode != 137 {
				t.Errorf("TimedOut %v exit %d, want true 137%s", res.TimedOut, res.Stages[0].ExitCode, stderrs(res))
			}
			if left := withArg(t, marker); len(left) > 0 {
				t.Errorf("processes survived the timeout: %v", left)
			}
		})
	}
	checkNoLeftovers(t)
}

func TestRunTimeoutTermSuffices(t *testing.T) {
	requireRoot(t)
	for _, m := range allModes() {
		t.Run(string(m), func(t *testing.T) {
			requireSudo(t, m)
			s := newSpec(t, m, "root", cmd(t, "sleep", "30"))
			s.Timeout, s.KillGrace = 300*time.Millisecond, 20*time.Second
			res := mustRun(t, s)
			// 143 is SIGTERM's status: the grace was not waited out (SIGKILL
			// would give 137).
			if !res.TimedOut || res.Stages[0].ExitCode != 143 {
				t.Errorf("TimedOut %v exit %d, want true 143%s", res.TimedOut, res.Stages[0].ExitCode, stderrs(res))
			}
		})
	}
}

func TestRunContextCancel(t *testing.T) {
	requireRoot(t)
	s := newSpec(t, ModeDirect, "root", cmd(t, "sh", "-c", "echo started; exec sleep 30"))
	s.KillGrace = 20 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := Run(ctx, s)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	// 143, not 137: SIGTERM ended it, without waiting out the grace.
	if !res.TimedOut || res.Stages[0].ExitCode != 143 || string(res.Stdout.Copy()) != "started\n" {
		t.Errorf("TimedOut %v exit %d stdout %q, want true 143 \"started\\n\"", res.TimedOut, res.Stages[0].ExitCode, res.Stdout.Copy())
	}

	// A context that is already done starts nothing.
	if _, err := Run(ctx, s); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run with a done context: %v, want DeadlineExceeded", err)
	}
	checkNoLeftovers(t)
}

// TestRunKillsLeftovers checks that a background job still in the group when
// every stage has exited is killed, so that it cannot hold the output open
// until the timeout nor outlive the approval.
func TestRunKillsLeftovers(t *testing.T) {
	requireRoot(t)
	for _, m := range allModes() {
		t.Run(string(m), func(t *testing.T) {
			requireSudo(t, m)
			s := newSpec(t, m, "root", cmd(t, "sh", "-c", "sleep 30 & echo $!"))
			start := time.Now()
			res := mustRun(t, s)
			if elapsed := time.Since(start); elapsed > 5*time.Second || res.TimedOut {
				t.Errorf("returned after %v, TimedOut %v; want a prompt normal end", elapsed, res.TimedOut)
			}
			if res.Stages[0].ExitCode != 0 {
				t.Errorf("exit %d%s", res.Stages[0].ExitCode, stderrs(res))
			}
			if pid := sleeperPID(t, res); alive(pid, "sleep") {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("background sleep %d survived", pid)
			}
		})
	}
	checkNoLeftovers(t)
}

// TestRunEscapedWriter checks that a process that left the process group and
// keeps stdout open cannot make Run wait for it.
func TestRunEscapedWriter(t *testing.T) {
	requireRoot(t)
	// sh waits until the background sleep leads its own session (field 6 of
	// /proc/PID/stat), so that the escape has happened before sh exits.
	s := newSpec(t, ModeDirect, "root", cmd(t, "sh", "-c",
		`setsid sleep 30 & pid=$!; while [ "$(cut -d" " -f6 /proc/$pid/stat)" != $pid ]; do :; done; echo $pid`))
	start := time.Now()
	res := mustRun(t, s)
	elapsed := time.Since(start)
	pid := sleeperPID(t, res)
	_ = syscall.Kill(pid, syscall.SIGKILL) // it escaped on purpose; clean up
	if elapsed < drainTimeout || elapsed > drainTimeout+3*time.Second || res.TimedOut {
		t.Errorf("returned after %v, TimedOut %v; want about %v", elapsed, res.TimedOut, drainTimeout)
	}
	if res.Stages[0].ExitCode != 0 {
		t.Errorf("exit %d%s", res.Stages[0].ExitCode, stderrs(res))
	}
}

// TestRunNoTerminal checks the process layout from inside: a sudo command
// stays in the pipeline's process group and session and never gets a
// controlling terminal (sudo allocated no pty).
func TestRunNoTerminal(t *testing.T) {
	requireRoot(t)
	// sh prints its pid and its parent's; cat prints its own stat line.
	probe := []string{"sh", "-c", "echo $$ $PPID; exec cat /proc/self/stat"}
	for _, m := range allModes() {
		for _, l := range layouts() {
			t.Run(string(m)+"/"+l.name, func(t *testing.T) {
				requireSudo(t, m)
				if !l.sessions && hasControllingTerminal() {
					t.Skip("the group layout is not used when the daemon has a controlling terminal")
				}
				res, err := run(context.Background(), newSpec(t, m, "nobody", cmd(t, probe...)), l.sessions)
				if err != nil {
					t.Fatalf("run: %v", err)
				}
				checkLayout(t, res, m, l.sessions)
			})
		}
	}
}

// checkLayout checks the output of the probe in TestRunNoTerminal.
func checkLayout(t *testing.T, res *Result, m Mode, sessions bool) {
	t.Helper()
	first, stat, _ := strings.Cut(string(res.Stdout.Copy()), "\n")
	ids := strings.Fields(first)
	st, err := testenv.ParseProcStat([]byte(stat))
	if len(ids) != 2 || err != nil {
		t.Fatalf("unexpected output %q (%v)%s", res.Stdout.Copy(), err, stderrs(res))
	}
	f := st.Fields // state ppid pgrp session tty_nr
	// The stage process is sh in direct mode and sudo, sh's parent, in sudo
	// mode; it leads the process group.
	leader := ids[0]
	if m == ModeSudo {
		leader = ids[1]
	}
	if f[2] != leader {
		t.Errorf("command's process group %s, want the stage's pid %s", f[2], leader)
	}
	if sessions && f[3] != leader {
		t.Errorf("command's session %s, want the stage's pid %s", f[3], leader)
	}
	if f[4] != "0" {
		t.Errorf("command has controlling terminal %s; sudo must not allocate a pty", f[4])
	}
}

// TestRunUnderTerminal runs TestRunUnderTerminalChild under script(1), which
// gives it a controlling terminal, as when the daemon is started from a shell.
func TestRunUnderTerminal(t *testing.T) {
	requireRoot(t)
	if os.Getenv("RUNNER_TEST_TTY_CHILD") != "" {
		t.Skip("already the child")
	}
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) not available")
	}
	if strings.ContainsRune(os.Args[0], '\'') {
		t.Skip("test binary path contains a quote")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, script, "-qec",
		"'"+os.Args[0]+"' -test.run='^TestRunUnderTerminalChild$' -test.count=1 -test.v", os.DevNull)
	c.Env = append(os.Environ(), "RUNNER_TEST_TTY_CHILD=1")
	out, err := c.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestRunUnderTerminalChild")) {
		t.Fatalf("child under a terminal: %v\n%s", err, out)
	}
}

// TestRunUnderTerminalChild only runs under TestRunUnderTerminal.
func TestRunUnderTerminalChild(t *testing.T) {
	if os.Getenv("RUNNER_TEST_TTY_CHILD") == "" {
		t.Skip("runs only under TestRunUnderTerminal")
	}
	if !hasControllingTerminal() {
		t.Fatal("hasControllingTerminal() is false under script(1)")
	}
	requireSudo(t, ModeSudo)
	probe := []string{"sh", "-c", "echo $$ $PPID; exec cat /proc/self/stat"}
	res, err := Run(context.Background(), newSpec(t, ModeSudo, "nobody", cmd(t, probe...)))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkLayout(t, res, ModeSudo, true)

	marker := uniqueSleep(t, 3)
	s := newSpec(t, ModeSudo, "root", cmd(t, "sh", "-c", `trap "" TERM; sleep `+marker+` & wait`), cmd(t, "cat"))
	s.KillGrace = 300 * time.Millisecond
	res, _ = cancelWhenRunning(t, s, hasControllingTerminal(), marker)
	if left := withArg(t, marker); !res.TimedOut || len(left) > 0 {
		t.Errorf("TimedOut %v, survivors %v", res.TimedOut, left)
	}
	checkNoLeftovers(t)
}

func TestRunEnvironment(t *testing.T) {
	requireRoot(t)
	req := map[string]string{
		"LANG":      "C.UTF-8",
		"TZ":        "Europe/Paris",
		"MYAPP_NIL": "",
	}
	// The policy would refuse this value; the runner must still pass any
	// value it is given through unchanged, in both modes.
	const odd = "MYAPP_ODD=a b;$x 'q' \"d\"\nsecond line=still value"
	for _, m := range allModes() {
		for _, user := range []string{"root", "nobody"} {
			t.Run(string(m)+"/"+user, func(t *testing.T) {
				requireSudo(t, m)
				tg := target(t, user)
				env, err := mustPolicy(t, []string{"MYAPP_*"}).BuildEnv(tg, req, "/run/agent-sudo/agent.sock")
				if err != nil {
					t.Fatalf("BuildEnv: %v", err)
				}
				env = append(env, odd)
				slices.Sort(env)
				s := newSpec(t, m, user, cmd(t, "env", "-0"))
				s.Env = env
				res := mustRun(t, s)
				if res.Stages[0].ExitCode != 0 {
					t.Fatalf("exit %d%s", res.Stages[0].ExitCode, stderrs(res))
				}
				got := strings.Split(strings.TrimSuffix(string(res.Stdout.Copy()), "\x00"), "\x00")
				var extra []string
				for _, kv := range got {
					if !slices.Contains(env, kv) {
						extra = append(extra, kv)
					}
				}
				for _, kv := range env {
					if !slices.Contains(got, kv) {
						t.Errorf("%q did not reach the command", kv)
					}
				}
				// sudo adds its bookkeeping (SUDO_HOME since sudo 1.9.16, and
				// in sudo-rs after 0.2.5); nothing else may appear.
				var allowedExtra []string
				if m == ModeSudo {
					allowedExtra = []string{"SUDO_COMMAND", "SUDO_USER", "SUDO_UID", "SUDO_GID", "SUDO_HOME", "MAIL", "SHELL", "TERM"}
				}
				for _, kv := range extra {
					name, _, _ := strings.Cut(kv, "=")
					if !slices.Contains(allowedExtra, name) {
						t.Errorf("unexpected variable %q in the command's environment", kv)
					}
				}
			})
		}
	}
}

func TestRunDir(t *testing.T) {
	requireRoot(t)
	private := t.TempDir() // 0700, owned by root
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		mode    Mode
		user    string
		dir     string
		want    string
		wantErr bool
	}{
		{"direct default is /", ModeDirect, "root", "", "/\n", false},
		{"sudo default is /", ModeSudo, "nobody", "", "/\n", false},
		{"direct dir", ModeDirect, "root", private, private + "\n", false},
		{"sudo dir", ModeSudo, "root", private, private + "\n", false},
		// Direct mode enters the directory as the target user.
		{"direct dir the target cannot enter", ModeDirect, "nobody", private, "", true},
		// sudo inherits the directory and does not enter it again.
		{"sudo dir the target cannot enter", ModeSudo, "nobody", private, private + "\n", false},
		{"direct missing dir", ModeDirect, "root", filepath.Join(private, "missing"), "", true},
		{"sudo missing dir", ModeSudo, "root", filepath.Join(private, "missing"), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireSudo(t, tt.mode)
			s := newSpec(t, tt.mode, tt.user, cmd(t, "pwd"))
			s.Dir = tt.dir
			res, err := Run(context.Background(), s)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Run succeeded with stdout %q, want a start error", res.Stdout.Copy())
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if string(res.Stdout.Copy()) != tt.want {
				t.Errorf("pwd %q, want %q%s", res.Stdout.Copy(), tt.want, stderrs(res))
			}
		})
	}
	checkNoLeftovers(t)
}

func TestRunArgv0(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	link := filepath.Join(dir, "mycat")
	if err := os.Symlink("/usr/bin/cat", link); err != nil {
		t.Fatal(err)
	}
	realCat, err := filepath.EvalSymlinks("/usr/bin/cat")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		mode  Mode
		c     Command
		argv0 string
	}{
		{"direct keeps the agent's name", ModeDirect, Command{Path: realCat, Link: link, Args: []string{"mycat"}}, "mycat"},
		// The link lies under world-writable /tmp: sudo gets the real path.
		{"sudo untrusted link", ModeSudo, Command{Path: realCat, Link: link, Args: []string{"mycat"}}, realCat},
		{"sudo no link", ModeSudo, Command{Path: realCat, Args: []string{"cat"}}, realCat},
	}
	if r, err := Resolve("/bin/cat", testSecurePath); err == nil && r.Path != r.Link {
		// A merged-/usr system: /bin -> usr/bin is root's to change.
		tests = append(tests, struct {
			name  string
			mode  Mode
			c     Command
			argv0 string
		}{"sudo trusted link", ModeSudo, Command{Path: r.Path, Link: r.Link, Args: []string{"cat"}}, r.Link})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireSudo(t, tt.mode)
			c := tt.c
			c.Args = append(c.Args, "/proc/self/cmdline")
			res := mustRun(t, newSpec(t, tt.mode, "root", c))
			want := tt.argv0 + "\x00/proc/self/cmdline\x00"
			if string(res.Stdout.Copy()) != want {
				t.Errorf("cmdline %q, want %q%s", res.Stdout.Copy(), want, stderrs(res))
			}
		})
	}
}

func TestRunStartFailure(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A unique argument marks the sleeps this test starts.
	marker := strconv.Itoa(40000+os.Getpid()%10000) + ".25"
	sleeper := func() Command { return cmd(t, "sleep", marker) }
	bad := Command{Path: notExec, Args: []string{"not-executable"}}
	missing := Command{Path: filepath.Join(dir, "missing"), Args: []string{"missing"}}
	tests := []struct {
		name   string
		mode   Mode
		stages []Command
		sudo   string
		stage  string // the error must name the failing stage (or sudo_path)
	}{
		{"second of two not executable", ModeDirect, []Command{sleeper(), bad}, testSudo, "stage 1"},
		{"third of three missing", ModeDirect, []Command{sleeper(), sleeper(), missing}, testSudo, "stage 2"},
		{"first missing", ModeDirect, []Command{missing, sleeper()}, testSudo, "stage 0"},
		{"sudo missing", ModeSudo, []Command{sleeper(), sleeper()}, filepath.Join(dir, "sudo"), "sudo_path " + filepath.Join(dir, "sudo")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSpec(t, tt.mode, "root", tt.stages...)
			setSudo(&s, tt.sudo)
			res, err := Run(context.Background(), s)
			if err == nil {
				t.Fatalf("Run succeeded (%+v), want an error", res)
			}
			if res != nil {
				t.Errorf("Run returned a result with its error")
			}
			if !strings.Contains(err.Error(), tt.stage) {
				t.Errorf("error %q does not name %s", err, tt.stage)
			}
			if left := withArg(t, marker); len(left) > 0 {
				t.Errorf("started stages survived: %v", left)
			}
			checkNoLeftovers(t)
		})
	}

	// In sudo mode sudo itself starts; its refusal is the stage's failure.
	t.Run("sudo program not executable", func(t *testing.T) {
		requireSudo(t, ModeSudo)
		res := mustRun(t, newSpec(t, ModeSudo, "root", bad))
		if res.Stages[0].ExitCode != 1 || res.Stages[0].Stderr.Len() == 0 {
			t.Errorf("exit %d stderr %q, want sudo's exit 1 and message", res.Stages[0].ExitCode, res.Stages[0].Stderr.Copy())
		}
	})
}

// TestRunNoFDLeak runs every kind of pipeline and checks that the test
// process has as many file descriptors afterwards as before.
func TestRunNoFDLeak(t *testing.T) {
	requireRoot(t)
	notExec := filepath.Join(t.TempDir(), "not-executable")
	if err := os.WriteFile(notExec, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	runAll := func() {
		for _, m := range allModes() {
			if m == ModeSudo {
				if _, err := os.Stat(testSudo); err != nil {
					continue
				}
			}
			_, _ = Run(context.Background(), newSpec(t, m, "root", cmd(t, "true")))
			_, _ = Run(context.Background(), newSpec(t, m, "root", cmd(t, "yes"), cmd(t, "head", "-n", "3"), cmd(t, "wc", "-l")))
			s := newSpec(t, m, "root", cmd(t, "sh", "-c", `trap "" TERM; sleep 30`), cmd(t, "cat"))
			s.Timeout, s.KillGrace = 100*time.Millisecond, 100*time.Millisecond
			if res, err := Run(context.Background(), s); err != nil || !res.TimedOut {
				t.Errorf("timeout run: %v", err)
			}
			s = newSpec(t, m, "root", cmd(t, "sleep", "30"), Command{Path: notExec, Args: []string{"x"}})
			if m == ModeSudo {
				setSudo(&s, notExec)
			}
			if _, err := Run(context.Background(), s); err == nil {
				t.Errorf("start failure run succeeded")
			}
		}
	}
	runAll() // warm up whatever the runtime opens once
	before := countFDs(t)
	runAll()
	runAll()
	if after := countFDs(t); after != before {
		t.Errorf("%d file descriptors before, %d after", before, after)
	}
	checkNoLeftovers(t)
}

func TestRunInvalidSpec(t *testing.T) {
	valid := func() Spec {
		return Spec{
			Stages:    []Command{{Path: "/usr/bin/true", Args: []string{"true"}}},
			Env:       []string{"PATH=/usr/bin"},
			Mode:      ModeDirect,
			SudoPath:  testSudo,
			Timeout:   time.Second,
			MaxOutput: 10,
		}
	}
	tooMany := make([]Command, proto.MaxStages+1)
	for i := range tooMany {
		tooMany[i] = Command{Path: "/usr/bin/true", Args: []string{"true"}}
	}
	tests := []struct {
		name   string
		change func(*Spec)
	}{
		{"no stages", func(s *Spec) { s.Stages = nil }},
		{"too many stages", func(s *Spec) { s.Stages = tooMany }},
		{"relative path", func(s *Spec) { s.Stages[0].Path = "true" }},
		{"relative link", func(s *Spec) { s.Stages[0].Link = "bin/true" }},
		{"empty argv", func(s *Spec) { s.Stages[0].Args = nil }},
		{"NUL in argument", func(s *Spec) { s.Stages[0].Args = []string{"true", "a\x00b"} }},
		{"env entry without =", func(s *Spec) { s.Env = []string{"PATH"} }},
		{"env bad name", func(s *Spec) { s.Env = []string{"A-B=1"} }},
		{"env empty name", func(s *Spec) { s.Env = []string{"=1"} }},
		{"env NUL", func(s *Spec) { s.Env = []string{"A=\x00"} }},
		{"env duplicate", func(s *Spec) { s.Env = []string{"A=1", "A=2"} }},
		{"relative dir", func(s *Spec) { s.Dir = "tmp" }},
		{"unknown mode", func(s *Spec) { s.Mode = "su" }},
		{"empty mode", func(s *Spec) { s.Mode = "" }},
		{"sudo relative path", func(s *Spec) { s.Mode, s.SudoPath = ModeSudo, "sudo" }},
		{"sudo user like an option", func(s *Spec) { s.Mode, s.Target.Name = ModeSudo, "-s" }},
		{"sudo never probed", func(s *Spec) { s.Mode, s.Target.Name = ModeSudo, "root" }},
		{"sudo probed at another path", func(s *Spec) {
			s.Mode, s.Target.Name, s.Sudo = ModeSudo, "root", &Sudo{path: "/usr/bin/sudo-rs"}
		}},
		{"zero timeout", func(s *Spec) { s.Timeout = 0 }},
		{"negative grace", func(s *Spec) { s.KillGrace = -1 }},
		{"zero output cap", func(s *Spec) { s.MaxOutput = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := valid()
			tt.change(&s)
			if res, err := Run(context.Background(), s); err == nil {
				t.Errorf("Run accepted the spec: %+v", res)
			}
		})
	}
	t.Run("valid", func(t *testing.T) {
		requireRoot(t)
		if _, err := Run(context.Background(), valid()); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

// TestSudoArgv: sudo gets the variables' names in --preserve-env=LIST and
// their values in its own environment; sudo-rs, which ignores that option,
// gets NAME=value words before "--". Nothing after "--" is read as either.
func TestSudoArgv(t *testing.T) {
	env := []string{"A_B=x=y", "HOME=/home/alice", "PATH=/usr/bin"}
	c := Command{Path: "/usr/bin/weird=name", Args: []string{"weird=name", "-u", "--", "x"}}
	tests := []struct {
		kind SudoKind
		name string
		env  []string
		want []string
	}{
		{SudoOriginal, "alice", env, []string{testSudo, "-n", "-u", "alice", "--preserve-env=A_B,HOME,PATH", "--", "/usr/bin/weird=name", "-u", "--", "x"}},
		{SudoRS, "alice", env, []string{testSudo, "-n", "-u", "alice", "A_B=x=y", "HOME=/home/alice", "PATH=/usr/bin", "--", "/usr/bin/weird=name", "-u", "--", "x"}},
		{SudoOriginal, "", nil, []string{testSudo, "-n", "-u", "#1000", "--", "/usr/bin/weird=name", "-u", "--", "x"}},
		{SudoRS, "", nil, []string{testSudo, "-n", "-u", "#1000", "--", "/usr/bin/weird=name", "-u", "--", "x"}},
	}
	for _, tt := range tests {
		s := &Spec{SudoPath: testSudo, Target: Target{Name: tt.name, UID: 1000}, Env: tt.env}
		if got := sudoArgv(s, tt.kind, c.Path, c.Args); !slices.Equal(got, tt.want) {
			t.Errorf("%s, user %q, %d variables:\n got %q\nwant %q", tt.kind, tt.name, len(tt.env), got, tt.want)
		}
	}
}

func TestCapture(t *testing.T) {
	tests := []struct {
		max       int
		writes    []string
		want      string
		truncated bool
	}{
		{5, nil, "", false},
		{5, []string{"abc"}, "abc", false},
		{5, []string{"abcde"}, "abcde", false},
		{5, []string{"abc", "de"}, "abcde", false},
		{5, []string{"abc", "def"}, "abcde", true},
		{5, []string{"abcde", "f"}, "abcde", true},
		{5, []string{"abcdefgh", "", "ij"}, "abcde", true},
		{10000, []string{strings.Repeat("x", 4096), strings.Repeat("y", 4096), strings.Repeat("z", 4096)},
			strings.Repeat("x", 4096) + strings.Repeat("y", 4096) + strings.Repeat("z", 10000-8192), true},
	}
	for _, tt := range tests {
		var c capture
		if err := c.init(tt.max); err != nil {
			t.Fatal(err)
		}
		defer c.release()
		for _, w := range tt.writes {
			c.add([]byte(w))
		}
		out, truncated, sum := c.result()
		defer out.Release()
		got := out.Copy()
		if string(got) != tt.want || truncated != tt.truncated {
			t.Errorf("max %d writes %q: got %q %v, want %q %v", tt.max, tt.writes, got, truncated, tt.want, tt.truncated)
		}
		if sum != sha256.Sum256([]byte(tt.want)) {
			t.Errorf("max %d writes %q: hash of the kept bytes is wrong", tt.max, tt.writes)
		}
		if n := capOf(out); n > tt.max {
			t.Errorf("max %d: capacity %d", tt.max, n)
		}
	}
}

func BenchmarkRunTrue(b *testing.B) {
	requireRoot(b)
	for _, m := range allModes() {
		b.Run(string(m), func(b *testing.B) {
			requireSudo(b, m)
			s := newSpec(b, m, "root", cmd(b, "true"))
			for b.Loop() {
				res, err := Run(context.Background(), s)
				if err != nil || res.Stages[0].ExitCode != 0 {
					b.Fatalf("Run: %v %+v", err, res)
				}
			}
		})
	}
}

// TestRunSetupFailure makes pipe creation fail by lowering the file limit and
// checks that Run reports it and leaks no descriptor and no goroutine.
func TestRunSetupFailure(t *testing.T) {
	requireRoot(t)
	s := newSpec(t, ModeDirect, "root", cmd(t, "true"), cmd(t, "true"), cmd(t, "true"))
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	goroutines := runtime.NumGoroutine()
	before := countFDs(t)
	// Room for /dev/null and two pipes; a three-stage pipeline needs more.
	low := old
	low.Cur = uint64(before + 5)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), s)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if err == nil || !strings.Contains(err.Error(), "pipe") {
		t.Errorf("Run: %v, want a pipe creation error", err)
	}
	if after := countFDs(t); after != before {
		t.Errorf("%d file descriptors before, %d after", before, after)
	}
	// A reader goroutine that has signalled its WaitGroup may still be
	// on its way out; give the count a moment to settle before judging.
	deadline := time.Now().Add(2 * time.Second)
	n := runtime.NumGoroutine()
	for n > goroutines && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	if n > goroutines {
		t.Errorf("%d goroutines before, %d after", goroutines, n)
	}
}

// BenchmarkPipeSize measures 16 MiB of stdout through Run with the kernel's
// default pipe capacity (64 KiB) and with larger output pipes
// (F_SETPIPE_SZ). The figures and the decision are in docs/performance.md.
func BenchmarkPipeSize(b *testing.B) {
	requireRoot(b)
	const size = proto.MaxOutputBytes
	for _, pipe := range []int{0, 256 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("pipe=%dKiB", pipe>>10), func(b *testing.B) {
			s := newSpec(b, ModeDirect, "root", cmd(b, "head", "-c", strconv.Itoa(size), "/dev/zero"))
			s.MaxOutput = size
			s.outputPipeSize = pipe
			b.SetBytes(size)
			for b.Loop() {
				res, err := Run(context.Background(), s)
				if err != nil || res.Stdout.Len() != size {
					b.Fatalf("Run: %v", err)
				}
				res.Release()
			}
		})
	}
}
