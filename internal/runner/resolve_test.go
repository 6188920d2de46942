package runner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// fixture builds a directory tree for the resolution tests and returns its
// real (symlink-free) root.
func fixture(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mk := func(rel string, mode os.FileMode) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(target, rel string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	mk("bin1/tool", 0o755)
	mk("bin1/plain", 0o644)
	mk("bin2/tool", 0o755)
	mk("bin2/plain", 0o755)
	mk("bin2/only2", 0o700)
	mk("multi/xtables-multi", 0o755)
	if err := os.MkdirAll(filepath.Join(root, "bin1/adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	ln("../multi/xtables-multi", "bin1/iptables")          // relative link
	ln(filepath.Join(root, "bin1/iptables"), "bin2/chain") // link to a link
	ln("missing", "bin1/dangling")
	ln("loop2", "bin1/loop1")
	ln("loop1", "bin1/loop2")
	ln(filepath.Join(root, "bin1"), "linkdir") // symlinked directory
	return root
}

func TestResolve(t *testing.T) {
	root := fixture(t)
	b1, b2 := filepath.Join(root, "bin1"), filepath.Join(root, "bin2")
	secure := b1 + ":" + b2
	multi := filepath.Join(root, "multi/xtables-multi")
	tests := []struct {
		argv0    string
		path     string
		wantPath string
		wantLink string
		wantErr  string
	}{
		{argv0: "tool", path: secure, wantPath: b1 + "/tool", wantLink: b1 + "/tool"},
		{argv0: "tool", path: b2 + ":" + b1, wantPath: b2 + "/tool", wantLink: b2 + "/tool"},
		{argv0: "only2", path: secure, wantPath: b2 + "/only2", wantLink: b2 + "/only2"},
		// Like execvp, a non-executable match is skipped.
		{argv0: "plain", path: secure, wantPath: b2 + "/plain", wantLink: b2 + "/plain"},
		{argv0: "iptables", path: secure, wantPath: multi, wantLink: b1 + "/iptables"},
		{argv0: "chain", path: secure, wantPath: multi, wantLink: b2 + "/chain"},
		{argv0: b1 + "/iptables", path: secure, wantPath: multi, wantLink: b1 + "/iptables"},
		{argv0: root + "/linkdir/tool", path: "/nonexistent", wantPath: b1 + "/tool", wantLink: root + "/linkdir/tool"},
		// Only clean paths: the rules compare strings and the human reads them.
		{argv0: root + "/bin2/../bin1/tool", path: secure, wantErr: "is not clean"},
		{argv0: b1 + "//tool", path: secure, wantErr: "is not clean"},
		{argv0: b1 + "/./tool", path: secure, wantErr: "is not clean"},
		{argv0: b1 + "/tool/", path: secure, wantErr: "is not clean"},
		{argv0: "/bin/sh", path: secure}, // absolute paths ignore the secure path
		{argv0: "", path: secure, wantErr: "empty"},
		{argv0: "bin1/tool", path: secure, wantErr: "relative path"},
		{argv0: "./tool", path: secure, wantErr: "relative path"},
		{argv0: "../tool", path: secure, wantErr: "relative path"},
		{argv0: ".", path: secure, wantErr: "not a program name"},
		{argv0: "..", path: secure, wantErr: "not a program name"},
		{argv0: "nosuch", path: secure, wantErr: "not found in the secure path"},
		{argv0: "tool", path: "", wantErr: "secure path is empty"},
		{argv0: "tool", path: "bin1", wantErr: "not an absolute directory"},
		{argv0: "sh", path: secure, wantErr: "not found"}, // never the daemon's PATH
		{argv0: b1 + "/plain", path: secure, wantErr: "not executable"},
		{argv0: b1 + "/adir", path: secure, wantErr: "not a regular file"},
		{argv0: "adir", path: b1, wantErr: "not a regular file"},
		{argv0: b1 + "/dangling", path: secure, wantErr: "no such file"},
		{argv0: b1 + "/loop1", path: secure, wantErr: "too many levels of symbolic links"},
		{argv0: b1 + "/nosuch", path: secure, wantErr: "no such file"},
		{argv0: "to\x00ol", path: secure, wantErr: "NUL"},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.argv0, root, "ROOT"), func(t *testing.T) {
			r, err := Resolve(tt.argv0, tt.path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Resolve = %+v, %v; want an error containing %q", r, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if tt.wantPath == "" { // only check it is absolute and real
				real, _ := filepath.EvalSymlinks(tt.argv0)
				tt.wantPath, tt.wantLink = real, tt.argv0
			}
			if r.Path != tt.wantPath || r.Link != tt.wantLink {
				t.Errorf("Resolve = %+v, want Path %s Link %s", r, tt.wantPath, tt.wantLink)
			}
		})
	}
}

func TestWalkTrusted(t *testing.T) {
	root := fixture(t)
	multi := filepath.Join(root, "multi/xtables-multi")
	// Everything under the temp directory is untrusted: /tmp is world
	// writable. The walk must still agree with EvalSymlinks.
	for _, p := range []string{
		root + "/bin1/iptables",
		root + "/bin2/chain",
		root + "/linkdir/iptables",
		root + "/bin2/../linkdir/../bin1/iptables",
	} {
		real, trusted, err := walkTrusted(p)
		if err != nil || real != multi || trusted {
			t.Errorf("walkTrusted(%s) = %s, %v, %v; want %s, false, nil", p, real, trusted, err, multi)
		}
	}
	for _, p := range []string{root + "/bin1/dangling", root + "/bin1/loop1", root + "/bin1/tool/x", "relative"} {
		if _, _, err := walkTrusted(p); err == nil {
			t.Errorf("walkTrusted(%s) succeeded", p)
		}
	}
	// System paths owned by root.
	for _, p := range []string{"/usr/bin/env", "/bin/sh", "/usr/bin/../bin/env"} {
		want, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Skipf("%s: %v", p, err)
		}
		real, trusted, err := walkTrusted(p)
		if err != nil || real != want {
			t.Errorf("walkTrusted(%s) = %s, %v; want %s", p, real, err, want)
		}
		if os.Geteuid() == 0 && !trusted {
			t.Errorf("walkTrusted(%s): system path not trusted", p)
		}
	}
}

