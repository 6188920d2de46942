package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

const (
	testSecurePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	testSudo       = "/usr/bin/sudo"
)

// requireRoot skips tests that start processes as other users or via sudo.
func requireRoot(t testing.TB) {
	t.Helper()
	testenv.NeedsRoot(t)
}

// requireSudo skips sudo mode when sudo is not installed.
func requireSudo(t testing.TB, m Mode) {
	t.Helper()
	if m != ModeSudo {
		return
	}
	if _, err := os.Stat(testSudo); err != nil {
		t.Skipf("sudo not available: %v", err)
	}
}

// sharedSudo is testSudo, probed once for every test that runs through it.
var sharedSudo = sync.OnceValue(func() *Sudo { return &Sudo{path: testSudo} })

// sudoKind is the implementation of testSudo.
func sudoKind(t testing.TB) SudoKind {
	t.Helper()
	impl, err := sharedSudo().Impl(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", testSudo, err)
	}
	return impl.Kind
}

// setSudo makes s run through the sudo at path, which is not probed until
// the pipeline runs.
func setSudo(s *Spec, path string) {
	s.SudoPath, s.Sudo = path, &Sudo{path: path}
}

// allModes are the execution modes every behaviour is checked in.
func allModes() []Mode { return []Mode{ModeDirect, ModeSudo} }

// cmd resolves argv[0] in the test secure path, as the daemon would.
func cmd(t testing.TB, argv ...string) Command {
	t.Helper()
	r, err := Resolve(argv[0], testSecurePath)
	if err != nil {
		t.Fatalf("Resolve(%q): %v", argv[0], err)
	}
	return Command{Path: r.Path, Link: r.Link, Args: argv}
}

// target looks up a test user.
func target(t testing.TB, name string) Target {
	t.Helper()
	tg, err := LookupTarget(name)
	if err != nil {
		t.Fatalf("LookupTarget(%q): %v", name, err)
	}
	return tg
}

// newSpec returns a spec running stages as user in mode m with a clean
// environment and generous limits.
func newSpec(t testing.TB, m Mode, user string, stages ...Command) Spec {
	t.Helper()
	tg := target(t, user)
	env, err := mustPolicy(t, nil).BuildEnv(tg, nil, "")
	if err != nil {
		t.Fatalf("BuildEnv: %v", err)
	}
	return Spec{
		Stages:    stages,
		Env:       env,
		Mode:      m,
		SudoPath:  testSudo,
		Sudo:      sharedSudo(),
		Target:    tg,
		Timeout:   20 * time.Second,
		KillGrace: time.Second,
		MaxOutput: 1 << 20,
	}
}

// mustRun runs s and fails the test on error.
func mustRun(t testing.TB, s Spec) *Result {
	t.Helper()
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(res.Stages) != len(s.Stages) {
		t.Fatalf("Run returned %d stage results for %d stages", len(res.Stages), len(s.Stages))
	}
	return res
}

// exitCodes lists the stages' exit codes.
func exitCodes(res *Result) []int {
	codes := make([]int, len(res.Stages))
	for i, s := range res.Stages {
		codes[i] = s.ExitCode
	}
	return codes
}

// stderrs describes the stages' stderr for failure messages.
func stderrs(res *Result) string {
	var b strings.Builder
	for i, s := range res.Stages {
		b.WriteString("\n  stage " + strconv.Itoa(i) + " stderr: " + strconv.Quote(string(s.Stderr.Copy())))
	}
	return b.String()
}

// procStat returns the fields of /proc/pid/stat after the command name,
// starting with the state, and the command name; ok is false when the process
// does not exist.
func procStat(pid string) (fields []string, comm string, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return nil, "", false
	}
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return nil, "", false
	}
	return strings.Fields(string(b[end+1:])), string(b[open+1 : end]), true
}

// alive reports whether pid is a live (not zombie) process named comm.
func alive(pid int, comm string) bool {
	f, c, ok := procStat(strconv.Itoa(pid))
	return ok && len(f) > 0 && f[0] != "Z" && c == comm
}

// children lists the processes, zombies included, whose parent is the test
// process.
func children(t testing.TB) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("reading /proc: %v", err)
	}
	me := strconv.Itoa(os.Getpid())
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if f, comm, ok := procStat(e.Name()); ok && len(f) > 1 && f[1] == me {
			out = append(out, e.Name()+" ("+comm+", state "+f[0]+")")
		}
	}
	return out
}

// withArg lists the live processes having arg among their arguments.
func withArg(t testing.TB, arg string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("reading /proc: %v", err)
	}
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for a := range bytes.SplitSeq(b, []byte{0}) {
			if string(a) == arg {
				out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
				break
			}
		}
	}
	return out
}

// checkNoLeftovers fails when the test process has children left, zombies
// included.
func checkNoLeftovers(t testing.TB) {
	t.Helper()
	if c := children(t); len(c) > 0 {
		t.Errorf("child processes left after Run: %v", c)
	}
}

// countFDs returns the number of open file descriptors of the test process.
func countFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("reading /proc/self/fd: %v", err)
	}
	return len(ents)
}

// mustPolicy compiles the environment policy for testSecurePath and allow.
func mustPolicy(t testing.TB, allow []string) *EnvPolicy {
	t.Helper()
	p, err := NewEnvPolicy(testSecurePath, allow)
	if err != nil {
		t.Fatalf("NewEnvPolicy(%q): %v", allow, err)
	}
	return p
}

// capOf returns the capacity of the slice o lends: at most the cap the
// capture was made with.
func capOf(o *Output) int {
	var n int
	o.Use(func(b []byte) { n = cap(b) })
	return n
}
