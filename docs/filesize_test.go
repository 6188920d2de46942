package docs_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFileLines bounds a Go file outside tests: a file longer than that
// holds more than one concern, and is split along them (issue 35, as the
// anchors keep it).
const maxFileLines = 700

// longFiles are the files allowed over maxFileLines for now, each with
// why. An entry no longer over it fails the test, so that it is removed.
var longFiles = map[string]string{}

// TestNoLongFiles: no Go file outside tests (and testdata) has more than
// maxFileLines lines, except those longFiles names.
func TestNoLongFiles(t *testing.T) {
	seen := map[string]bool{}
	for _, src := range goSources(t) {
		path, rel := src.path, src.rel
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Count(data, []byte("\n"))
		if lines <= maxFileLines {
			continue
		}
		if _, ok := longFiles[rel]; ok {
			seen[rel] = true
			continue
		}
		t.Errorf("%s has %d lines, over %d: split it along its concerns (not at line %d), one mechanical commit", rel, lines, maxFileLines, maxFileLines)
	}
	for f, why := range longFiles {
		if !seen[f] {
			t.Errorf("%s is no longer over %d lines (or gone): remove it from longFiles (%s)", f, maxFileLines, why)
		}
	}
}

// goSource is a Go file of the module outside tests: path from docs/, rel
// from the module's root.
type goSource struct{ path, rel string }

// goSources lists the module's Go files that are not tests, outside
// testdata, .git and node_modules, for the house rules' tests.
func goSources(t *testing.T) []goSource {
	t.Helper()
	var out []goSource
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "testdata", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			out = append(out, goSource{path, filepath.ToSlash(strings.TrimPrefix(path, ".."+string(filepath.Separator)))})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
