package packaging_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// makeError is a line make prints for a failed target.
var makeError = regexp.MustCompile(`^make(\[\d+\])?: \*\*\* `)

// TestMakeRefusesAnOldGo: with a go on PATH older than the one go.mod names
// (Debian 12's own is 1.19), make says so in one line that names both
// versions and README.md's section, and runs no Go build; so does a go whose
// GOTOOLCHAIN=local keeps it from fetching the newer release, and a go that
// is not there.
func TestMakeRefusesAnOldGo(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dir := t.TempDir()
	// A stand-in go: it answers `env GOVERSION` and `env GOTOOLCHAIN` as
	// the named release would, and records any other call.
	fake := func(name, version, toolchain string) string {
		path := filepath.Join(dir, name)
		testenv.WriteExecutable(t, path, []byte(`#!/bin/sh
case "$1 $2" in
"env GOVERSION") echo `+version+` ;;
"env GOTOOLCHAIN") echo `+toolchain+` ;;
*) echo "the stand-in go was run: $*" >>`+path+`.calls; exit 3 ;;
esac
`))
		return path
	}
	for _, tc := range []struct {
		name, goBin, target, want string
	}{
		{"Debian 12's Go", fake("go119", "go1.19.8", ""), "build", "is Go 1.19.8 ("},
		{"Go 1.23 with GOTOOLCHAIN=local", fake("go123", "go1.23.5", "local"), "test", "is Go 1.23.5 with GOTOOLCHAIN=local ("},
		{"no Go", filepath.Join(dir, "missing-go"), "run", "failed: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("make", "--no-print-directory", "-C", "..", tc.target, "GO="+tc.goBin)
			// A make of its own, not a sub-make of the one running the
			// tests (make test), whose jobserver flags would add lines.
			cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
				return strings.HasPrefix(kv, "MAKEFLAGS=") || strings.HasPrefix(kv, "MFLAGS=") || strings.HasPrefix(kv, "MAKELEVEL=")
			})
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("make %s with %s: %v, want it to fail\n%s%s", tc.target, tc.goBin, err, &stdout, &stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			first := lines[0]
			if !strings.HasPrefix(first, "make: agent-sudo needs Go 1.") || !strings.Contains(first, tc.want) ||
				!strings.Contains(first, `README.md, "Go", says how to get it`) {
				t.Errorf("make %s said:\n%s\nwant one line saying which Go is needed, which it found (%q) and where to look", tc.target, &stderr, tc.want)
			}
			// After it only make's own "*** [Makefile:N: go-version]
			// Error 1" lines: nothing was built.
			for _, l := range lines[1:] {
				if !makeError.MatchString(l) {
					t.Errorf("make %s printed more than the one line and make's own:\nstdout: %s\nstderr: %s", tc.target, &stdout, &stderr)
					break
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("make %s printed on stdout: %s", tc.target, &stdout)
			}
			if calls, _ := filepath.Glob(filepath.Join(dir, "*.calls")); len(calls) > 0 {
				t.Errorf("the stand-in go was run for more than its version: %v", calls)
			}
		})
	}
}
