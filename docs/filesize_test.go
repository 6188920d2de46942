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
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, ".."+string(filepath.Separator)))
		lines := bytes.Count(data, []byte("\n"))
		if lines <= maxFileLines {
			return nil
		}
		if _, ok := longFiles[rel]; ok {
			seen[rel] = true
			return nil
		}
		t.Errorf("%s has %d lines, over %d: split it along its concerns (not at line %d), one mechanical commit", rel, lines, maxFileLines, maxFileLines)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for f, why := range longFiles {
		if !seen[f] {
			t.Errorf("%s is no longer over %d lines (or gone): remove it from longFiles (%s)", f, maxFileLines, why)
		}
	}
}
