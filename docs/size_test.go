package docs

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// daemonBytesBudget bounds what agent-sudod loads from its file (the text,
// read-only and initialised data sections, what size(1) calls text and
// data), built as it ships. The idle daemon's resident memory is mostly
// those pages, and with them one 16 MiB answer is at issue 25's target of
// 1.5 times the output with a few tens of KB to spare
// (performance.md, "The daemon's size"). Raise it only with a make perf
// run, in the same commit, whose figures performance.md states with the
// target met or by how much it is missed. Raised from 7.3 MB for the strict JSON decoder (go-json-experiment/json, issue 31),
// which misses the target by about 1%, then to 8.05 MB for the fault fixes
// (issue 32) and the sudo implementation probe (issue 34), with which one
// answer is about 2% over it (performance.md, "The daemon's size").
const daemonBytesBudget = 8_050_000

// budgetGo is the Go release daemonBytesBudget was measured with, the one
// go.mod names: another release links other code.
const budgetGo = "go1.26.8"

// TestDaemonSizeBudget builds agent-sudod as make build does (CGO_ENABLED=0,
// -trimpath) and fails when its loaded sections outgrow daemonBytesBudget,
// saying by how much: a new dependency shows in depaware.txt, and its
// weight here.
func TestDaemonSizeBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds agent-sudod")
	}
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mod), "\ngo "+strings.TrimPrefix(budgetGo, "go")+"\n") {
		t.Errorf("go.mod does not name %s, with which the budget was measured: measure it again with go.mod's release and update budgetGo", budgetGo)
	}
	if v := runtime.Version(); v != budgetGo {
		t.Skipf("the budget was measured with %s; this is %s", budgetGo, v)
	}
	bin := filepath.Join(t.TempDir(), "agent-sudod")
	cmd := exec.Command("go", "build", "-buildvcs=false", "-trimpath", "-o", bin, "../cmd/agent-sudod")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var loaded uint64
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC != 0 && s.Type != elf.SHT_NOBITS {
			loaded += s.Size
		}
	}
	t.Logf("agent-sudod: %d bytes of text and data (budget %d)", loaded, daemonBytesBudget)
	if loaded > daemonBytesBudget {
		t.Errorf("agent-sudod has %d bytes of text and data, %d over its budget of %d: its idle resident memory grows "+
			"with them, which puts one 16 MiB answer over the 1.5x target (docs/performance.md, \"The daemon's size\"); "+
			"link less into the daemon, or raise the budget with a make perf run that shows the target met",
			loaded, loaded-daemonBytesBudget, daemonBytesBudget)
	}
}
