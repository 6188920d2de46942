// Package outside proves that the public Go API is usable from another
// module: it builds, in a module of its own that reaches this tree only
// through a replace directive, an approver written against package
// approval alone and an agent written against package client alone
// (testdata/module), and runs both against the real daemon. It also checks
// that no exported identifier of a public package needs a type of this
// module's internal packages, which another module could not name.
package outside

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

func TestMain(m *testing.M) { daemontest.Main(m) }

// outsideModule is the path of the module testdata/module is built as.
const outsideModule = "example.com/outside"

// buildOutside copies testdata/module into a temporary directory as the
// module outsideModule, requiring this tree through a replace directive,
// builds its commands and returns the directory holding them. go.sum starts
// as this module's, so that the build needs no checksum database; missing
// requirements are resolved as GOPROXY says (GOFLAGS=-mod=mod).
func buildOutside(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/module")); err != nil {
		t.Fatal(err)
	}
	gomod := "module " + outsideModule + "\n\ngo 1.26.8\n\n" +
		"require github.com/agent-sudo/agent-sudo v0.0.0\n\n" +
		"replace github.com/agent-sudo/agent-sudo => " + root + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	for _, args := range [][]string{
		{"mod", "tidy"},
		{"build", "-o", bin + string(filepath.Separator), "./..."},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s in the outside module: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the outside module's go.mod after go mod tidy:\n%s", mod)
	return bin
}

// TestApproverAndAgentFromAnotherModule: an agent built against client
// alone asks the real daemon for a command its rules ask a human about; an
// approver built against approval alone, connected to the approver
// socket, sees it waiting and denies it; the agent gets the denial and the
// command never runs.
func TestApproverAndAgentFromAnotherModule(t *testing.T) {
	testenv.Slow(t, "builds a module of its own and starts the daemon")
	testenv.NeedsRoot(t)
	bin := buildOutside(t)
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AskRules, ApprovalTimeout: "60s"})

	approver := exec.Command(filepath.Join(bin, "approver"), d.ApproverSocket)
	approverOut, err := approver.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var approverErr strings.Builder
	approver.Stderr = &approverErr
	if err := approver.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = approver.Process.Kill() })
	lines := bufio.NewScanner(approverOut)
	next := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("the approver ended early: %v; stderr: %s", lines.Err(), approverErr.String())
		}
		return lines.Text()
	}
	if l := next(); !strings.HasPrefix(l, "connected to agent-sudod ") {
		t.Fatalf("approver's first line %q, want it connected", l)
	}

	mark := filepath.Join(d.Dir, "ran")
	out, err := exec.Command(filepath.Join(bin, "agent"), d.Socket, "touch", mark).CombinedOutput()
	if err != nil {
		t.Fatalf("agent: %v\n%s", err, out)
	}
	id, answer, ok := strings.Cut(strings.TrimSpace(string(out)), " ")
	if !ok || !strings.HasPrefix(answer, "denied: ") {
		t.Fatalf("agent printed %q, want its request id then denied", out)
	}
	if l, want := next(), "waiting "+id+": touch "+mark; l != want {
		t.Errorf("approver printed %q, want %q", l, want)
	}
	if l, want := next(), "denied "+id; l != want {
		t.Errorf("approver printed %q, want %q", l, want)
	}
	if err := approver.Wait(); err != nil {
		t.Errorf("approver: %v; stderr: %s", err, approverErr.String())
	}
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Errorf("the denied command ran (stat %s: %v)", mark, err)
	}
}
