package daemon_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// The end-to-end tests start the real agent-sudod with daemontest and talk
// to it over the wire. They need root (the daemon runs commands as other
// users); CI runs them as root.
//
// Each test starts a daemon of its own, with its own directory, socket,
// users and groups (unique names), and cgroups (named after the daemon's
// pid), so the tests run in parallel: most of their time is spent waiting
// for processes and timeouts. The few that move tens of megabytes through
// the daemon run in parallel with the others but one at a time (heavy):
// that work is CPU-bound, and two of them at once would only slow each
// other and stretch their own deadlines (a response's write deadline grows
// with its size, not with the machine's load).
//
// Those volume tests check bounds at the protocol's limits: a request of
// 1 MB, an output of 16 MiB. Under the race detector every byte the daemon
// copies or encodes costs ten times as much, and the size adds nothing for
// it to find: under -race they send requests a tenth of the size
// (hostileSize), which take the same paths (a summary instead of the
// request, a prefix in the audit log), and the output past the cap is
// skipped; make unit runs them again at full size without -race
// (NORACE_TESTS in the Makefile).

// heavyToken is held by the one heavy test that runs.
var heavyToken = make(chan struct{}, 1)

// heavy marks t as one that moves tens of megabytes through the daemon: it
// runs in parallel with the other tests, but not with another heavy one.
func heavy(t *testing.T) {
	t.Helper()
	t.Parallel()
	heavyToken <- struct{}{}
	t.Cleanup(func() { <-heavyToken })
}

// hostileSize is the size of the large hostile requests of the volume
// tests: about the protocol's largest (proto.MaxRequestBytes) without the
// race detector, a tenth of it under -race. Either is far above the
// thresholds the tests check (approval.MaxInlineRequest, the audit log's
// prefix).
func hostileSize() int {
	if testenv.Race {
		return 100_000
	}
	return 1_000_000
}

// clientEnv makes the test binary act as a one-shot wire client instead of
// running tests: the parent starts it as another user to test what a
// non-root peer sees.
const clientEnv = "AGENT_SUDO_E2E_CLIENT"

func TestMain(m *testing.M) {
	if line := os.Getenv(clientEnv); line != "" {
		os.Exit(actAsClient(os.Getenv("AGENT_SUDO_E2E_SOCKET"), line))
	}
	if n := os.Getenv(holdEnv); n != "" {
		os.Exit(holdConnections(os.Getenv("AGENT_SUDO_E2E_SOCKET"), n))
	}
	if steps := os.Getenv(subuidsEnv); steps != "" {
		os.Exit(actAsSubordinateUIDs(steps))
	}
	daemontest.Main(m)
}

// actAsClient sends one line and prints the raw response line.
func actAsClient(sock, line string) int {
	c, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Printf("DIAL ERROR: %v\n", err)
		return 0
	}
	defer c.Close()
	// A daemon that refuses a peer answers before reading, so a failed
	// write is not the end: the refusal may still be there to read.
	_, werr := c.Write([]byte(line + "\n"))
	resp, err := bufio.NewReader(c).ReadString('\n')
	if err != nil && werr != nil {
		fmt.Printf("WRITE ERROR: %v\n", werr)
		return 0
	}
	if err != nil {
		fmt.Printf("READ ERROR: %v\n", err)
		return 0
	}
	fmt.Print(resp)
	return 0
}

// line builds a request line from fields, adding a fresh time unless given.
func line(fields map[string]any) string {
	if _, ok := fields["time"]; !ok {
		fields["time"] = time.Now().UTC().Format(time.RFC3339Nano)
	}
	b, err := json.Marshal(fields)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// holdEnv makes the test binary open that many connections to the socket
// and send nothing on them: it prints "open N" once they are connected,
// and, after reading a line on stdin, the first response line of each
// connection (or "none" when none is there within a short time), then
// exits, closing them.
const holdEnv = "AGENT_SUDO_E2E_HOLD"

func holdConnections(sock, count string) int {
	n, err := strconv.Atoi(count)
	if err != nil {
		fmt.Println("bad count:", err)
		return 1
	}
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("unix", sock)
		if err != nil {
			fmt.Printf("DIAL ERROR: %v\n", err)
			return 1
		}
		conns = append(conns, c)
	}
	fmt.Printf("open %d\n", len(conns))
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		resp, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			fmt.Println("none")
			continue
		}
		fmt.Print(resp)
	}
	return 0
}
