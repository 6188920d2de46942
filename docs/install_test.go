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

// TestReadmeGoSetUpIsTheSystemTest checks that README.md's Go set-ups are
// followed word for word by the system test: the "Go" section has two shell
// blocks, for Debian 13 and Debian 12, each marked <!-- systemtest: NAME -->
// on the line before it, and test/system/readme-go.sh runs each (readme
// NAME), then make build.
func TestReadmeGoSetUpIsTheSystemTest(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("../test/system/readme-go.sh")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Go\n")
	if !ok {
		t.Fatal(`README.md has no "## Go" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	if strings.Count(section, "```sh") != 2 {
		t.Errorf("README.md's Go section has %d shell blocks; the system test runs exactly two, Debian 13's and Debian 12's", strings.Count(section, "```sh"))
	}
	for _, b := range []struct{ marker, container string }{{"go-debian13", "readme"}, {"go-debian12", "readme12"}} {
		if !strings.Contains(section, "\n<!-- systemtest: "+b.marker+" -->\n```sh\n") {
			t.Errorf("README.md's Go section has no shell block marked <!-- systemtest: %s --> on the line before it", b.marker)
		}
		for _, want := range []string{`run_in ` + b.container + ` "$(readme ` + b.marker + `)"`, "run_in " + b.container + " 'make build'"} {
			if !strings.Contains(string(script), want) {
				t.Errorf("test/system/readme-go.sh does not run %s", want)
			}
		}
	}
}
