package docs_test

import (
	"flag"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

var updateDepaware = flag.Bool("update-depaware", false, "rewrite each binary's depaware.txt (make depaware)")

// TestDepaware: each binary's depaware.txt lists exactly the packages
// outside the standard library that it links, so that a new dependency of
// the root daemon (or the CLI) shows in review as a change to that file.
// make depaware rewrites them; docs/development.md, "Dependencies", says
// what each binary links and why.
func TestDepaware(t *testing.T) {
	for _, bin := range []string{"cmd/agent-sudod", "cmd/agent-sudo"} {
		out, err := exec.Command("go", "list", "-buildvcs=false", "-deps",
			"-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "../"+bin).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", bin, err)
		}
		want := "# Packages outside the standard library linked into " + bin + ", one a line.\n" +
			"# Written by make depaware; docs: TestDepaware checks it.\n" + sortedLines(string(out))
		path := "../" + bin + "/depaware.txt"
		if *updateDepaware {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v; run make depaware", err)
		}
		if string(got) != want {
			t.Errorf("%s is out of date (run make depaware and review the change):\n%s", path, lineDiff(string(got), want))
		}
	}
}

// sortedLines returns the lines of s, sorted, each ending in a newline.
func sortedLines(s string) string {
	lines := strings.Fields(s)
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// lineDiff lists the lines only in a (-) and only in b (+).
func lineDiff(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ina, inb := in(a), in(b)
	var d strings.Builder
	for _, l := range strings.Split(a, "\n") {
		if !inb[l] {
			d.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if !ina[l] {
			d.WriteString("+ " + l + "\n")
		}
	}
	return d.String()
}
