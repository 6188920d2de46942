package docs_test

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/agent-sudo/agent-sudo"

// layers is the layering of the module's packages, from the bottom up: a
// package may import (outside its tests) only packages of lower layers.
// Tests may import anything: end-to-end tests drive the daemon through the
// CLI. A new package needs a place here, and a row in README.md's layout.
var layers = [][]string{
	// below the leaves that read /proc or decode the wire; bounded lines; the version of both binaries; errors with advice
	{"internal/sysfile", "internal/strictjson", "internal/boundedline", "internal/version", "internal/hint"},
	{"proto", "internal/termtext", "internal/glob", "internal/procinfo", "internal/testenv", "internal/tmuxtest", "internal/mcptest", "internal/browsertest", "internal/account", "internal/fsperm", "internal/journalctl", "internal/desktopnotify"}, // leaves
	{"internal/peercred", "internal/spawn", "internal/prototest"}, // carries procinfo's facts about the peer; starts the daemon's helpers, their programs checked with fsperm; checks views of proto.Request
	{"internal/runner"},
	{"internal/rules"},
	{"approval"},
	{"internal/audit", "internal/passkey", "internal/sheettest", "internal/notify"}, // records approval's decisions and runner's results; checks signed ones; tells notifiers what a human is shown
	{"internal/console", "internal/web"},
	{"internal/config"},
	{"daemon"},
	{"client", "internal/clienttest"},
	{"internal/mcpserver", "internal/daemontest", "internal/consoletest", "internal/loadgen", "internal/passkeytest"},
	{"cmd/agent-sudod", "cmd/agent-sudo/cli"},
	{"cmd/agent-sudo"},
	{"docs", "packaging", "packaging/mangen", "test/agents", "test/web", "test/load", "test/load/plot", "test/outside"}, // tests and build tools
}

// layerOf maps each package (relative to the module) to its layer.
func layerOf() map[string]int {
	m := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			m[p] = i
		}
	}
	return m
}

// moduleImports returns, for every package of the module (relative to the
// module), the module's packages it imports outside its tests, from go list.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	// -buildvcs=false: the import graph needs no VCS stamp, and a
	// checkout git refuses to read (another user's) must not fail it.
	cmd := exec.Command("go", "list", "-buildvcs=false", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	graph := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkg, ok := relative(fields[0])
		if !ok {
			t.Fatalf("go list named %q, outside module %s", fields[0], module)
		}
		graph[pkg] = nil
		for _, imp := range fields[1:] {
			if rel, ok := relative(imp); ok {
				graph[pkg] = append(graph[pkg], rel)
			}
		}
	}
	return graph
}

// relative returns path relative to the module, if it is in it.
func relative(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	return strings.CutPrefix(path, module+"/")
}

// TestLayering checks that no package imports one of its own or a higher
// layer, so that the import paths and README.md's layout state the real
// dependencies, and that every package has a layer.
func TestLayering(t *testing.T) {
	layer := layerOf()
	graph := moduleImports(t)
	for _, pkg := range slices.Sorted(func(yield func(string) bool) {
		for p := range graph {
			if !yield(p) {
				return
			}
		}
	}) {
		l, ok := layer[pkg]
		if !ok {
			t.Errorf("package %s has no layer: add it to layers in docs/layout_test.go and to README.md's layout table", pkg)
			continue
		}
		for _, imp := range graph[pkg] {
			if il, ok := layer[imp]; ok && il >= l {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package may import only lower layers; move the code, or the package in the layering if the new dependency is right", pkg, l, imp, il)
			}
		}
	}
	for p := range layer {
		if _, ok := graph[p]; !ok {
			t.Errorf("layers in docs/layout_test.go names %s, which go list does not know", p)
		}
	}
}

// readmeLayout returns the folders README.md's layout table names, in row
// order: each backquoted name in a row's first cell, without a trailing '/'.
func readmeLayout(t *testing.T) (rows [][]string) {
	t.Helper()
	f, err := os.Open("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	code := regexp.MustCompile("`([^`]+)`")
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "| folder |"):
			in = true
		case in && !strings.HasPrefix(line, "|"):
			return rows
		case in && !strings.HasPrefix(line, "|---"):
			cells := strings.Split(line, "|")
			var names []string
			for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
				names = append(names, strings.TrimSuffix(m[1], "/"))
			}
			rows = append(rows, names)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !in {
		t.Fatal(`README.md has no layout table (a table whose header starts "| folder |")`)
	}
	return rows
}

// TestReadmeLayout checks that README.md's layout table names every package
// of the module and otherwise only existing folders, and lists the packages
// from the bottom of the layering up, as its text says.
func TestReadmeLayout(t *testing.T) {
	layer := layerOf()
	graph := moduleImports(t)
	seen := map[string]bool{}
	prev, prevLayer := "", -1
	for _, row := range readmeLayout(t) {
		for _, name := range row {
			if _, ok := graph[name]; !ok {
				// A folder that holds no package (test scripts) may have a
				// row; it takes no part in the layering.
				if fi, err := os.Stat("../" + name); err != nil || !fi.IsDir() {
					t.Errorf("README.md's layout names %s, which is neither a package of the module nor a folder", name)
				}
				continue
			}
			seen[name] = true
			if l := layer[name]; l < prevLayer {
				t.Errorf("README.md's layout lists %s (layer %d) after %s (layer %d); list the rows from the bottom of the layering up", name, l, prev, prevLayer)
			} else {
				prev, prevLayer = name, l
			}
		}
	}
	for p := range graph {
		if !seen[p] {
			t.Errorf("package %s is missing from README.md's layout table", p)
		}
	}
}
