package daemon_test

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
	"golang.org/x/sys/unix"
)

// notifierDir makes a directory only root can write, on a path only root
// can change (a notifier elsewhere is refused), holding the two notifiers
// of TestE2ENotify, and a subdirectory every user can write to for what
// they record.
func notifierDir(t *testing.T) (record, hang, out string) {
	t.Helper()
	dir, err := os.MkdirTemp("/run", "agent-sudo-notify-e2e")
	if err != nil {
		t.Skipf("no directory only root can write: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	out = filepath.Join(dir, "out")
	for _, err := range []error{os.Chmod(dir, 0o755), os.Mkdir(out, 0o777), os.Chmod(out, 0o777)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		testenv.WriteExecutable(t, p, []byte("#!/bin/sh\n"+body))
		return p
	}
	// record writes its arguments (NUL-separated), its uid and its
	// environment into out, in files named after the request id. Each
	// argument after out starts with two characters of fixed text (a
	// placeholder may not start an argument), which it drops.
	record = write("record", `out="$1"; id="${2#??}"; shift 2
id -u > "$out/$id.uid.tmp"; env > "$out/$id.env.tmp"
for a in "$@"; do printf '%s\0' "${a#??}"; done > "$out/$id.argv.tmp"
for f in uid env argv; do mv "$out/$id.$f.tmp" "$out/$id.$f"; done
`)
	// hang says it runs, then never ends.
	hang = write("hang", `id="${2#??}"; echo $$ > "$1/$id.hang.tmp"; mv "$1/$id.hang.tmp" "$1/$id.hang"; exec sleep 1000`)
	return record, hang, out
}

// processExited waits up to a minute for pid to exit and reports whether
// it did.
func processExited(pid int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return true // gone already
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 60_000)
		if err != unix.EINTR {
			return n > 0
		}
	}
}

