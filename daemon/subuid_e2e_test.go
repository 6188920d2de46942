package daemon_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// subuidsEnv makes the test binary, run as root of a user namespace that
// newuidmap gave a user's subordinate uids, act as several of those uids
// in turn: the value is a comma-separated list of steps, "hold:K" (run
// itself as uid K holding one idle connection, until the end) or "send:K"
// (run itself as uid K sending the request line of AGENT_SUDO_E2E_LINE,
// with its "{K}" replaced by K, and print "K: " and the answer). Every
// child keeps the supplementary groups (no setgroups), as the red team's
// agent did, so it keeps socket_group's membership.
const subuidsEnv = "AGENT_SUDO_E2E_SUBUIDS"

func actAsSubordinateUIDs(steps string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Println("executable:", err)
		return 1
	}
	var holders []io.Closer
	var waits []*exec.Cmd
	defer func() {
		for _, h := range holders {
			_ = h.Close()
		}
		for _, c := range waits {
			_ = c.Wait()
		}
	}()
	for _, step := range strings.Split(steps, ",") {
		kind, id, _ := strings.Cut(step, ":")
		k, err := strconv.ParseUint(id, 10, 32)
		if err != nil {
			fmt.Printf("bad step %q: %v\n", step, err)
			return 1
		}
		cmd := exec.Command(self)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(k), Gid: 0, NoSetGroups: true}}
		env := []string{"AGENT_SUDO_E2E_SOCKET=" + os.Getenv("AGENT_SUDO_E2E_SOCKET"), "GORACE=" + os.Getenv("GORACE")}
		switch kind {
		case "hold":
			cmd.Env = append(env, holdEnv+"=1")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				fmt.Println(err)
				return 1
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				fmt.Println(err)
				return 1
			}
			if err := cmd.Start(); err != nil {
				fmt.Printf("%d: start: %v\n", k, err)
				return 1
			}
			holders, waits = append(holders, stdin), append(waits, cmd)
			first, err := bufio.NewReader(stdout).ReadString('\n')
			if first != "open 1\n" {
				fmt.Printf("%d: holder: %q %v\n", k, first, err)
				return 1
			}
			fmt.Printf("%d: holding\n", k)
		case "send":
			cmd.Env = append(env, clientEnv+"="+strings.ReplaceAll(os.Getenv("AGENT_SUDO_E2E_LINE"), "{K}", id))
			out, err := cmd.Output()
			if err != nil {
				fmt.Printf("%d: %v\n", k, err)
				return 1
			}
			fmt.Printf("%d: %s", k, out)
		default:
			fmt.Printf("bad step %q\n", step)
			return 1
		}
	}
	return 0
}

// subordinateStart returns the first of u's subordinate uids in
// /etc/subuid, where useradd put them.
func subordinateStart(t *testing.T, u *daemontest.User) uint32 {
	t.Helper()
	b, err := os.ReadFile("/etc/subuid")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ":")
		if len(f) == 3 && f[0] == u.Name {
			n, err := strconv.ParseUint(f[1], 10, 32)
			if err != nil {
				t.Fatalf("/etc/subuid: %q: %v", l, err)
			}
			return uint32(n)
		}
	}
	t.Fatalf("useradd gave %s no subordinate uids in /etc/subuid:\n%s", u.Name, b)
	return 0
}

// inUserNamespace runs the steps (subuidsEnv) as u inside a user namespace
// mapped by the real newuidmap and newgidmap to u's subordinate ids
// (`unshare --map-auto`, uid 0 inside), against d with request line, and
// returns each step's answer by uid.
func inUserNamespace(t *testing.T, d *daemontest.Daemon, u *daemontest.User, steps, line string) map[string]string {
	t.Helper()
	for _, p := range []string{"newuidmap", "newgidmap", "unshare"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s is needed (Debian package uidmap, util-linux): %v", p, err)
		}
	}
	cmd := u.Command("unshare", "--user", "--map-auto", "--setuid", "0", publicTestBinary(t, d))
	cmd.Env = daemontest.RaceEnv([]string{subuidsEnv + "=" + steps, "AGENT_SUDO_E2E_SOCKET=" + d.Socket, "AGENT_SUDO_E2E_LINE=" + line})
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("in %s's user namespace: %v\n%s", u.Name, err, out)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(l, ": ")
		got[k] = v
	}
	return got
}

// TestE2ESubordinateUIDsCountAsTheirUser (issue 21): a user who maps its
// subordinate uids into a user namespace with the real newuidmap, and
// connects as several of them while keeping socket_group's membership, is
// still one user for max_connections_per_user and max_requests_per_minute:
// the limits count the owner of the peer's user namespace. Before, each
// subordinate uid had limits of its own. A request from such a peer is
// recorded with the uid it was counted as.
func TestE2ESubordinateUIDsCountAsTheirUser(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	group, _ := daemontest.AddGroup(t, "sub")
	u := daemontest.AddUser(t, "subu", group)
	sub := subordinateStart(t, u)

	t.Run("connections", func(t *testing.T) {
		t.Parallel()
		d := daemontest.Start(t, daemontest.Config{SocketGroup: group, ReadTimeout: "60s",
			Extra: "max_connections_per_user = 2\nfirst_byte_timeout = \"30s\""})
		got := inUserNamespace(t, d, u, "hold:1,hold:2,send:3,send:4", line(map[string]any{"action": "ping", "id": "ping-{K}"}))
		want := fmt.Sprintf("busy: uid %d already has 2 connections open or waiting (max_connections_per_user)", u.UID)
		for _, k := range []uint32{3, 4} {
			if r := got[strconv.Itoa(int(k))]; !strings.Contains(r, want) {
				t.Errorf("uid %d of the namespace (uid %d outside), while two others of %s's hold connections, got %q; want %q",
					k, sub+k, u.Name, r, want)
			}
		}
	})

	t.Run("rate", func(t *testing.T) {
		t.Parallel()
		d := daemontest.Start(t, daemontest.Config{SocketGroup: group, Extra: "max_requests_per_minute = 2",
			Rules: "[[rule]]\nname = \"no true\"\naction = \"deny\"\nmatch = [\"true\"]\n"})
		// Two tokens, refilled one per 30 s: of six connections at least
		// one is refused however slowly they come (all six would need 2 min).
		got := inUserNamespace(t, d, u, "send:1,send:2,send:3,send:4,send:5,send:6",
			line(map[string]any{"id": "sub-{K}", "pipeline": [][]string{{"true"}}}))
		limited := fmt.Sprintf("rate limited: uid %d opened more than 2 connections in the last minute (max_requests_per_minute)", u.UID)
		n := 0
		for k := 1; k <= 6; k++ {
			r := got[strconv.Itoa(k)]
			switch {
			case strings.Contains(r, limited):
				n++
			case strings.Contains(r, `"status":"denied"`):
			default:
				t.Errorf("uid %d of the namespace got %q; want denied or %q", k, r, limited)
			}
		}
		if n == 0 {
			t.Errorf("six connections from six subordinate uids of %s, none rate limited: %v", u.Name, got)
		}
		recs := d.AuditRecords("sub-1")
		if len(recs) == 0 || recs[0].Peer == nil {
			t.Fatalf("no audit record of the peer of sub-1: %+v", recs)
		}
		p := recs[0].Peer
		if p.UID != sub+1 || p.Container == nil || p.Container.Controller == nil || *p.Container.Controller != u.UID {
			t.Errorf("sub-1 recorded with peer uid %d and container %+v; want uid %d counted as uid %d", p.UID, p.Container, sub+1, u.UID)
		}
	})
}