func TestSudoProgram(t *testing.T) {
	root := fixture(t)
	multi := filepath.Join(root, "multi/xtables-multi")
	tests := []struct {
		name string
		c    Command
		want string
	}{
		{"no link", Command{Path: multi}, multi},
		{"link equals path", Command{Path: multi, Link: multi}, multi},
		{"untrusted link", Command{Path: multi, Link: root + "/bin1/iptables"}, multi},
		{"link to something else", Command{Path: "/usr/bin/env", Link: root + "/bin1/iptables"}, "/usr/bin/env"},
		{"dangling link", Command{Path: multi, Link: root + "/bin1/dangling"}, multi},
	}
	if real, err := filepath.EvalSymlinks("/bin/sh"); err == nil && real != "/bin/sh" && os.Geteuid() == 0 {
		tests = append(tests, struct {
			name string
			c    Command
			want string
		}{"trusted link", Command{Path: real, Link: "/bin/sh"}, "/bin/sh"})
	}
	for _, tt := range tests {
		if got := sudoProgram(tt.c); got != tt.want {
			t.Errorf("%s: sudoProgram = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestLookupTarget(t *testing.T) {
	root, err := LookupTarget("root")
	if err != nil {
		t.Fatalf("LookupTarget(root): %v", err)
	}
	if root.Name != "root" || root.UID != 0 || root.GID != 0 || root.Home == "" || len(root.Groups) == 0 || root.Groups[0] != 0 {
		t.Errorf("root = %+v", root)
	}
	if nobody, err := LookupTarget("nobody"); err == nil {
		if nobody.UID == 0 || !containsID(nobody.Groups, nobody.GID) {
			t.Errorf("nobody = %+v", nobody)
		}
	}
	for _, name := range []string{"", "no-such-user-agent-sudo", "0"} {
		if tg, err := LookupTarget(name); err == nil {
			t.Errorf("LookupTarget(%q) = %+v, want an error", name, tg)
		}
	}
}

func containsID(ids []uint32, id uint32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// TestResolveChain: every hop is recorded, as a list, and what someone
// other than root can write is reported.
func TestResolveChain(t *testing.T) {
	root := fixture(t)
	b1, b2 := filepath.Join(root, "bin1"), filepath.Join(root, "bin2")
	multi := filepath.Join(root, "multi/xtables-multi")
	tests := []struct {
		argv0 string
		chain []string
	}{
		{b1 + "/tool", []string{b1 + "/tool"}},
		{b1 + "/iptables", []string{b1 + "/iptables", b1 + "/../multi/xtables-multi", multi}},
		{b2 + "/chain", []string{b2 + "/chain", b1 + "/iptables", b1 + "/../multi/xtables-multi", multi}},
		{root + "/linkdir/tool", []string{root + "/linkdir/tool", b1 + "/tool"}},
	}
	for _, tt := range tests {
		r, err := Resolve(tt.argv0, "/nonexistent")
		if err != nil {
			t.Fatalf("Resolve(%s): %v", tt.argv0, err)
		}
		if !slices.Equal(r.Chain, tt.chain) {
			t.Errorf("Resolve(%s).Chain = %q, want %q", tt.argv0, r.Chain, tt.chain)
		}
		// The fixture lives under the world-writable temp directory.
		if len(r.Untrusted) == 0 {
			t.Errorf("Resolve(%s): nothing reported writable under %s", tt.argv0, root)
		}
	}
	// A name that contains " -> " is one hop.
	odd := filepath.Join(root, "d -> ", "usr", "bin")
	if err := os.MkdirAll(odd, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.WriteExecutable(t, filepath.Join(odd, "apt-get"), []byte("#!/bin/sh\n"))
	if err := os.Symlink("d -> /usr/bin/apt-get", filepath.Join(root, "apt-get")); err != nil {
		t.Fatal(err)
	}
	r, err := Resolve(filepath.Join(root, "apt-get"), "/nonexistent")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{root + "/apt-get", root + "/d -> /usr/bin/apt-get"}; !slices.Equal(r.Chain, want) {
		t.Errorf("chain %q, want %q", r.Chain, want)
	}
	// A program file owned by someone else is reported as such.
	if os.Geteuid() == 0 {
		p := filepath.Join(b1, "tool")
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		r, err := Resolve(p, "/nonexistent")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(r.Untrusted, func(w Writable) bool {
			return w.Path == p && strings.Contains(w.Why, "program file is owned by uid 65534")
		}) {
			t.Errorf("Untrusted = %+v, want the file owned by uid 65534", r.Untrusted)
		}
	}
	// System programs only root can change report nothing.
	if os.Geteuid() == 0 {
		if r, err := Resolve("/usr/bin/env", "/nonexistent"); err != nil || len(r.Untrusted) != 0 {
			t.Errorf("Resolve(/usr/bin/env) = %+v, %v; want nothing untrusted", r, err)
		}
	}
}
