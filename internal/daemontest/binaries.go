package daemontest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

var (
	buildOnce sync.Once
	binDir    string
	built     bool
	buildErr  error
)

// BinDirEnv names the environment variable that gives Binaries a directory
// holding agent-sudod and agent-sudo already built for this test run, so
// that each test process does not link its own: make unit builds them once,
// with -race, for every package. The directory must be one only root can
// enter, as Binaries' own is.
const BinDirEnv = "AGENT_SUDO_TEST_BINDIR"

// Binaries builds agent-sudod and agent-sudo once per test process, with
// the race detector when the tests run with it, and returns their paths;
// when BinDirEnv is set it returns those in that directory instead.
// RemoveBinaries removes what it built. It skips the test under -short:
// building them takes longer than a -short run may.
func Binaries(t testing.TB) (daemon, cli string) {
	t.Helper()
	testenv.Slow(t, "builds agent-sudod and agent-sudo for an end-to-end test")
	buildOnce.Do(func() {
		if dir := os.Getenv(BinDirEnv); dir != "" {
			binDir = dir
			for _, name := range []string{"agent-sudod", "agent-sudo"} {
				if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
					buildErr = fmt.Errorf("%s=%s: %w", BinDirEnv, dir, err)
				}
			}
			return
		}
		dir, err := os.MkdirTemp("", "agent-sudo-bin")
		if err != nil {
			buildErr = err
			return
		}
		binDir, built = dir, true
		args := []string{"build", "-o", dir + string(filepath.Separator)}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "github.com/agent-sudo/agent-sudo/cmd/agent-sudod", "github.com/agent-sudo/agent-sudo/cmd/agent-sudo")
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build agent-sudod agent-sudo: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "agent-sudod"), filepath.Join(binDir, "agent-sudo")
}

// RemoveBinaries removes what Binaries built (not a BinDirEnv directory);
// Main calls it after m.Run.
func RemoveBinaries() {
	if built {
		_ = os.RemoveAll(binDir)
	}
}

// quickExit is the GORACE option that stops a program built with the race
// detector from sleeping a second when it exits (docs/development.md, "How
// the end-to-end tests stay quick and deterministic").
const quickExit = "atexit_sleep_ms=0"

// RaceEnv returns env, an environment for a program the test starts, with
// GORACE set so that a program built with the race detector exits without
// sleeping first. GORACE options already in env, or else in this
// process's environment, are kept; an atexit_sleep_ms among them wins.
func RaceEnv(env []string) []string {
	gorace, found := os.LookupEnv("GORACE")
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GORACE="); ok {
			gorace, found = v, true
			continue
		}
		out = append(out, kv)
	}
	switch {
	case !found || gorace == "":
		gorace = quickExit
	case !strings.Contains(gorace, "atexit_sleep_ms"):
		gorace += " " + quickExit
	}
	return append(out, "GORACE="+gorace)
}

// Main is the TestMain of a package whose tests use Binaries: it sets
// GORACE in this process's environment, which the programs the tests start
// inherit, as RaceEnv does; runs the tests; removes the binaries; and exits
// with the tests' status.
func Main(m *testing.M) {
	for _, kv := range RaceEnv(nil) {
		if v, ok := strings.CutPrefix(kv, "GORACE="); ok {
			if err := os.Setenv("GORACE", v); err != nil {
				fmt.Fprintf(os.Stderr, "daemontest: set GORACE: %v\n", err)
				os.Exit(1)
			}
		}
	}
	code := m.Run()
	RemoveBinaries()
	os.Exit(code)
}

// PublicCLI returns a copy of the agent-sudo binary that every user can
// run: Binaries builds into a directory only root can enter.
func (d *Daemon) PublicCLI() string {
	d.t.Helper()
	_, cli := Binaries(d.t)
	return d.PublicCopy(cli, "agent-sudo")
}

// PublicCopy returns a copy of the program at src, as Dir/name, that every
// user can run; it is written once per daemon (testenv.WriteExecutable),
// and later calls return it.
func (d *Daemon) PublicCopy(src, name string) string {
	d.t.Helper()
	dst := filepath.Join(d.Dir, name)
	if _, err := os.Stat(dst); err == nil {
		return dst
	}
	testenv.CopyExecutable(d.t, src, dst)
	return dst
}
