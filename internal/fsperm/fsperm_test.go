package fsperm_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/internal/fsperm"
)

const why = "whoever can write it can do harm"

// noStat is an fs.FileInfo without ownership information.
type noStat struct{ mode fs.FileMode }

func (n noStat) Name() string       { return "x" }
func (n noStat) Size() int64        { return 0 }
func (n noStat) Mode() fs.FileMode  { return n.mode }
func (n noStat) ModTime() time.Time { return time.Time{} }
func (n noStat) IsDir() bool        { return n.mode.IsDir() }
func (n noStat) Sys() any           { return nil }

func TestFileAndDir(t *testing.T) {
	root := os.Geteuid() == 0
	tests := []struct {
		name     string
		dir      bool // check with Dir rather than File
		rootOnly bool // needs root to set up
		setup    func(t *testing.T, p string)
		want     string // "" for no error
	}{
		{name: "private file", setup: file(0o600)},
		{name: "file readable by all", setup: file(0o644)},
		{name: "file writable by group", setup: file(0o664), want: "thing is writable by group or others (mode 0664): " + why + "; run chmod go-w on it"},
		{name: "file writable by others", setup: file(0o602), want: "thing is writable by group or others (mode 0602)"},
		{name: "file with two links", setup: func(t *testing.T, p string) {
			file(0o600)(t, p)
			must(t, os.Link(p, p+".2"))
		}, want: "thing has 2 hard links: " + why},
		{name: "file owned by another user", rootOnly: true, setup: func(t *testing.T, p string) {
			file(0o600)(t, p)
			must(t, os.Chown(p, 65534, 0))
		}, want: "thing is owned by uid 65534, not root: " + why + "; run chown root on it"},
		{name: "fifo", setup: func(t *testing.T, p string) { must(t, unix.Mkfifo(p, 0o600)) }, want: "thing is not a regular file"},
		{name: "directory as a file", setup: dir(0o700), want: "thing is not a regular file"},
		{name: "private directory", dir: true, setup: dir(0o700)},
		{name: "directory readable by all", dir: true, setup: dir(0o755)},
		{name: "directory writable by group", dir: true, setup: dir(0o770), want: "thing is writable by group or others (mode 0770)"},
		{name: "sticky directory writable by all", dir: true, setup: dir(0o1777), want: "thing is writable by group or others (mode 0777)"},
		{name: "directory owned by another user", dir: true, rootOnly: true, setup: func(t *testing.T, p string) {
			dir(0o700)(t, p)
			must(t, os.Chown(p, 65534, 0))
		}, want: "thing is owned by uid 65534, not root"},
		{name: "file as a directory", dir: true, setup: file(0o600), want: "thing is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.rootOnly && !root {
				t.Skip("needs root to give the file to another user")
			}
			p := filepath.Join(t.TempDir(), "x")
			tt.setup(t, p)
			fi, err := os.Lstat(p)
			must(t, err)
			check := fsperm.File
			if tt.dir {
				check = fsperm.Dir
			}
			err = check("thing", fi, why)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestOwnFile: a file the process writes as its own must be owned by the
// process's user; root owning it is enough only when that user is root.
func TestOwnFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "own")
	file(0o600)(t, p)
	fi, err := os.Lstat(p)
	must(t, err)
	if err := fsperm.OwnFile("thing", fi, why); err != nil {
		t.Errorf("OwnFile of a file this process created = %v, want nil", err)
	}
	if os.Geteuid() == 0 {
		must(t, os.Chown(p, 65534, 0))
		fi, err := os.Lstat(p)
		must(t, err)
		if err := fsperm.OwnFile("thing", fi, why); err == nil || !strings.Contains(err.Error(), "thing is owned by uid 65534, not root") {
			t.Errorf("OwnFile of a file owned by uid 65534 = %v, want refused", err)
		}
		return
	}
	// Not root: a root-owned file passes File but not OwnFile.
	fi, err = os.Stat("/etc/hostname")
	if err != nil {
		t.Skip("no /etc/hostname to try a root-owned file with")
	}
	if err := fsperm.File("thing", fi, why); err != nil {
		t.Skipf("File(/etc/hostname) = %v; it is not a root-owned, singly linked 0644 file here", err)
	}
	if err := fsperm.OwnFile("thing", fi, why); err == nil || !strings.Contains(err.Error(), "not this process's user") {
		t.Errorf("OwnFile of a root-owned file, not running as root = %v, want refused", err)
	}
}

// TestProgram: a program the daemon runs as itself must be a regular,
// executable file that only root or the daemon's user can change; unlike a
// file it writes, it may have several links.
func TestProgram(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, p string)
		want  string // "" for no error
	}{
		{"executable", file(0o755), ""},
		{"owner only", file(0o700), ""},
		{"two links", func(t *testing.T, p string) {
			file(0o755)(t, p)
			must(t, os.Link(p, p+".2"))
		}, ""},
		{"not executable", file(0o644), "thing is not executable (mode 0644); run chmod u+x on it"},
		{"writable by group", file(0o775), "thing is writable by group or others (mode 0775): " + why + "; run chmod go-w on it"},
		{"a directory", dir(0o755), "thing is not a regular file"},
		{"a symbolic link", func(t *testing.T, p string) { must(t, os.Symlink("/bin/true", p)) }, "thing is not a regular file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x")
			tt.setup(t, p)
			fi, err := os.Lstat(p)
			must(t, err)
			err = fsperm.Program("thing", fi, why)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestNoOwnershipFailsClosed: a FileInfo that does not say who owns the
// file is refused, not passed.
func TestNoOwnershipFailsClosed(t *testing.T) {
	if err := fsperm.File("thing", noStat{mode: 0o600}, why); err == nil || !strings.Contains(err.Error(), "no ownership information") {
		t.Errorf("File without Stat_t = %v, want refused", err)
	}
	if err := fsperm.Dir("thing", noStat{mode: fs.ModeDir | 0o700}, why); err == nil || !strings.Contains(err.Error(), "no ownership information") {
		t.Errorf("Dir without Stat_t = %v, want refused", err)
	}
}

func file(mode fs.FileMode) func(t *testing.T, p string) {
	return func(t *testing.T, p string) {
		must(t, os.WriteFile(p, nil, 0o600))
		must(t, os.Chmod(p, mode))
	}
}

func dir(mode fs.FileMode) func(t *testing.T, p string) {
	return func(t *testing.T, p string) {
		must(t, os.Mkdir(p, 0o700))
		must(t, os.Chmod(p, mode))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
