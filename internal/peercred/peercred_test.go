package peercred

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
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
	if c.Controller != c.UID || len(c.UserNSOwners) != 0 {
		t.Errorf("a peer in the daemon's user namespace: controller %d, namespace owners %v; want %d, none", c.Controller, c.UserNSOwners, c.UID)
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

// TestController: the uid a peer counts as is the owner of the outermost
// user namespace a non-root user created around it; root's namespaces
// (containers root set up) leave the peer's own uid, never root.
func TestController(t *testing.T) {
	for _, tt := range []struct {
		name   string
		uid    uint32
		owners []uint32
		want   uint32
	}{
		{"the daemon's namespace", 1000, nil, 1000},
		{"root in the daemon's namespace", 0, nil, 0},
		{"a namespace of user 1000 (newuidmap)", 100005, []uint32{1000}, 1000},
		{"nested in a namespace of user 1000", 100007, []uint32{100000, 1000}, 1000},
		{"a container root made", 231072, []uint32{0}, 231072},
		{"uid 0 of a container root made is not root", 231072, []uint32{0, 0}, 231072},
		{"a user's namespace inside a container root made", 300005, []uint32{232072, 0}, 232072},
	} {
		if got := controller(tt.uid, tt.owners); got != tt.want {
			t.Errorf("%s: controller(%d, %v) = %d, want %d", tt.name, tt.uid, tt.owners, got, tt.want)
		}
	}
}

// TestGetInRootsUserNamespace: a peer in a user namespace that root
// created, as uid 0 inside mapped to uid 200000, is read with that
// namespace's owner (root) and counts as uid 200000, not as root.
func TestGetInRootsUserNamespace(t *testing.T) {
	testenv.NeedsRoot(t)
	const python = "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("%s is needed (the peer must be a program uid 200000 can run): %v", python, err)
	}
	// t.TempDir's parent is private to root; uid 200000 must reach it.
	dir, err := os.MkdirTemp("", "peercred")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chmod(sock, 0o777); err != nil {
		t.Fatal(err)
	}
	// The peer connects and waits for one byte, which it never gets: it
	// ends when the test closes the connection.
	cmd := exec.Command(python, "-c", "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.recv(1)", sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 200000, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: 200000, Size: 1}},
		Credential:  &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true},
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A peer that fails before it connects must not leave the test
	// waiting for a connection: its exit closes the listener.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); ln.Close() }()
	defer func() { <-exited }()
	defer cmd.Process.Kill()
	conn, err := ln.AcceptUnix()
	if err != nil {
		t.Fatalf("accept (did the peer fail to connect?): %v", err)
	}
	defer conn.Close()
	c, err := Get(conn)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if c.UID != 200000 || c.Controller != 200000 || !slices.Equal(c.UserNSOwners, []uint32{0}) {
		t.Errorf("Get = uid %d, controller %d, namespace owners %v; want 200000, 200000, [0]", c.UID, c.Controller, c.UserNSOwners)
	}
	// The path for kernels without PIDFD_GET_USER_NAMESPACE (before 6.11)
	// finds the same namespace, and refuses a process that has exited.
	pidfd, err := unix.PidfdOpen(int(c.PID), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	for _, viaProc := range []bool{false, true} {
		ns, err := userNSOf(pidfd, c.PID, viaProc)
		if err != nil {
			t.Fatalf("userNSOf(viaProc %v): %v", viaProc, err)
		}
		var own unix.Stat_t
		if err := unix.Stat("/proc/self/ns/user", &own); err != nil {
			t.Fatal(err)
		}
		if owners, err := walkUserNS(ns, own); err != nil || !slices.Equal(owners, []uint32{0}) {
			t.Errorf("viaProc %v: owners %v, %v; want [0]", viaProc, owners, err)
		}
	}
	_ = cmd.Process.Kill()
	<-exited
	exited <- nil // for the deferred receive
	if ns, err := userNSOf(pidfd, c.PID, true); err == nil {
		unix.Close(ns)
		t.Errorf("userNSOf(viaProc) of a process that has exited succeeded")
	}
}
