package testenv

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
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

// FreePrivilegedPort returns a TCP port below 1024 (and below the kernel's
// net.ipv4.ip_unprivileged_port_start), free a moment ago on both 127.0.0.1
// and ::1, as the web approver and enrolment need (they refuse a port any
// user may take). Only root may listen there: the test must run as root.
// Ports are tried from a random start, so that tests running side by side
// rarely pick the same one; as with FreePort, another process may take it
// before the caller listens.
func FreePrivilegedPort(t testing.TB) string {
	t.Helper()
	start := 1024
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_unprivileged_port_start"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n < start {
			start = n
		}
	}
	const low = 600
	if start <= low {
		t.Fatalf("find a free privileged port: net.ipv4.ip_unprivileged_port_start is %d: no port below it is free for tests", start)
	}
	first := low + rand.IntN(start-low)
	for i := range start - low {
		p := low + (first-low+i)%(start-low)
		if free(t, p) {
			return strconv.Itoa(p)
		}
	}
	t.Fatalf("find a free privileged port: none free from %d to %d", low, start-1)
	return ""
}

// free reports whether port p can be listened on at 127.0.0.1 and ::1
// (where this host has it).
func free(t testing.TB, p int) bool {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	for _, a := range []string{"127.0.0.1", "::1"} {
		ln, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(p)))
		if errors.Is(err, syscall.EACCES) {
			t.Fatalf("find a free privileged port: %v: the test must run as root", err)
		}
		if err != nil && a == "::1" && errors.Is(err, syscall.EADDRNOTAVAIL) {
			continue
		}
		if err != nil {
			return false
		}
		lns = append(lns, ln)
	}
	return true
}
