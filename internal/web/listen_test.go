package web

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/hint"
)

// TestCheckPort: only a port below the kernel's
// ip_unprivileged_port_start is taken, and each refusal says why.
func TestCheckPort(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		start string // the file's content; "" for no file
		port  uint16
		err   string // "" when taken; else in the error or its hint
	}{
		{"1024\n", 844, ""},
		{"1024\n", 443, ""},
		{"1024\n", 1023, ""},
		{"1024\n", 1024, "port 1024: any local user may listen on a port from 1024 up"},
		{"1024\n", 8443, "use a port below 1024, such as 844 or 443"},
		{"1024\n", 0, "port 0: give the port the browser opens"},
		{"500\n", 844, "port 844: any local user may listen on a port from 500 up"},
		{"500\n", 443, ""},
		{"0\n", 443, "net.ipv4.ip_unprivileged_port_start is 0 on this host"},
		{"many\n", 443, `holds "many", not a number`},
		{"", 443, "cannot tell whether port 443 is one only root may listen on"},
	} {
		file := filepath.Join(dir, "missing")
		if tc.start != "" {
			file = filepath.Join(dir, "start")
			if err := os.WriteFile(file, []byte(tc.start), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		err := CheckPort(tc.port, file)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("start %q, port %d: %v, want it taken", tc.start, tc.port, err)
		case tc.err != "" && (err == nil || !strings.Contains(strings.Join(append([]string{err.Error()}, hint.Of(err)...), "\n"), tc.err)):
			t.Errorf("start %q, port %d: %v, want an error with %q", tc.start, tc.port, err, tc.err)
		}
	}
}

// TestAddresses: localhost is both loopback addresses whatever
// /etc/hosts says (browsers and ssh go to ::1 first); an address is
// itself.
func TestAddresses(t *testing.T) {
	for _, tc := range []struct {
		host string
		want []string
	}{
		{"localhost", []string{"127.0.0.1", "::1"}},
		{"LocalHost.", []string{"127.0.0.1", "::1"}},
		{"approver.localhost", []string{"127.0.0.1", "::1"}},
		{"127.0.0.1", []string{"127.0.0.1"}},
		{"::1", []string{"::1"}},
		{"::ffff:127.0.0.1", []string{"127.0.0.1"}},
	} {
		got, _, err := Addresses(context.Background(), tc.host)
		if err != nil {
			t.Errorf("%s: %v", tc.host, err)
			continue
		}
		for _, w := range tc.want {
			if !slices.Contains(got, netip.MustParseAddr(w)) {
				t.Errorf("%s: %v, want %s among them", tc.host, got, w)
			}
		}
		if strings.Contains(tc.host, ":") || strings.Contains(tc.host, "127.") {
			if len(got) != 1 {
				t.Errorf("%s: %v, want itself alone", tc.host, got)
			}
		}
	}
}
