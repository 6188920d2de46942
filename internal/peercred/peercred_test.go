package peercred

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestGetReadsOwnCredentials(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	conn, err := ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	c, err := Get(conn)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if c.UID != uint32(os.Getuid()) || c.GID != uint32(os.Getgid()) || int(c.PID) != os.Getpid() {
		t.Errorf("Get = %+v, want uid %d gid %d pid %d", c, os.Getuid(), os.Getgid(), os.Getpid())
	}
	self, _ := os.Executable()
	if c.Exe != self {
		t.Errorf("Exe = %q, want %q", c.Exe, self)
	}
	groups, _ := os.Getgroups()
	if len(c.Groups) != len(groups) {
		t.Errorf("Groups = %v, want %v", c.Groups, groups)
	}
	for _, g := range groups {
		if !c.InGroup(uint32(g)) {
			t.Errorf("InGroup(%d) = false for one of our groups", g)
		}
	}
	if !c.InGroup(c.GID) || c.InGroup(0xfffffff0) {
		t.Error("InGroup wrong for primary or absent group")
	}
	if c.User() == "" {
		t.Error("User() empty")
	}
}

// TestExeOf: a /proc/PID/exe that cannot be read is described by its cause,
// and an error that wraps nothing is described as it is, not a panic.
func TestExeOf(t *testing.T) {
	for _, tt := range []struct {
		target string
		err    error
		want   string
	}{
		{"/usr/bin/agent", nil, "/usr/bin/agent"},
		{"", &fs.PathError{Op: "readlink", Path: "/proc/1/exe", Err: fs.ErrNotExist}, "(unknown: file does not exist)"},
		{"", errors.New("no proc"), "(unknown: no proc)"},
	} {
		if got := exeOf(tt.target, tt.err); got != tt.want {
			t.Errorf("exeOf(%q, %v) = %q, want %q", tt.target, tt.err, got, tt.want)
		}
	}
}
