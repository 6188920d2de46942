package web

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// TestServeRefusesBeforeServing: web.Serve, the web approver's entry
// point, refuses to serve as root, and says it is unavailable
// (ErrUnavailable, the cause's words alone) when it cannot listen or read
// its certificate, in each case before it drops root or serves a byte.
func TestServeRefusesBeforeServing(t *testing.T) {
	testenv.NeedsRoot(t)
	port := testenv.FreePrivilegedPort(t)
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	free := testenv.FreePrivilegedPort(t)
	fp, err := strconv.ParseUint(free, 10, 16)
	if err != nil {
		t.Fatal(err)
	}
	noDrop := func() error { return errors.New("BeforeDrop ran") }
	for _, tt := range []struct {
		name        string
		cfg         ServeConfig
		want        string
		unavailable bool
	}{
		{"as root", ServeConfig{Host: "127.0.0.1", Port: uint16(fp), UID: 0, GID: 0, BeforeDrop: noDrop}, "refusing to serve as root", false},
		{"port taken", ServeConfig{Host: "127.0.0.1", Port: uint16(p), UID: 65534, GID: 65534, BeforeDrop: noDrop}, "127.0.0.1:" + port + " is in use", true},
		{"no certificate", ServeConfig{Host: "127.0.0.1", Port: uint16(fp), UID: 65534, GID: 65534, BeforeDrop: noDrop,
			Cert: func() (tls.Certificate, string, error) {
				return tls.Certificate{}, "", errors.New("TLS key: no such file")
			}},
			"TLS key: no such file", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Serve(context.Background(), tt.cfg)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) || errors.Is(err, ErrUnavailable) != tt.unavailable {
				t.Fatalf("Serve: %v (unavailable %v), want %q (unavailable %v)", err, errors.Is(err, ErrUnavailable), tt.want, tt.unavailable)
			}
		})
	}
}
