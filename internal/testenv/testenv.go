// Package testenv says what a test needs from the machine it runs on, and
// skips the test, saying what was missing, when the machine or the run does
// not offer it.
//
// Two kinds of run exist. The full run (make test, CI) is root, with tmux,
// sudo and python3 installed, and runs everything. A -short run (go test
// -short ./...) is the quick loop of a contributor: it needs no root, no
// tmux and no network, so every test that needs one of them, or that starts
// the real daemon, skips itself under -short whoever runs it. That keeps a
// -short run the same, and as quick, for root and for anyone else.
//
// It is for tests only; no production code imports it.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// NeedsRoot skips the test under -short, and unless it runs as root.
func NeedsRoot(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs root; skipped with -short (the full run, make test, runs it as root)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root; CI and make test run it as root")
	}
}

// NeedsTmux skips the test under -short, and unless tmux is installed.
func NeedsTmux(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs tmux; skipped with -short")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("needs tmux, which is not in PATH (.ci/run installs it)")
	}
}

// Slow skips the test under -short; why says what makes it slow.
func Slow(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s; skipped with -short", why)
	}
}

// SkipUnderRace skips the test when the tests run with the race detector;
// why says what the test does and why the race detector has nothing to
// find there. It is for tests whose cost is volume (tens of megabytes,
// thousands of scripts), which the race detector makes ten times slower:
// one goroutine crunching a large input, or a size limit whose concurrency
// other tests check under -race with small inputs. make unit runs them
// again without it (NORACE_TESTS in the Makefile), so they still run in
// every full run.
func SkipUnderRace(t testing.TB, why string) {
	t.Helper()
	if Race {
		t.Skipf("%s; make unit runs it without -race", why)
	}
}
