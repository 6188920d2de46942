// Package docs holds no code: its tests keep the documentation honest by
// checking that every test docs/security.md names as the proof of a promise
// exists, and that README.md's layout table names every package in the
// order of the layering, which the imports must follow (layout_test.go).
package docs_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// promiseSection is the heading under which docs/security.md maps promises
// to the tests that prove them.
const promiseSection = "## Promises and the tests that prove them"

// ref is one test a row names: a test, fuzz or benchmark function in a
// package (a directory relative to the repository root), or a make target.
type ref struct {
	row  int    // line in security.md, for messages
	pkg  string // "" for a make target
	name string // function name, or the make target
}

// parsePromiseTables returns every reference in the promise tables of
// security.md, and the number of rows in each table (by sub-heading).
func parsePromiseTables(t *testing.T, path string) (refs []ref, rows map[string]int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows = map[string]int{}
	in, heading := false, ""
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		switch {
		case strings.HasPrefix(text, "## "):
			in = text == promiseSection
			continue
		case !in:
			continue
		case strings.HasPrefix(text, "### "):
			heading = strings.TrimPrefix(text, "### ")
			rows[heading] = 0
			continue
		case !strings.HasPrefix(text, "|"):
			continue
		}
		cells := splitRow(text)
		if len(cells) != 2 {
			t.Errorf("security.md:%d: a promise row has two cells (promise, tests), got %d: %s", line, len(cells), text)
			continue
		}
		if cells[0] == "promise" || strings.Trim(cells[0], "-: ") == "" {
			continue // header or separator
		}
		if heading == "" {
			t.Errorf("security.md:%d: promise row before any ### heading", line)
		}
		rows[heading]++
		got := parseRefs(cells[1], line)
		if len(got) == 0 {
			t.Errorf("security.md:%d: promise %q names no test", line, cells[0])
		}
		refs = append(refs, got...)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return refs, rows
}

// splitRow splits a Markdown table row into trimmed cells; "\|" is a
// literal bar inside a cell.
func splitRow(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	row = strings.TrimSuffix(row, "|")
	row = strings.ReplaceAll(row, `\|`, "\x00")
	parts := strings.Split(row, "|")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(strings.ReplaceAll(p, "\x00", "|"))
	}
	return parts
}

var funcName = regexp.MustCompile(`^(Test|Fuzz|Benchmark)[A-Za-z0-9_]*$`)

// parseRefs reads a tests cell: references separated by ";", each either
// "make TARGET" or "PKG: Name, Name/subtest, ...", backticks optional.
func parseRefs(cell string, line int) []ref {
	var out []ref
	for part := range strings.SplitSeq(strings.ReplaceAll(cell, "`", ""), ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if target, ok := strings.CutPrefix(part, "make "); ok {
			out = append(out, ref{row: line, name: strings.TrimSpace(target)})
			continue
		}
		pkg, names, ok := strings.Cut(part, ":")
		if !ok {
			out = append(out, ref{row: line, pkg: "?", name: part})
			continue
		}
		for n := range strings.SplitSeq(names, ",") {
			n = strings.TrimSpace(n)
			n, _, _ = strings.Cut(n, "/") // a subtest: its function must exist
			out = append(out, ref{row: line, pkg: strings.TrimSpace(pkg), name: n})
		}
	}
	return out
}

// TestSecurityPromiseTable checks that every test docs/security.md names as
// the proof of a promise exists, so the table cannot point at a test that
// was renamed or deleted, and that no section of the table is empty. That
// the named tests pass is what the rest of the suite checks.
func TestSecurityPromiseTable(t *testing.T) {
	refs, rows := parsePromiseTables(t, "security.md")
	if len(rows) == 0 {
		t.Fatalf("security.md has no %q section with ### tables", promiseSection)
	}
	for heading, n := range rows {
		if n == 0 {
			t.Errorf("security.md: the promise table %q has no rows", heading)
		}
	}
	makefile, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	sources := map[string]string{} // package dir -> its test sources, joined
	for _, r := range refs {
		if r.pkg == "" {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(r.name) + `:`).Match(makefile) {
				t.Errorf("security.md:%d: make target %q does not exist", r.row, r.name)
			}
			continue
		}
		if !funcName.MatchString(r.name) {
			t.Errorf("security.md:%d: %q in package %q is not a Test, Fuzz or Benchmark function name (write \"pkg: TestName\")", r.row, r.name, r.pkg)
			continue
		}
		src, ok := sources[r.pkg]
		if !ok {
			dir, err := packageDir(r.pkg)
			if err != nil {
				t.Errorf("security.md:%d: %v", r.row, err)
				continue
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
			if len(files) == 0 {
				t.Errorf("security.md:%d: package %q has no test files", r.row, r.pkg)
			}
			var b strings.Builder
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				b.Write(data)
			}
			src = b.String()
			sources[r.pkg] = src
		}
		if !strings.Contains(src, "\nfunc "+r.name+"(") {
			t.Errorf("security.md:%d: %s: no func %s in its test files", r.row, r.pkg, r.name)
		}
	}
}

// packageDir finds the directory of pkg: a path relative to the repository
// root ("internal/runner"), or a package's last element ("runner") when only
// one directory has that name.
func packageDir(pkg string) (string, error) {
	dir := filepath.Join("..", filepath.FromSlash(pkg))
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return dir, nil
	}
	var found []string
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() && d.Name() == pkg {
			found = append(found, path)
		}
		return nil
	})
	switch {
	case err != nil:
		return "", err
	case len(found) == 1:
		return found[0], nil
	case len(found) == 0:
		return "", fmt.Errorf("no package %q in the repository", pkg)
	}
	return "", fmt.Errorf("package name %q is ambiguous (%s); write its path", pkg, strings.Join(found, ", "))
}

func TestParseRefs(t *testing.T) {
	got := parseRefs("`daemon: TestA, TestB/sub`; make systemtest", 7)
	want := []ref{{7, "daemon", "TestA"}, {7, "daemon", "TestB"}, {7, "", "systemtest"}}
	if len(got) != len(want) {
		t.Fatalf("parseRefs = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("parseRefs[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}
