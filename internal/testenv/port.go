package testenv

import (
	"net"
	"testing"
)

// FreePort returns a TCP port of localhost that was free a moment ago: it
// listens on port 0 and closes the listener. Another process may take
// the port before the caller listens on it; a test that must not race
// keeps its own listener open instead.
func FreePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	return port
}
