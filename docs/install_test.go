package docs_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestInstallGuideIsTheSystemTest checks that docs/install.md is followed
// word for word by the system test: every shell block of the guide is
// marked <!-- systemtest: NAME --> on the line before it, and
// test/system/run.sh runs each NAME (through guide NAME, as_root NAME or
// as_alice NAME), or the marker says why the block is not run as written.
func TestInstallGuideIsTheSystemTest(t *testing.T) {
	guide, err := os.ReadFile("install.md")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("../test/system/run.sh")
	if err != nil {
		t.Fatal(err)
	}
	marker := regexp.MustCompile(`^<!-- systemtest: (.+) -->$`)
	lines := strings.Split(string(guide), "\n")
	blocks := 0
	for i, line := range lines {
		if line != "```sh" {
			continue
		}
		blocks++
		m := []string(nil)
		if i > 0 {
			m = marker.FindStringSubmatch(lines[i-1])
		}
		if m == nil {
			t.Errorf("install.md:%d: a shell block without a <!-- systemtest: NAME --> marker before it", i+1)
			continue
		}
		name := m[1]
		if strings.HasPrefix(name, "not run") {
			continue
		}
		if !regexp.MustCompile(`(guide|as_root|as_alice) ` + regexp.QuoteMeta(name) + `\b`).Match(script) {
			t.Errorf("install.md:%d: the block marked %q is not run by test/system/run.sh", i+1, name)
		}
	}
	if blocks < 10 {
		t.Errorf("install.md has %d shell blocks; the test expected at least 10 (did the guide lose its steps?)", blocks)
	}
}
