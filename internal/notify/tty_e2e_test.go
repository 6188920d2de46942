package notify_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/consoletest"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
)

func TestMain(m *testing.M) { daemontest.Main(m) }

// ttyProbe is a notifier that reports what it can reach: its descriptors
// (listed before it opens anything), its pid and session, the tty_nr of
// /proc/self/stat, and whether /dev/tty opens. Once told to (the file
// "go"), it pushes the console's allow key into every terminal it holds
// with TIOCSTI, as an agent that traces its notifier would, and reports
// each attempt.
const ttyProbe = `#!/usr/bin/python3
import errno, fcntl, os, sys, termios, time
out = sys.argv[1]
def isopen(n):
    try:
        os.fstat(n)
        return True
    except OSError:
        return False
fds = [n for n in range(1024) if isopen(n)]
with open('/proc/self/stat') as f:
    tty_nr = f.read().rsplit(')', 1)[1].split()[4]
def err(e):
    return errno.errorcode.get(e.errno, str(e.errno))
try:
    tty = os.open('/dev/tty', os.O_RDWR | os.O_NOCTTY)
    devtty = 'opened'
except OSError as e:
    tty, devtty = None, err(e)
def put(name, lines):
    tmp = os.path.join(out, name + '.tmp')
    with open(tmp, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    os.rename(tmp, os.path.join(out, name))
put('probe', [str(os.getpid()), str(os.getsid(0)), tty_nr, devtty, ' '.join(map(str, fds)), os.readlink('/proc/self/fd/0')])
for _ in range(1200):
    if os.path.exists(os.path.join(out, 'go')):
        break
    time.sleep(0.05)
results = []
for name, fd in [(str(n), n) for n in fds] + ([('/dev/tty', tty)] if tty is not None else []):
    try:
        fcntl.ioctl(fd, termios.TIOCSTI, b'a')
        results.append(name + ' pushed')
    except OSError as e:
        results.append(name + ' ' + err(e))
put('sti', results)
`

// TestE2ENotifierCannotReachTheConsole: under agent-sudod --tty, on a real
// terminal, a notifier leads a session of its own with no controlling
// terminal (tty_nr 0, /dev/tty refused) and holds only descriptors 0, 1
// and 2, stdin being /dev/null; and its TIOCSTI of the allow key into every
// descriptor it has reaches no terminal, so the request waits for the
// human, who denies it.
func TestE2ENotifierCannotReachTheConsole(t *testing.T) {
	t.Parallel()
	testenv.NeedsRoot(t)
	testenv.NeedsTmux(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skipf("the probe notifier is a python3 script: %v", err)
	}
	dir, err := os.MkdirTemp("/run", "agent-sudo-notify-tty")
	if err != nil {
		t.Skipf("no directory only root can write: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	out := filepath.Join(dir, "out")
	for _, err := range []error{os.Chmod(dir, 0o755), os.Mkdir(out, 0o777), os.Chmod(out, 0o777)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	probe := filepath.Join(dir, "probe")
	testenv.WriteExecutable(t, probe, []byte(ttyProbe))

	d := daemontest.Configure(t, daemontest.Config{ApprovalTimeout: "60s",
		Extra: fmt.Sprintf("notify = [[%q, %q]]\nnotify_user = \"nobody\"\nnotify_timeout = \"2m\"\n", probe, out)})
	tm := d.Foreground(t)
	r := d.Ask(t, &proto.Request{Pipeline: [][]string{{"echo", "not allowed by a notifier"}}, Session: "tiocsti", Host: "e2e-host", Privileged: true})
	tm.WaitFor("command    echo 'not allowed by a notifier'")

	got := strings.Split(strings.TrimSuffix(testenv.WaitForFile(t, filepath.Join(out, "probe"), ""), "\n"), "\n")
	if len(got) != 6 {
		t.Fatalf("probe = %q, want 6 lines", got)
	}
	if got[1] != got[0] {
		t.Errorf("the notifier (pid %s) is in session %s: want a session of its own", got[0], got[1])
	}
	if got[2] != "0" {
		t.Errorf("the notifier's tty_nr is %s: want 0, no controlling terminal", got[2])
	}
	if got[3] != "ENXIO" {
		t.Errorf("opening /dev/tty in the notifier: %s, want ENXIO (no controlling terminal)", got[3])
	}
	if got[4] != "0 1 2" || got[5] != "/dev/null" {
		t.Errorf("the notifier's descriptors are %q, stdin %q: want exactly 0 1 2, stdin /dev/null", got[4], got[5])
	}

	// The keys are enabled: a key pushed now would decide.
	consoletest.WaitPastGuard(tm)
	if err := os.WriteFile(filepath.Join(out, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	sti := strings.Fields(strings.ReplaceAll(testenv.WaitForFile(t, filepath.Join(out, "sti"), ""), "\n", " "))
	if len(sti) == 0 {
		t.Fatalf("the probe tried no descriptor")
	}
	for i := 0; i+1 < len(sti); i += 2 {
		if sti[i+1] == "pushed" {
			t.Errorf("TIOCSTI into the notifier's descriptor %s pushed a key", sti[i])
		}
	}
	if legacy, err := os.ReadFile("/proc/sys/dev/tty/legacy_tiocsti"); err == nil && strings.TrimSpace(string(legacy)) == "0" {
		t.Logf("dev.tty.legacy_tiocsti is 0: this kernel refuses TIOCSTI to everyone without CAP_SYS_ADMIN, so the push proves nothing here; the probe's terminal checks above still do")
	}
	// Nothing decided the request: the human denies it, and that is what
	// the agent hears.
	consoletest.Press(t, tm, "d", "Note for the agent (optional)")
	consoletest.Press(t, tm, "Escape", "request "+r.ID+" was denied by")
	if resp := r.Wait(); resp.Status != proto.StatusDenied {
		t.Errorf("the request was answered %q %q; want denied by the human", resp.Status, resp.Message)
	}
	consoletest.Press(t, tm, "q", "exited with status 0")
}
