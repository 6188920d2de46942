package daemon_test

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2ELineSentDuringAStallIsServed: the daemon has accepted a
// connection and waits for its first byte when it is stopped (SIGSTOP, as
// a paused VM); the agent sends its whole line in time, and the daemon
// resumes only after first_byte_timeout has passed. The line is served,
// not answered "nothing was sent within first_byte_timeout" (issue 32,
// fault 6). The stall must outlast first_byte_timeout: that wait is the
// premise, not a synchronisation.
func TestE2ELineSentDuringAStallIsServed(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Extra: `first_byte_timeout = "100ms"`})
	pid := d.Cmd.Process.Pid
	// Quiet first (the start's pings are done), then accepted once the
	// daemon holds a connected stream socket.
	waitFor(t, "the daemon to hold no connection", func() bool { return connections(t, pid) == 0 })
	c, err := net.Dial("unix", d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitFor(t, "the daemon to accept the connection", func() bool { return connections(t, pid) == 1 })
	line, err := json.Marshal(&proto.Request{ID: "stalled-ping", Time: time.Now(), Action: proto.ActionPing})
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	defer resume()
	if _, err := c.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the stall: five first_byte_timeouts
	resume()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	answer, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("no answer after the stall: %v", err)
	}
	var resp proto.Response
	if err := json.Unmarshal([]byte(answer), &resp); err != nil {
		t.Fatalf("answer %q: %v", answer, err)
	}
	if resp.Status != proto.StatusOK || resp.ID != "stalled-ping" {
		t.Errorf("a line sent in time, read after a stall, was answered %s %q; want the ping answered ok", resp.Status, resp.Message)
	}
}

// connections is how many connected Unix stream sockets process pid
// holds: its accepted connections (/proc/net/unix: type 0001, state 03).
func connections(t *testing.T, pid int) int {
	t.Helper()
	table, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	connected := map[string]bool{}
	for line := range strings.SplitSeq(string(table), "\n") {
		// Num RefCount Protocol Flags Type St Inode [Path]
		if f := strings.Fields(line); len(f) >= 7 && f[4] == "0001" && f[5] == "03" {
			connected["socket:["+f[6]+"]"] = true
		}
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && connected[l] {
			n++
		}
	}
	return n
}
