package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// TestApproveWebEnrollPortInUse: when the web approver (here, any
// listener) holds the port, enrol says which address and what to do.
func TestApproveWebEnrollPortInUse(t *testing.T) {
	testenv.NeedsRoot(t)
	port := testenv.FreePrivilegedPort(t)
	ln, err := net.Listen("tcp", "[::1]:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := "localhost:" + port
	keys := filepath.Join(t.TempDir(), "passkeys")
	inUse := "agent-sudo: approve web enroll: [::1]:" + port + " (an address of localhost) is in use, by the web approver (agent-sudo approve --web) or another program: " +
		"enrol on another port below 1024 of the same host, for the web approver's URL, which keeps serving ("
	for _, tt := range []struct {
		name   string
		flags  []string
		advice string
	}{
		{"plain HTTP: the web approver's URL is http", []string{"--no-tls"}, "--web localhost:OTHERPORT --for http://" + addr + ")"},
		{"TLS", nil, "--web localhost:OTHERPORT --for https://" + addr + ")"},
		{"--origin: the web approver's URL is it, and it moves too", []string{"--origin", "https://phone.example"},
			"--web localhost:OTHERPORT --origin URL --for https://phone.example, where --origin is the URL that reaches OTHERPORT, not https://phone.example)"},
	} {
		args := append([]string{"approve", "web", "enroll", "alice", "--web", addr, "--passkeys", keys}, tt.flags...)
		got := runCLI(context.Background(), nil, args...)
		want := inUse + tt.advice
		if got.code != exitUnavailable || !strings.HasPrefix(got.stderr, want) {
			t.Errorf("%s: enroll on a taken port: exit %d, stderr %q; want %d and %q...", tt.name, got.code, got.stderr, exitUnavailable, want)
		}
	}
}

// TestE2EApproveWebEnrollServesUnprivileged runs the real agent-sudo: the
// enrolment page is served by a process of its own running as --user, by
// default agent-sudo-web (a user of its own, not nobody, whom other
// programs run as), while the passkey it registers is written by the root
// process, root's, mode 0600; the QR code is printed under the link.
func TestE2EApproveWebEnrollServesUnprivileged(t *testing.T) {
	testenv.NeedsRoot(t)
	_, cli := daemontest.Binaries(t)
	webUID := testenv.WebUser(t)
	port := testenv.FreePrivilegedPort(t)
	origin := "http://localhost:" + port
	keys := filepath.Join(t.TempDir(), "passkeys")
	enrol := startEnrol(t, cli, origin, "█", "alice", "--web", "localhost:"+port, "--no-tls", "--passkeys", keys)
	creation := enrol.post("/begin", []byte("{}"))
	// The page answered: its process has dropped root by now.
	page := childOf(t, enrol.cmd.Process.Pid)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", page))
	if err != nil {
		t.Fatal(err)
	}
	wantUID := fmt.Sprintf("\t%d\t%d\t%d\t%d\n", webUID, webUID, webUID, webUID)
	if !strings.Contains(string(status), "\nUid:"+wantUID) {
		t.Fatalf("the page's process (pid %d) does not run as agent-sudo-web (%d) alone:\n%s", page, webUID, status)
	}
	// Nor does it hold what enroll was started with (a terminal, for a
	// human): stdin and stdout are /dev/null, stderr a pipe of its own,
	// which the root side relays.
	rootErr, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/2", enrol.cmd.Process.Pid))
	for fd, want := range map[int]string{0: "/dev/null", 1: "/dev/null", 2: "pipe:["} {
		if got, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", page, fd)); err != nil || !strings.HasPrefix(got, want) || got == rootErr {
			t.Errorf("the page's process's descriptor %d is %q (%v), want %s, not enroll's stderr (%s)", fd, got, err, want, rootErr)
		}
	}
	// And nothing else: every other descriptor is its listener, its end
	// of the socket pair, the test's connection to the page, or the Go
	// runtime's own; none inherited from whatever started enroll.
	for fd, what := range pageDescriptors(t, page, port) {
		if fd > 2 && strings.HasPrefix(what, "unexpected") {
			t.Errorf("the page's process holds descriptor %d: %s", fd, what)
		}
	}
	k, err := passkeytest.New("alice", "localhost", origin)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := k.Register(creation)
	if err != nil {
		t.Fatal(err)
	}
	if b := enrol.post("/finish", resp); !strings.Contains(string(b), `"approver":"alice"`) {
		t.Fatalf("finish: %s", b)
	}
	printed := enrol.wait()
	if want := fmt.Sprintf("enrolled alice: credential %x, for %s\n", k.ID, origin); !strings.Contains(printed, want) {
		t.Fatalf("enroll printed:\n%s\nwant a line %q", printed, want)
	}
	// alice is no user here: root is told that her passkey is a person
	// of its own, which a directory that did not answer would also give.
	if want := "alice is no user the system's name service knows (getent passwd alice found none), so for the two-person rule " +
		"this passkey is a person of its own (passkey alice)"; !strings.Contains(printed, want) {
		t.Errorf("enroll printed:\n%s\nwant it to say who the passkey is for the two-person rule: %q", printed, want)
	}
	stored, err := passkey.Store{Dir: keys}.List(false)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || !bytes.Equal(stored[0].Credential.ID, k.ID) {
		t.Fatalf("stored %+v, want alice's passkey %x", stored, k.ID)
	}
	fi, err := os.Stat(filepath.Join(keys, "alice.json"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("alice.json: owner %d, mode %v; want root's, 0600", st.Uid, fi.Mode().Perm())
	}
}

// TestWebUserMissing: a --user that does not exist is named, with how to
// create it; the default is agent-sudo-web, for the web approver and the
// enrolment alike.
func TestWebUserMissing(t *testing.T) {
	_, _, err := webUser("agent-sudo-no-such-user")
	want := "--user agent-sudo-no-such-user: no such user"
	wantHint := "name an existing user; or create it as root: " +
		"useradd --system --user-group --no-create-home --home-dir / --shell /usr/sbin/nologin agent-sudo-no-such-user"
	if err == nil || err.Error() != want {
		t.Errorf("webUser of a missing user: %v, want %q", err, want)
	}
	if h := hint.Of(err); len(h) != 1 || !strings.HasPrefix(h[0], wantHint) {
		t.Errorf("webUser of a missing user: hints %q, want one starting %q", h, wantHint)
	}
	for _, args := range [][]string{{"approve", "--help"}, {"approve", "web", "help"}} {
		got := runCLI(context.Background(), nil, args...)
		if !strings.Contains(got.stdout+got.stderr, `(default "agent-sudo-web")`) {
			t.Errorf("%v: the help does not give --user's default as agent-sudo-web:\n%s%s", args, got.stdout, got.stderr)
		}
	}
}

// pageDescriptors returns, by descriptor, what each descriptor of the
// enrolment page's process pid (serving on port) is: "the listener (tcp)" or "(tcp6)", "the
// socket pair to enroll", "a connection to the page", "the Go runtime's
// ..." or, for anything else, "unexpected: " and its link. The listener
// and the pair are dup'ed away from 3 and 4 by net.FileListener and
// net.FileConn, so they are found by their inodes in the process's
// /proc/PID/net tables, not by number.
func pageDescriptors(t *testing.T, pid int, port string) map[int]string {
	t.Helper()
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	hexPort := fmt.Sprintf(":%04X", p)
	sockets := map[string]string{} // inode: what
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || !strings.HasSuffix(f[1], hexPort) {
				continue
			}
			if f[3] == "0A" { // TCP_LISTEN
				sockets[f[9]] = "the listener (" + table + ")"
			} else {
				sockets[f[9]] = "a connection to the page"
			}
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/unix", pid))
	if err != nil {
		t.Fatal(err)
	}
	unixInodes := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 7 {
			unixInodes[f[6]] = true
		}
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	count := map[string]int{}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
		if err != nil {
			continue // closed since the listing
		}
		what := "unexpected: " + link
		switch {
		case fd <= 2:
			what = link
		case strings.HasPrefix(link, "socket:["):
			inode := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
			if w, ok := sockets[inode]; ok {
				what = w
			} else if unixInodes[inode] {
				what = "the socket pair to enroll"
			}
		case link == "anon_inode:[eventpoll]", link == "anon_inode:[eventfd]":
			what = "the Go runtime's network poller"
		case strings.HasPrefix(link, "/sys/fs/cgroup/"):
			what = "the Go runtime's CPU limit (cgroup)"
		}
		out[fd] = what
		count[what]++
	}
	// One listener per address of localhost: 127.0.0.1, and ::1 where
	// the host has IPv6.
	for _, one := range []string{"the listener (tcp)", "the socket pair to enroll"} {
		if count[one] != 1 {
			t.Errorf("the page's process holds %d of %s, want 1: %v", count[one], one, out)
		}
	}
	if count["the listener (tcp6)"] > 1 {
		t.Errorf("the page's process holds %d listeners on ::1, want at most 1: %v", count["the listener (tcp6)"], out)
	}
	return out
}

// childOf returns the pid of the one child of pid.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err == nil {
		// Only the main thread's children are listed there; fall back to a
		// scan of /proc when the child was forked by another thread.
		if f := strings.Fields(string(b)); len(f) == 1 {
			if c, err := strconv.Atoi(f[0]); err == nil {
				return c
			}
		}
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var found []int
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces; split after ')'.
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		t.Fatalf("process %d has children %v, want one", pid, found)
	}
	return found[0]
}
