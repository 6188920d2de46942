package procinfo

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// TestParseStartTime: field 22 of /proc/PID/stat is read after the last
// ")", whatever comm holds; a short or malformed line is refused saying
// what was wrong.
func TestParseStartTime(t *testing.T) {
	tail := " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 777 19 20"
	for _, tt := range []struct {
		line    string
		want    uint64
		wantErr string
	}{
		{"42 (sleep)" + tail, 777, ""},
		{"42 (a) b) S (c)" + tail, 777, ""},
		{"42 sleep" + tail, 0, "no (comm)"},
		{"42 (sleep) S 1 2 3", 0, "4 fields after comm, want at least 20"},
		{"42 (sleep) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x", 0, "starttime"},
	} {
		got, err := parseStartTime([]byte(tt.line))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseStartTime(%q) = %d, %v; want an error with %q", tt.line, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseStartTime(%q) = %d, %v; want %d", tt.line, got, err, tt.want)
		}
	}
}

// TestPinCheck: a pinned process is the same while it runs the program it
// ran when pinned; Check says so once it has exec'd another program (was,
// now) and once it has exited. The pin is taken through pidfd_open (the
// "connection" is a pipe, not a socket, so SO_PEERPIDFD fails), as on a
// kernel without SO_PEERPIDFD.
func TestPinCheck(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "read _; exec /bin/sleep 60")
	w, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := int32(cmd.Process.Pid)
	var p Proc
	// The child is pinned once it runs sh (not while it is still this
	// test's fork): wait for its exe to be sh's.
	sh := p.Exe(pid)
	waitFor(t, "the child to run sh", func() bool {
		sh = p.Exe(pid)
		return strings.HasSuffix(sh, "sh") || strings.HasSuffix(sh, "dash") || strings.HasSuffix(sh, "bash")
	})
	r, _, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pin := PinPeer(r, pid)
	defer pin.Close()
	if pin.fd < 0 {
		t.Fatalf("no pidfd for pid %d: %s", pid, pin.err)
	}
	if got := pin.Check(); got != "" {
		t.Fatalf("Check of the unchanged process = %q, want \"\"", got)
	}

	if _, err := w.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the child to exec sleep", func() bool { return strings.HasSuffix(p.Exe(pid), "/sleep") })
	want := ChangedExec + " (pid " + itoa(pid) + "): was " + sh + ", now " + p.Exe(pid)
	if got := pin.Check(); got != want {
		t.Errorf("Check after exec = %q, want %q", got, want)
	}

	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	want = ChangedExited + " (pid " + itoa(pid) + ", was " + sh + ")"
	if got := pin.Check(); got != want {
		t.Errorf("Check after exit = %q, want %q", got, want)
	}
	// A process that is gone when it is pinned is marked at once.
	late := PinPeer(r, pid)
	defer late.Close()
	if got := late.Check(); !strings.HasPrefix(got, ChangedExited) || !strings.Contains(got, "before its connection was accepted") {
		t.Errorf("Check of a pin of an exited process = %q, want %q … before its connection was accepted", got, ChangedExited)
	}
}

func itoa(pid int32) string { return strconv.Itoa(int(pid)) }

// waitFor polls cond every 5 ms for at most a minute: the event (an exec,
// seen in /proc) has no notification to wait on.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 12000 {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// FuzzParseStartTime: any bytes from /proc/PID/stat are parsed without a
// panic, and a start time is only ever a whole field after the last ")".
func FuzzParseStartTime(f *testing.F) {
	f.Add([]byte("42 (sleep) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 777 19 20"))
	f.Add([]byte("42 (a) b) S (c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 99999999999999999999"))
	f.Add([]byte(")("))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseStartTime(b)
		if err != nil {
			return
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if n, perr := strconv.ParseUint(f[19], 10, 64); perr != nil || n != v {
			t.Fatalf("parseStartTime(%q) = %d, but field 22 is %q", b, v, f[19])
		}
	})
}

// TestPinCheckDeletedExe: a requester whose program file is removed while
// it runs (a package upgrade) still runs the file it was pinned with: the
// kernel's " (deleted)" after the path is no change.
func TestPinCheckDeletedExe(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "sleep")
	testenv.CopyExecutable(t, "/bin/sleep", prog)
	cmd := exec.Command(prog, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := int32(cmd.Process.Pid)
	var p Proc
	waitFor(t, "the child to run "+prog, func() bool { return p.Exe(pid) == prog })
	r, _, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pin := PinPeer(r, pid)
	defer pin.Close()
	if err := os.Remove(prog); err != nil {
		t.Fatal(err)
	}
	if exe := p.Exe(pid); exe != prog+" (deleted)" {
		t.Fatalf("exe after removing the file = %q, want %q", exe, prog+" (deleted)")
	}
	if got := pin.Check(); got != "" {
		t.Errorf("Check after the program file was removed = %q, want \"\"", got)
	}
}
