package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// secureTree makes a root-owned 0755 directory under /tmp (sticky and
// world-writable, as /tmp is) for the checks below; they need root, since
// ownership is what they check.
func secureTree(t *testing.T) string {
	t.Helper()
	testenv.NeedsRoot(t) // the directory checks are about ownership
	dir, err := os.MkdirTemp("", "asudo-dirs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCheckSecureDir(t *testing.T) {
	base := secureTree(t)
	mk := func(rel string, mode os.FileMode, uid int) string {
		p := filepath.Join(base, rel)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, -1); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := mk("ok", 0o755, 0)
	worldWritable := mk("ww", 0o777, 0)
	sticky := mk("sticky", 0o777|os.ModeSticky, 0)
	groupWritable := mk("gw", 0o775, 0)
	others := mk("others", 0o755, 65534)
	underOpen := mk("open", 0o777, 0)
	inOpen := filepath.Join(underOpen, "sub")
	if err := os.Mkdir(inOpen, 0o755); err != nil {
		t.Fatal(err)
	}
	inSticky := filepath.Join(sticky, "sub")
	if err := os.Mkdir(inSticky, 0o755); err != nil {
		t.Fatal(err)
	}
	rootLink := filepath.Join(base, "link")
	if err := os.Symlink(ok, rootLink); err != nil {
		t.Fatal(err)
	}
	agentLink := filepath.Join(sticky, "agentlink")
	if err := os.Symlink(ok, agentLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(agentLink, 65534, -1); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dir, want string // want "" means accepted
	}{
		{ok, ""},
		{inSticky, ""}, // a root-owned directory in a sticky one (like /tmp/x)
		{rootLink, ""}, // a root-owned link to a good directory (like /var/run)
		{"/tmp", "has mode 1777 (sticky, like /tmp: others can still create names in it)"},
		{worldWritable, "has mode 0777: others could plant or replace files there"},
		{sticky, "has mode 1777 (sticky"},
		{groupWritable, "has mode 0775"},
		{others, "is owned by uid 65534, not by root or the daemon's uid 0"},
		{inOpen, "has mode 0777 and is not sticky: others could rename what is in it"},
		{agentLink, "is owned by uid 65534"},
		{filepath.Join(base, "missing"), "no such file or directory"},
	}
	for _, tt := range tests {
		err := checkDir(tt.dir)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("checkDir(%s) = %v, want nil", tt.dir, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "socket directory "+tt.dir)):
			t.Errorf("checkDir(%s) = %v, want an error naming it and containing %q", tt.dir, err, tt.want)
		}
	}
}

func TestOpenLogFile(t *testing.T) {
	base := secureTree(t)
	// A planted symbolic link at the log path is not followed.
	target := filepath.Join(base, "target")
	if err := os.WriteFile(target, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link.log")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenLogFile(link); err == nil || !strings.Contains(err.Error(), "is a symbolic link; refusing to follow it") {
		if f != nil {
			f.Close()
		}
		t.Errorf("OpenLogFile(symlink) = %v, want refused", err)
	}
	// A hard link to another file is refused.
	hard := filepath.Join(base, "hard.log")
	if err := os.Link(target, hard); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLogFile(hard); err == nil || !strings.Contains(err.Error(), "has 2 hard links") {
		t.Errorf("OpenLogFile(hard link) = %v, want refused", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious\n" {
		t.Errorf("the link target was changed: %q", b)
	}
	// A file owned by someone else is refused.
	theirs := filepath.Join(base, "theirs.log")
	if err := os.WriteFile(theirs, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLogFile(theirs); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("OpenLogFile(other owner) = %v, want refused", err)
	}
	// A log in a world-writable (even sticky) directory is refused.
	if _, err := OpenLogFile("/tmp/asudo-test-agent-sudod.log"); err == nil || !strings.Contains(err.Error(), "log directory /tmp has mode 1777") {
		t.Errorf("OpenLogFile in /tmp = %v, want refused", err)
	}
	// A fresh file in a good directory is created 0600 and appended to.
	good := filepath.Join(base, "sub", "agent-sudod.log")
	f, err := OpenLogFile(good)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fi, _ := f.Stat(); fi.Mode().Perm() != 0o600 {
		t.Errorf("new log file mode %v, want 0600", fi.Mode().Perm())
	}
}
