package daemon

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unixListener listens on a fresh socket in t's temporary directory.
func unixListener(t *testing.T, name string) net.Listener {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// TestPickActivated checks how the daemon sorts the sockets systemd passes
// by name (LISTEN_FDNAMES): the approver socket only by its own name, the
// agent socket by its name or the unit's default, and anything it does not
// know refused rather than guessed.
func TestPickActivated(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tcp.Close() })
	tests := []struct {
		name        string
		named       map[string][]net.Listener
		agent, appr bool
		wantErr     string
	}{
		{name: "none", named: nil},
		{name: "both by name", named: map[string][]net.Listener{"agent": {unixListener(t, "a")}, "approver": {unixListener(t, "b")}}, agent: true, appr: true},
		{name: "agent by the unit's default name", named: map[string][]net.Listener{"agent-sudo.socket": {unixListener(t, "a")}}, agent: true},
		{name: "one socket without a name", named: map[string][]net.Listener{"LISTEN_FD_3": {unixListener(t, "a")}}, agent: true},
		{name: "an unnamed socket beside a named one", named: map[string][]net.Listener{"LISTEN_FD_3": {unixListener(t, "a")}, "approver": {unixListener(t, "b")}}, wantErr: `named "LISTEN_FD_3"`},
		{name: "two sockets without names", named: map[string][]net.Listener{"LISTEN_FD_3": {unixListener(t, "a")}, "LISTEN_FD_4": {unixListener(t, "b")}}, wantErr: "LISTEN_FD_"},
		{name: "approver alone", named: map[string][]net.Listener{"approver": {unixListener(t, "b")}}, appr: true},
		{name: "unknown name", named: map[string][]net.Listener{"agent": {unixListener(t, "a")}, "consoles": {unixListener(t, "b")}}, wantErr: `named "consoles"`},
		{name: "two approvers", named: map[string][]net.Listener{"approver": {unixListener(t, "a"), unixListener(t, "b")}}, wantErr: `more than one socket for "approver"`},
		{name: "agent twice", named: map[string][]net.Listener{"agent": {unixListener(t, "a")}, "agent-sudo.socket": {unixListener(t, "b")}}, wantErr: "more than one socket"},
		{name: "tcp approver", named: map[string][]net.Listener{"approver": {tcp}}, wantErr: "of type tcp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := pickActivated(tt.named)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("pickActivated = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("pickActivated: %v", err)
			}
			if (s.Agent != nil) != tt.agent || s.AgentActivated != tt.agent {
				t.Errorf("agent socket taken = %v (activated %v), want %v", s.Agent != nil, s.AgentActivated, tt.agent)
			}
			if (s.Approver != nil) != tt.appr || s.ApproverActivated != tt.appr {
				t.Errorf("approver socket taken = %v (activated %v), want %v", s.Approver != nil, s.ApproverActivated, tt.appr)
			}
			if tt.agent && tt.appr && s.Agent.Addr().String() == s.Approver.Addr().String() {
				t.Errorf("agent and approver are the same socket %s", s.Agent.Addr())
			}
		})
	}
}

// TestCheckApproverSocket checks that an approver socket systemd passes is
// refused when anyone but the daemon's user could connect to it.
func TestCheckApproverSocket(t *testing.T) {
	base := secureTree(t)
	tests := []struct {
		name    string
		mode    os.FileMode
		uid     int
		wantErr string
	}{
		{"0600 root", 0o600, 0, ""},
		{"0660", 0o660, 0, "has mode 0660"},
		{"0606", 0o606, 0, "has mode 0606"},
		{"another owner", 0o600, 65534, "belongs to uid 65534"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(base, strings.Repeat("d", i+1))
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "approver.sock")
			ln, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(path, tt.uid, -1); err != nil {
				t.Fatal(err)
			}
			err = checkApproverSocket(ln)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("checkApproverSocket: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("checkApproverSocket = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
