package packaging_test

import (
	"compress/gzip"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMakeInstallAsThePackage: what docs/install.md says of make install
// and make uninstall. make install (PREFIX=/usr) installs the files the
// package does (nfpm.yaml's destinations; changelog.gz is the Debian
// package's own), the units' ExecStart naming $(PREFIX)/bin (the daemon's
// and the web approver's), and keeps an existing /etc/agent-sudo/config.toml
// and /etc/agent-sudo/web.toml; make uninstall removes what it installed but
// /etc/agent-sudo. It installs stand-ins for what make build man makes
// (BIN and DIST), so it builds nothing.
func TestMakeInstallAsThePackage(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	built := t.TempDir()
	for _, f := range []string{"bin/agent-sudod", "bin/agent-sudo", "dist/config.toml"} {
		write(t, filepath.Join(built, f), "stand-in\n")
	}
	for _, m := range []string{"agent-sudo.1", "agent-sudod.8", "agent-sudo.toml.5"} {
		p := filepath.Join(built, "dist/man", m+".gz")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		zw := gzip.NewWriter(f)
		_, _ = zw.Write([]byte(".TH stand-in\n"))
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	makeIn := func(dest, prefix string, target string) {
		t.Helper()
		cmd := exec.Command("make", "-s", "--no-print-directory", "-C", "..", target,
			"DESTDIR="+dest, "PREFIX="+prefix, "BIN="+filepath.Join(built, "bin"), "DIST="+filepath.Join(built, "dist"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %s DESTDIR=%s PREFIX=%s: %v\n%s", target, dest, prefix, err, out)
		}
	}

	// The package's files.
	nfpm, err := os.ReadFile(nfpmConfig)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range strings.Split(string(nfpm), "\n") {
		d, ok := strings.CutPrefix(strings.TrimSpace(l), "dst: ")
		if !ok || d == "/usr/share/doc/agent-sudo/changelog.gz" {
			continue
		}
		if strings.HasSuffix(d, "/") { // a directory of docs/*.md
			mds, err := filepath.Glob("../docs/*.md")
			if err != nil || len(mds) == 0 {
				t.Fatalf("docs/*.md: %v", err)
			}
			for _, md := range mds {
				want = append(want, d+filepath.Base(md))
			}
			continue
		}
		want = append(want, d)
	}
	slices.Sort(want)

	dest := t.TempDir()
	makeIn(dest, "/usr", "install")
	if got := files(t, dest); !slices.Equal(got, want) {
		t.Errorf("make install PREFIX=/usr installs\n %q\nthe package installs\n %q", got, want)
	}

	// Another PREFIX: the units start the binaries there.
	local := t.TempDir()
	makeIn(local, "/usr/local", "install")
	for unit, line := range map[string]string{
		"agent-sudo.service":     "ExecStart=/usr/local/bin/agent-sudod",
		"agent-sudo-web.service": "ExecStart=/usr/local/bin/agent-sudo approve web serve --config /etc/agent-sudo/web.toml",
	} {
		b, err := os.ReadFile(filepath.Join(local, "usr/lib/systemd/system", unit))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(strings.Split(string(b), "\n"), line) {
			t.Errorf("make install PREFIX=/usr/local: %s has no line %q", unit, line)
		}
	}

	// The settings a human edited are kept.
	for _, f := range []string{"etc/agent-sudo/config.toml", "etc/agent-sudo/web.toml"} {
		write(t, filepath.Join(local, f), "# edited by a human\n")
	}
	makeIn(local, "/usr/local", "install")
	for _, f := range []string{"etc/agent-sudo/config.toml", "etc/agent-sudo/web.toml"} {
		if b, err := os.ReadFile(filepath.Join(local, f)); err != nil || string(b) != "# edited by a human\n" {
			t.Errorf("make install again: /%s is %q, %v; want the human's file kept", f, b, err)
		}
	}

	// make uninstall leaves /etc/agent-sudo only.
	makeIn(local, "/usr/local", "uninstall")
	if got, want := files(t, local), []string{"/etc/agent-sudo/config.toml", "/etc/agent-sudo/web.toml"}; !slices.Equal(got, want) {
		t.Errorf("after make uninstall, left: %q; want %q", got, want)
	}
}

// write writes text to path, making its directory.
func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// files lists the regular files under root, as absolute paths of the
// installed system, sorted.
func files(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			out = append(out, "/"+strings.TrimPrefix(p, root+"/"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}
