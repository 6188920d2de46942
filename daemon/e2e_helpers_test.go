package daemon_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/daemon/daemontest"
)

// The end-to-end tests start the real agent-sudod with daemontest and talk
// to it over the wire. They need root (the daemon runs commands as other
// users); CI runs them as root.

// clientEnv makes the test binary act as a one-shot wire client instead of
// running tests: the parent starts it as another user to test what a
// non-root peer sees.
const clientEnv = "AGENT_SUDO_E2E_CLIENT"

func TestMain(m *testing.M) {
	if line := os.Getenv(clientEnv); line != "" {
		os.Exit(actAsClient(os.Getenv("AGENT_SUDO_E2E_SOCKET"), line))
	}
	code := m.Run()
	daemontest.RemoveBinaries()
	os.Exit(code)
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