// TestE2ENotify: a request that starts waiting for a human runs every
// notifier, as notify_user with a clean environment, its arguments
// carrying the agent's values escaped and bounded; a notifier that hangs
// holds up nothing (the request is decided and answered while it still
// runs) and is killed at notify_timeout; requests that rules decide run no
// notifier; a reload applies a new notify list.
func TestE2ENotify(t *testing.T) {
	t.Parallel()
	record, hang, out := notifierDir(t)
	notifyKeys := func(timeout string, cmds ...[]string) string {
		var b strings.Builder
		b.WriteString("notify = [")
		for i, c := range cmds {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("[")
			for j, a := range c {
				if j > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%q", a)
			}
			b.WriteString("]")
		}
		return b.String() + "]\nnotify_user = \"nobody\"\nnotify_timeout = \"" + timeout + "\"\n"
	}
	recordArgv := []string{record, out, "i={id}", "s={session}", "c={command}", "r={reason}", "h={host}", "u={user} {uid} {run_as}"}
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "60s",
		Extra: notifyKeys("10m", recordArgv, []string{hang, out, "i={id}"}),
		Rules: `
[[rule]]
name = "true"
action = "allow"
match = ["true"]
[[rule]]
name = "false"
action = "deny"
match = ["false"]
`})
	c := daemontest.Dial(t, d.ApproverSocket)

	// Rules decide these two: nobody waits, nobody is notified.
	if resp := d.Run(&proto.Request{ID: "ruled-allow", Pipeline: [][]string{{"true"}}, Privileged: true}); resp.Status != proto.StatusOK {
		t.Fatalf("ruled-allow: %s %q", resp.Status, resp.Message)
	}
	if resp := d.Run(&proto.Request{ID: "ruled-deny", Pipeline: [][]string{{"false"}}, Privileged: true}); resp.Status != proto.StatusDenied {
		t.Fatalf("ruled-deny: %s %q", resp.Status, resp.Message)
	}

	hostile := &proto.Request{ID: "hostile-1",
		Session:  "s{command}\r\nFAKE: approved\x1b]0;pwned\x07{",
		Host:     "h\u202eost",
		Reason:   "line one\nline two\x1b[2J" + strings.Repeat("R", 3000),
		Pipeline: [][]string{{"echo", "\x1b[31m{session}", strings.Repeat("x\x1b", 1000)}}, Privileged: true}
	done := d.Ask(t, hostile).Done
	p := c.Pending(hostile.ID)
	// The hanging notifier runs: the request is still decided at once.
	hangPid, _ := strconv.Atoi(strings.TrimSpace(testenv.WaitForFile(t, filepath.Join(out, "hostile-1.hang"), "")))
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.DenyOnce})
	if r := c.Result(p.ID); !r.OK {
		t.Fatalf("decision refused: %+v", r)
	}
	if resp := <-done; resp.Status != proto.StatusDenied {
		t.Fatalf("hostile-1: %s %q, want denied", resp.Status, resp.Message)
	}
	if err := syscall.Kill(hangPid, 0); err != nil {
		t.Fatalf("the hanging notifier (pid %d) is gone already (%v): the test shows nothing", hangPid, err)
	}

	// What the recording notifier got.
	testenv.WaitForFile(t, filepath.Join(out, "hostile-1.argv"), "")
	raw, _ := os.ReadFile(filepath.Join(out, "hostile-1.argv"))
	argv := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	if len(argv) != 5 {
		t.Fatalf("argv = %q, want 5 arguments", argv)
	}
	for i, a := range argv {
		for j, r := range a {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == '\u202e' {
				t.Errorf("argument %d holds %U at byte %d: %q", i, r, j, a)
			}
		}
		if len(a) > 3*256+2 {
			t.Errorf("argument %d is %d bytes: %q", i, len(a), a)
		}
	}
	if want := `s{command}\r\nFAKE: approved\x1b]0;pwned\x07{`; argv[0] != want {
		t.Errorf("session argument %q, want %q", argv[0], want)
	}
	if want := `echo $'\x1b[31m{session}' $'x\x1bx\x1b`; !strings.HasPrefix(argv[1], want) || !strings.HasSuffix(argv[1], "...") || len(argv[1]) > 256 {
		t.Errorf("command argument %q, want it to start %q and be cut to 256 bytes with ...", argv[1], want)
	}
	if want := `line one\nline two\x1b[2JRRR`; !strings.HasPrefix(argv[2], want) || len(argv[2]) > 256 {
		t.Errorf("reason argument %q, want it to start %q, at most 256 bytes", argv[2], want)
	}
	if argv[3] != `h\u202eost` || argv[4] != "root 0 root" {
		t.Errorf("host, user uid run_as = %q, %q; want %q, %q", argv[3], argv[4], `h\u202eost`, "root 0 root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	if uid := strings.TrimSpace(testenv.WaitForFile(t, filepath.Join(out, "hostile-1.uid"), "")); uid != nobody.Uid {
		t.Errorf("the notifier ran as uid %s, want nobody's, %s", uid, nobody.Uid)
	}
	env := strings.Split(strings.TrimSpace(testenv.WaitForFile(t, filepath.Join(out, "hostile-1.env"), "")), "\n")
	env = slices.DeleteFunc(env, func(l string) bool { // set by sh itself
		return strings.HasPrefix(l, "PWD=") || strings.HasPrefix(l, "SHLVL=") || strings.HasPrefix(l, "OLDPWD=") || strings.HasPrefix(l, "_=")
	})
	slices.Sort(env)
	if want := []string{"HOME=/", "LANG=C.UTF-8", "LOGNAME=nobody", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "USER=nobody"}; !slices.Equal(env, want) {
		t.Errorf("the notifier's environment is %q, want %q", env, want)
	}
	for _, id := range []string{"ruled-allow", "ruled-deny"} {
		if _, err := os.Stat(filepath.Join(out, id+".argv")); err == nil {
			t.Errorf("a notifier ran for %s, which a rule decided", id)
		}
	}

	// A reload applies a new list: only the hanging notifier, now with a
	// short timeout, at which it is killed.
	text, err := os.ReadFile(d.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	text = []byte(strings.Replace(string(text), notifyKeys("10m", recordArgv, []string{hang, out, "i={id}"}), notifyKeys("1s", []string{hang, out, "i={id}"}), 1))
	if err := os.WriteFile(d.ConfigPath, text, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	d.WaitLog("msg=reloaded")
	done = d.Ask(t, &proto.Request{ID: "after-reload", Pipeline: [][]string{{"id"}}, Privileged: true}).Done
	p = c.Pending("after-reload")
	pid, _ := strconv.Atoi(strings.TrimSpace(testenv.WaitForFile(t, filepath.Join(out, "after-reload.hang"), "")))
	d.WaitLog(`msg="notifier timed out: its process group was killed" notifier=0 program=` + hang + ` id=after-reload notify_timeout=1s`)
	if !processExited(pid) {
		t.Errorf("the notifier that timed out (pid %d) still runs", pid)
	}
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.DenyOnce})
	if resp := <-done; resp.Status != proto.StatusDenied {
		t.Errorf("after-reload: %s %q, want denied", resp.Status, resp.Message)
	}
	if _, err := os.Stat(filepath.Join(out, "after-reload.argv")); err == nil {
		t.Errorf("the recording notifier ran after a reload that removed it")
	}
	// The first hanging notifier (timeout 10m, the longest allowed) ends with the daemon.
	d.Stop()
	if !processExited(hangPid) {
		t.Errorf("the hanging notifier (pid %d) outlived the daemon", hangPid)
	}
}
