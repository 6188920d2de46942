package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/agent-sudo/agent-sudo/internal/hint"
)

// UnprivilegedPortStartFile is the kernel's lowest port any user may
// listen on, in the network namespace of the process that reads it
// (net.ipv4.ip_unprivileged_port_start, which IPv6 obeys as well).
const UnprivilegedPortStartFile = "/proc/sys/net/ipv4/ip_unprivileged_port_start"

// CheckPort returns nil when port is one that only root (CAP_NET_BIND_SERVICE)
// may listen on in this network namespace: below the kernel's
// ip_unprivileged_port_start, read from file (UnprivilegedPortStartFile).
// The web approver and the enrolment page must listen on such a port: on
// any other, a local user (an agent) can listen on the same port of an
// address they do not hold, or on all of them while they are not running,
// and be sent the phone's enrolment link or passkey gestures.
func CheckPort(port uint16, file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("cannot tell whether port %d is one only root may listen on: %w", port, err)
	}
	start, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
	if err != nil {
		return fmt.Errorf("cannot tell whether port %d is one only root may listen on: %s holds %q, not a number", port, file, strings.TrimSpace(string(b)))
	}
	return checkPort(port, start)
}

// checkPort is CheckPort for the kernel's start of unprivileged ports.
func checkPort(port uint16, start uint64) error {
	switch {
	case port == 0:
		return errors.New("port 0: give the port the browser opens, one below 1024 such as 844 or 443")
	case start == 0:
		return hint.New("net.ipv4.ip_unprivileged_port_start is 0 on this host: any user may listen on any port",
			"no port is one an agent cannot take (as in some containers); set it back to run the web approver: sysctl -w net.ipv4.ip_unprivileged_port_start=1024")
	case uint64(port) >= start:
		return hint.Wrap(fmt.Errorf("port %d: any local user may listen on a port from %d up (net.ipv4.ip_unprivileged_port_start)", port, start),
			fmt.Sprintf("an agent could serve its own page there, on an address the web approver does not hold or while it is not running, "+
				"and be sent the enrolment link or your passkey gestures; use a port below %d, such as 844 or 443 (docs/remote.md)", min(start, 1024)))
	}
	return nil
}

// Addresses returns every address host names, without duplicates: the
// address itself when host is one; for localhost (and NAME.localhost),
// which browsers and ssh resolve to the loopback addresses of both
// families whatever /etc/hosts says, 127.0.0.1 and ::1 and whatever the
// resolver adds; else what the resolver returns. implied reports, per
// address, whether it is one localhost implies rather than one the
// resolver returned.
func Addresses(ctx context.Context, host string) (addrs []netip.Addr, implied []bool, err error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, []bool{false}, nil
	}
	add := func(a netip.Addr, imp bool) {
		a = a.Unmap()
		if !slices.Contains(addrs, a) {
			addrs, implied = append(addrs, a), append(implied, imp)
		}
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		add(netip.MustParseAddr("127.0.0.1"), true)
		add(netip.IPv6Loopback(), true)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil && len(addrs) == 0 {
		return nil, nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	for _, a := range ips {
		add(a, false)
	}
	return addrs, implied, nil
}

// MaxAddresses bounds the addresses of a host Listen listens on.
const MaxAddresses = 16

// Listen listens on port on every address host names (Addresses), all or
// none: one that is taken is named, and nothing is kept open. The port
// must be one only root may listen on (CheckPort with
// UnprivilegedPortStartFile), so that no local user can hold any address
// of it, now or while the caller is not running. An address localhost
// implies that this host does not have (IPv6 disabled) is skipped: nobody
// can listen on it either.
func Listen(ctx context.Context, host string, port uint16) ([]net.Listener, error) {
	if err := CheckPort(port, UnprivilegedPortStartFile); err != nil {
		return nil, err
	}
	addrs, implied, err := Addresses(ctx, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) > MaxAddresses {
		return nil, fmt.Errorf("%s has %d addresses, more than the %d the web approver listens on: give it one with fewer, or an address", host, len(addrs), MaxAddresses)
	}
	var lc net.ListenConfig
	var lns []net.Listener
	for i, a := range addrs {
		addr := netip.AddrPortFrom(a, port).String()
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil && implied[i] && (errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT)) {
			continue
		}
		if err != nil {
			for _, l := range lns {
				_ = l.Close()
			}
			return nil, ListenError(addr, host, err)
		}
		lns = append(lns, ln)
	}
	if len(lns) == 0 {
		return nil, fmt.Errorf("%s has no address this host can listen on", host)
	}
	return lns, nil
}

// ListenError names the address of host that could not be listened on,
// and the likely holder when it is in use: the web approver itself, or
// another of root's programs (the port is one only root may take).
func ListenError(addr, host string, err error) error {
	what := addr
	if h, _, serr := net.SplitHostPort(addr); serr == nil && h != host {
		what += " (an address of " + host + ")"
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return &inUseError{what: what, err: err}
	}
	return fmt.Errorf("listen on %s: %w", what, err)
}

// inUseError is ListenError's for an address in use; errors.Is sees
// syscall.EADDRINUSE through it.
type inUseError struct {
	what string
	err  error
}

func (e *inUseError) Error() string {
	return e.what + " is in use, by the web approver (agent-sudo approve --web) or another program"
}

func (e *inUseError) Unwrap() error { return e.err }
