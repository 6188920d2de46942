package main

// The scripts in testdata/script run the agent-sudo command line as a user
// would: a separate process with arguments, an environment, stdin, and an
// exit status, checked with testscript (github.com/rogpeppe/go-internal).
// Each script is one behaviour; a regression found later gets a script of
// its own, named after what broke. Every command and subcommand that
// "agent-sudo help" lists is run by one script at least
// (TestScriptsRunEveryCommand), with its exit statuses.
//
// Besides testscript's own commands and conditions, the scripts have:
//
//	exec agent-sudo ARGS...   this package's main, built into the test binary
//	exec sudo ARGS...         the same program under the name sudo: the shim
//	exits N PROG ARGS...      run PROG like exec; its exit status must be N
//	daemon [-approval-timeout D] [RULES-FILE]
//	                          start agent-sudod (daemontest.Start: it waits
//	                          until the socket answers a ping) with the
//	                          [[rule]] tables of RULES-FILE, and set
//	                          AGENT_SUDO_SOCKET, AUDIT_LOG and DAEMON_CONFIG
//	                          for the commands after it; it is stopped when
//	                          the script ends
//	[root]                    the test runs as root, as daemon needs
//
// Every script starts with AGENT_SUDO_SOCKET naming a socket that does not
// exist, so that no script reaches a daemon it did not start, and TZ=UTC.

import (
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/agent-sudo/agent-sudo/cmd/agent-sudo/cli"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

func TestMain(m *testing.M) {
	testscript.Main(removeBinaries{m}, map[string]func(){
		"agent-sudo": main,
		"sudo":       main,
	})
}

// removeBinaries runs the tests, then removes the binaries daemontest
// built for them.
type removeBinaries struct{ m *testing.M }

func (r removeBinaries) Run() int {
	defer daemontest.RemoveBinaries()
	return r.m.Run()
}

// tbKey is the key of the script's testing.TB among the Env's values.
type tbKey struct{}

func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			// testscript runs each script as a subtest with a *testing.T
			// inside; daemontest needs it to stop the daemon when the
			// script ends.
			tb, ok := env.T().(testing.TB)
			if !ok {
				return errors.New("testscript's T is not a testing.TB; the daemon command needs one")
			}
			env.Values[tbKey{}] = tb
			env.Setenv("AGENT_SUDO_SOCKET", filepath.Join(env.WorkDir, "no-daemon.sock"))
			env.Setenv("TZ", "UTC")
			// What the script runs exits without the race detector's
			// sleep, as daemontest.RaceEnv says.
			for _, kv := range daemontest.RaceEnv(nil) {
				if v, ok := strings.CutPrefix(kv, "GORACE="); ok {
					env.Setenv("GORACE", v)
				}
			}
			return nil
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "root":
				return os.Geteuid() == 0, nil
			}
			return false, errors.New("unknown condition " + strconv.Quote(cond))
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":  cmdExits,
			"daemon": cmdDaemon,
		},
	})
}

// cmdExits is "exits N PROG ARGS...": PROG runs as exec runs it, and must
// exit with status N.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exits; give the status expected")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits N PROG [ARG...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil || want < 0 || want > 255 {
		ts.Fatalf("exits: %q is not an exit status", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// cmdDaemon is "daemon [-approval-timeout D] [RULES-FILE]"; see the top of
// this file.
func cmdDaemon(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! daemon")
	}
	fset := flag.NewFlagSet("daemon", flag.ContinueOnError)
	timeout := fset.String("approval-timeout", "", "approval_timeout of the daemon (default daemontest's)")
	if err := fset.Parse(args); err != nil || fset.NArg() > 1 {
		ts.Fatalf("usage: daemon [-approval-timeout D] [RULES-FILE]")
	}
	if os.Geteuid() != 0 {
		ts.Fatalf("daemon needs root: start the script with [!root] skip")
	}
	cfg := daemontest.Config{ApprovalTimeout: *timeout}
	if fset.NArg() == 1 {
		cfg.Rules = ts.ReadFile(fset.Arg(0))
	}
	tb := ts.Value(tbKey{}).(testing.TB)
	d := daemontest.Start(tb, cfg)
	ts.Setenv("AGENT_SUDO_SOCKET", d.Socket)
	ts.Setenv("AUDIT_LOG", d.AuditLog)
	ts.Setenv("DAEMON_CONFIG", d.ConfigPath)
}

// TestScriptsRunEveryCommand: every command and subcommand that
// "agent-sudo help" lists is run by at least one script (not only its
// help), so that each has its exit statuses checked as a user meets them.
func TestScriptsRunEveryCommand(t *testing.T) {
	var help strings.Builder
	if code := cli.Dispatch(t.Context(), "agent-sudo", []string{"help"}, nil, &help, io.Discard, func(string) string { return "" }); code != 0 {
		t.Fatalf("agent-sudo help exited %d", code)
	}
	var commands [][]string
	var path []string
	in := false
	for line := range strings.Lines(help.String()) {
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "commands:":
			in = true
			continue
		case !in:
			continue
		case line == "":
			in = false
			continue
		}
		name := strings.Fields(line)[0]
		depth := (len(line)-len(strings.TrimLeft(line, " ")))/2 - 1
		if depth < 0 || depth > len(path) {
			t.Fatalf("cannot read the command list of agent-sudo help at %q", line)
		}
		path = append(path[:depth:depth], name)
		commands = append(commands, slices.Clone(path))
	}
	if len(commands) < 10 {
		t.Fatalf("read %d commands from agent-sudo help, want at least 10:\n%s", len(commands), help.String())
	}

	scripts, err := filepath.Glob(filepath.Join("testdata", "script", "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var runs [][]string // the words after agent-sudo of each exec or exits line
	for _, s := range scripts {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			f := strings.Fields(line)
			for len(f) > 0 && (strings.HasPrefix(f[0], "[") || f[0] == "!") {
				f = f[1:]
			}
			switch {
			case len(f) > 1 && f[0] == "exec" && f[1] == "agent-sudo":
				runs = append(runs, f[2:])
			case len(f) > 2 && f[0] == "exits" && f[2] == "agent-sudo":
				runs = append(runs, f[3:])
			}
		}
	}
	for _, cmd := range commands {
		found := false
		for _, args := range runs {
			if len(args) > 0 && args[0] == "help" && cmd[0] != "help" {
				continue
			}
			i := 0
			for _, a := range args {
				if i < len(cmd) && a == cmd[i] {
					i++
				}
			}
			if i == len(cmd) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("no script in testdata/script runs agent-sudo %s: add one with its exit statuses", strings.Join(cmd, " "))
		}
	}
}
