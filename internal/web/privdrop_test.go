package web

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"golang.org/x/sys/unix"
)

// TestDetachTerminal: a process whose controlling terminal is a real pty
// (a session leader on it, as under sudo's use_pty, the harder case: giving
// up the terminal hangs up its group) survives DetachTerminal, has no
// controlling terminal after it (open /dev/tty fails with ENXIO; TIOCSTI
// into the terminal it still holds for its log is refused), and reads
// /dev/null on its standard input. The child is this test binary, run
// again with AGENT_SUDO_DETACH_PROBE set.
func TestDetachTerminal(t *testing.T) {
	if out := os.Getenv("AGENT_SUDO_DETACH_PROBE"); out != "" {
		detachProbe(out)
		return
	}
	ptmx, pts, _ := testenv.Pty(t, 0, 0)
	dir, err := os.MkdirTemp("", "detach")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	out := dir + "/probe"
	cmd := exec.Command(os.Args[0], "-test.run=^TestDetachTerminal$")
	cmd.Env = append(os.Environ(), "AGENT_SUDO_DETACH_PROBE="+out)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	go func() { _, _ = ptmx.WriteTo(discard{}) }() // keep the pty drained
	if err := cmd.Run(); err != nil {
		t.Fatalf("the probe did not end well (a hangup would kill it): %v", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{"before: tty ok", "detach: ok", "after: /dev/tty ENXIO", "stdin: /dev/null", "tiocsti: refused"} {
		if !strings.Contains(got, want) {
			t.Errorf("the probe reported %q, want it to contain %q", got, want)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// detachProbe runs in the child: it writes what it finds to the file out.
func detachProbe(out string) {
	var r []string
	if fd, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_NOCTTY, 0); err == nil {
		r = append(r, "before: tty ok")
		unix.Close(fd)
	} else {
		r = append(r, fmt.Sprintf("before: %v", err))
	}
	// As the web approver does: root drops to nobody, which also takes
	// away CAP_SYS_ADMIN, with which TIOCSTI works on any terminal.
	drop := DetachTerminal
	if os.Geteuid() == 0 {
		drop = func() error { return DropPrivileges(65534, 65534) }
	}
	if err := drop(); err != nil {
		r = append(r, fmt.Sprintf("detach: %v", err))
	} else {
		r = append(r, "detach: ok")
	}
	if _, err := unix.Open("/dev/tty", unix.O_RDWR|unix.O_NOCTTY, 0); errors.Is(err, unix.ENXIO) {
		r = append(r, "after: /dev/tty ENXIO")
	} else {
		r = append(r, fmt.Sprintf("after: /dev/tty %v", err))
	}
	var in, null unix.Stat_t
	if unix.Fstat(0, &in) == nil && unix.Stat("/dev/null", &null) == nil && in.Rdev == null.Rdev && in.Mode&unix.S_IFMT == unix.S_IFCHR {
		r = append(r, "stdin: /dev/null")
	}
	b := byte('x')
	if err := unix.IoctlSetPointerInt(1, unix.TIOCSTI, int(b)); err != nil {
		r = append(r, "tiocsti: refused ("+err.Error()+")")
	} else {
		r = append(r, "tiocsti: accepted")
	}
	// The file is written by nobody after the drop: into a directory
	// the parent made writable for it.
	_ = os.WriteFile(out, []byte(strings.Join(r, "\n")), 0o644)
}

// TestArmParentDeath: ArmParentDeath leaves SIGKILL as the calling
// thread's parent-death signal (PR_GET_PDEATHSIG), and says the parent is
// gone when the parent is not the one named (as when it died before the
// signal was armed again and the process was given to another).
func TestArmParentDeath(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() { _ = unix.Prctl(unix.PR_SET_PDEATHSIG, 0, 0, 0, 0) }()
	if err := ArmParentDeath(os.Getppid()); err != nil {
		t.Fatalf("with the parent alive: %v", err)
	}
	var sig int32
	if err := unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	if syscall.Signal(sig) != syscall.SIGKILL {
		t.Fatalf("the parent-death signal is %d, want SIGKILL", sig)
	}
	err := ArmParentDeath(os.Getppid() + 1)
	if err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Fatalf("with another parent: err %v, want one saying the parent is gone", err)
	}
}
