package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSudoVersion(t *testing.T) {
	tests := []struct {
		line string
		want SudoImpl
		err  string // a part of the error; "" for none
	}{
		{"Sudo version 1.9.16p2", SudoImpl{SudoOriginal, "1.9.16p2"}, ""},
		{"Sudo version 1.9.13p3", SudoImpl{SudoOriginal, "1.9.13p3"}, ""},
		{"Sudo version 1.8.21", SudoImpl{SudoOriginal, "1.8.21"}, ""},
		{"Sudo version 2.0.0", SudoImpl{SudoOriginal, "2.0.0"}, ""},
		{"sudo-rs 0.2.5", SudoImpl{SudoRS, "0.2.5"}, ""},
		{"sudo-rs 0.2.10", SudoImpl{SudoRS, "0.2.10"}, ""},
		{"sudo-rs 1.0.0", SudoImpl{SudoRS, "1.0.0"}, ""},
		{"sudo-rs 0.2.5-1", SudoImpl{SudoRS, "0.2.5-1"}, ""},
		{"Sudo version 1.8.20p2", SudoImpl{}, "sudo 1.8.21 or newer"},
		{"Sudo version 1.7.10", SudoImpl{}, "sudo 1.8.21 or newer"},
		{"sudo-rs 0.2.4", SudoImpl{}, "sudo-rs 0.2.5 or newer"},
		{"sudo-rs 0.1.9", SudoImpl{}, "sudo-rs 0.2.5 or newer"},
		{"doas 6.8", SudoImpl{}, "neither sudo"},
		{"", SudoImpl{}, "neither sudo"},
		{"Sudo version 1.9.16p2 extra", SudoImpl{}, "neither sudo"},
		{" sudo-rs 0.2.5", SudoImpl{}, "neither sudo"},
		{"sudo-rs 0.2.5\x1b[2J", SudoImpl{}, `\x1b[2J`},
		{"sudo-rs 99999999999999999999.0.0", SudoImpl{}, "version number"},
	}
	for _, tt := range tests {
		got, err := ParseSudoVersion(tt.line)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("ParseSudoVersion(%q): %v", tt.line, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseSudoVersion(%q) = %v, %v; want an error containing %q", tt.line, got, err, tt.err)
		case got != tt.want:
			t.Errorf("ParseSudoVersion(%q) = %+v, want %+v", tt.line, got, tt.want)
		}
	}
}

// reachableDir is a temporary directory nobody can reach and run the
// programs in, as the probe, which runs as nobody, must.
func reachableDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// fakeSudo writes at path a script that prints version (sudo-rs's on
// stderr, as 0.2.5 does) and exits with status; it replaces the file (a
// new inode), as a package upgrade does.
func fakeSudo(t *testing.T, path, version string, status int) {
	t.Helper()
	tmp := path + ".new"
	to := ""
	if strings.HasPrefix(version, "sudo-rs") {
		to = " >&2"
	}
	script := "#!/bin/sh\n[ \"$*\" = --version ] || exit 99\n[ -z \"${AGENT_SUDO_TEST_LEAK-}\" ] || { echo env leaked >&2; exit 98; }\n" +
		"printf '%s\\n' '" + version + "' 'Configure options: x'" + to + "\nexit " + string(rune('0'+status)) + "\n"
	if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestOpenSudo: the daemon runs nothing through a program it cannot tell
// is sudo or sudo-rs, or that is too old, or that fails; it asks --version
// in an empty environment; and a sudo replaced after the start is asked
// again before the next pipeline, never trusted on its old answer.
func TestOpenSudo(t *testing.T) {
	requireRoot(t)                                               // the probe runs as nobody
	t.Setenv("AGENT_SUDO_TEST_LEAK", "the daemon's environment") // the probe must not pass it on
	dir := reachableDir(t)
	path := filepath.Join(dir, "sudo")
	ctx := context.Background()
	for _, tt := range []struct {
		version string
		status  int
		err     string
	}{
		{"doas 6.8", 0, `its --version says "doas 6.8", which is neither sudo`},
		{"Sudo version 1.8.19", 0, "it is sudo 1.8.19, and sudo mode needs sudo 1.8.21 or newer"},
		{"sudo-rs 0.2.4", 0, "it is sudo-rs 0.2.4, and sudo mode needs sudo-rs 0.2.5 or newer"},
		{"Sudo version 1.9.16p2", 1, "exit status 1"},
	} {
		fakeSudo(t, path, tt.version, tt.status)
		if _, err := OpenSudo(ctx, path); err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "sudo_path "+path) {
			t.Errorf("%q exit %d: OpenSudo: %v, want an error naming sudo_path and containing %q", tt.version, tt.status, err, tt.err)
		}
	}
	if _, err := OpenSudo(ctx, filepath.Join(dir, "missing")); err == nil {
		t.Error("OpenSudo of a missing file succeeded")
	}

	fakeSudo(t, path, "Sudo version 1.9.16p2", 0)
	s, err := OpenSudo(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if impl, err := s.Impl(ctx); err != nil || impl != (SudoImpl{SudoOriginal, "1.9.16p2"}) {
		t.Fatalf("Impl = %+v, %v; want sudo 1.9.16p2", impl, err)
	}
	fakeSudo(t, path, "sudo-rs 0.2.5", 0)
	if impl, err := s.Impl(ctx); err != nil || impl != (SudoImpl{SudoRS, "0.2.5"}) {
		t.Fatalf("after sudo-rs replaced sudo: Impl = %+v, %v; want sudo-rs 0.2.5", impl, err)
	}
	fakeSudo(t, path, "doas 6.8", 0)
	if impl, err := s.Impl(ctx); err == nil {
		t.Fatalf("after doas replaced sudo: Impl = %+v, want an error", impl)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if impl, err := s.Impl(ctx); err == nil {
		t.Fatalf("after sudo was removed: Impl = %+v, want an error", impl)
	}
}
