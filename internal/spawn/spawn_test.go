package spawn

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// TestRefused: what the policy does not start, each with the reason.
func TestRefused(t *testing.T) {
	ok := Cmd{Path: "/bin/true", Args: []string{"true"}, UID: 65534, GID: 65534}
	tests := []struct {
		name string
		edit func(*Cmd)
		want string
	}{
		{"relative path", func(c *Cmd) { c.Path = "true" }, `spawn: program "true" is not an absolute path`},
		{"no argv", func(c *Cmd) { c.Args = nil }, "spawn: /bin/true: no argument vector (argv[0] is missing)"},
		{"root", func(c *Cmd) { c.UID = 0 }, "spawn: /bin/true: refusing to run a helper as root"},
		{"root's group", func(c *Cmd) { c.GID = 0 }, "spawn: /bin/true: refusing to run a helper with root's group (gid 0)"},
		{"root's group among the others", func(c *Cmd) { c.Groups = []uint32{100, 0} }, "spawn: /bin/true: refusing to run a helper with root's group (gid 0)"},
		{"HOME", func(c *Cmd) { c.Env = []string{"PATH=/bin", "HOME=/home/alice"} }, "spawn: /bin/true: Env[1] sets HOME, which the policy sets"},
		{"PWD", func(c *Cmd) { c.Env = []string{"PWD=/tmp"} }, "spawn: /bin/true: Env[0] sets PWD, which the policy sets"},
	}
	for _, tt := range tests {
		c := ok
		tt.edit(&c)
		err := Run(context.Background(), c)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: Run = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestCommandPolicy: the exec.Cmd built for a child: a new session, the
// death signal, the user without root's groups, "/" and HOME=/, the
// caller's environment after it, stdin from /dev/null, and an output that
// is a pipe even when the caller hands over a file of the daemon's.
func TestCommandPolicy(t *testing.T) {
	cmd, err := command(context.Background(), Cmd{Path: "/bin/true", Args: []string{"true"}, UID: 65534, GID: 65534,
		Env: []string{"PATH=/bin"}, Output: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	sys := cmd.SysProcAttr
	if !sys.Setsid || sys.Setpgid || sys.Setctty || sys.Noctty || sys.Pdeathsig == 0 {
		t.Errorf("SysProcAttr %+v: want Setsid alone (a new session, no terminal) and a death signal", sys)
	}
	if c := sys.Credential; c == nil || c.Uid != 65534 || c.Gid != 65534 || c.Groups == nil || len(c.Groups) != 0 {
		t.Errorf("Credential %+v: want uid and gid 65534 and an empty, non-nil group list (setgroups(0))", c)
	}
	if cmd.Dir != "/" || strings.Join(cmd.Env, " ") != "HOME=/ PATH=/bin" {
		t.Errorf("Dir %q Env %q: want / and exactly HOME=/ PATH=/bin", cmd.Dir, cmd.Env)
	}
	if cmd.Stdin != nil || len(cmd.ExtraFiles) != 0 {
		t.Errorf("Stdin %v ExtraFiles %v: want /dev/null and nothing more", cmd.Stdin, cmd.ExtraFiles)
	}
	for _, w := range []any{cmd.Stdout, cmd.Stderr} {
		if _, isFile := w.(*os.File); isFile {
			t.Errorf("output %T is a file, which the child would get as its own descriptor", w)
		}
	}
}

// TestRunOutputThroughPipe: a child's stdout and stderr reach Output
// through a pipe, not as the file the caller gave.
func TestRunOutputThroughPipe(t *testing.T) {
	testenv.NeedsRoot(t)
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = Run(t.Context(), Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "readlink /proc/$$/fd/1; readlink /proc/$$/fd/2 >&2"},
		UID: 65534, GID: 65534, Env: []string{"PATH=/usr/bin:/bin"}, Output: f})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(got)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "pipe:") || lines[0] != lines[1] || bytes.Contains(got, []byte(f.Name())) {
		t.Errorf("the child's stdout and stderr were %q, want one pipe", lines)
	}
}

// TestOnlyPolicyInTheDaemon: of the module's packages linked into
// agent-sudod, only this one imports os/exec (runner starts the approved
// stages with os.StartProcess); a new child of the daemon must go through
// Run or RunOnTerminal. No package is excepted: the console, whose
// DialCommand (the ssh transport of agent-sudo approve) imports os/exec,
// is not linked into the daemon, which starts it as agent-sudo approve
// (RunOnTerminal), and this test fails if it ever is again.
func TestOnlyPolicyInTheDaemon(t *testing.T) {
	const module = "github.com/agent-sudo/agent-sudo/"
	out, err := exec.Command("go", "list", "-buildvcs=false", "-deps", "-f", `{{if .Module}}{{.ImportPath}} {{join .Imports " "}}{{end}}`, module+"cmd/agent-sudod").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := []string{module + "internal/spawn"}
	seen := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], module) {
			continue
		}
		seen++
		if slices.Contains(fields[1:], "os/exec") && !slices.Contains(allowed, fields[0]) {
			t.Errorf("%s imports os/exec and is linked into agent-sudod: start processes with spawn.Run or spawn.RunOnTerminal", fields[0])
		}
		if fields[0] == module+"internal/console" {
			t.Errorf("internal/console is linked into agent-sudod: the daemon starts the console as agent-sudo approve (docs/development.md)")
		}
	}
	if seen < 10 {
		t.Fatalf("go list named %d of the module's packages in agent-sudod's dependencies: %q", seen, out)
	}
}

// TestLeftoversKilled: what a child leaves running in its process group
// when it exits (a script's "cmd &") is killed then, not left to run as the
// notify user past notify_timeout.
func TestLeftoversKilled(t *testing.T) {
	testenv.NeedsRoot(t)
	// A directory the child (nobody) can write: t.TempDir's parent is
	// root's alone.
	dir, err := os.MkdirTemp("", "spawn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "pid")
	err = Run(context.Background(), Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", `sleep 60 >/dev/null 2>&1 & echo $! > "$0"`, pidFile}, UID: 65534, GID: 65534})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// Killed before Run returned; it may linger as a zombie of init for
	// an instant, which /proc/PID/stat shows as state Z.
	for range 100 {
		st, err := testenv.ReadProcStat(pid)
		if err != nil || st.State() == "Z" {
			return
		}
		time.Sleep(10 * time.Millisecond) // the kill is delivered; the exit is asynchronous
	}
	t.Errorf("the background sleep (pid %d) still runs after its parent's Run returned", pid)
}
