// Package daemontest starts the real agent-sudod for end-to-end tests: it
// builds the binaries once per test process, writes a temporary
// configuration, starts the daemon on a temporary socket, waits until it
// answers, stops it with SIGTERM when the test ends, and speaks the
// approver channel as a bare JSON-lines client.
//
// It is for tests only; no production code imports it. The daemon runs
// commands as other users, so the tests that use it need root; CI runs them
// as root.
package daemontest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/proto"
)

// Config is the configuration a test starts the daemon with: everything in
// a temporary directory, short timeouts, and the rules the test gives. The
// zero value is a daemon with no rules, so every request asks.
type Config struct {
	// Exec is "direct" or "sudo"; empty means $AGENT_SUDO_TEST_EXEC
	// ([ExecEnv]) when set, "direct" otherwise.
	Exec string
	// Cgroup is the "cgroup" key. Empty means "required" where this
	// system offers per-request cgroups (see CgroupsAvailable), and
	// "best-effort" elsewhere, so that the other tests still run there.
	Cgroup string
	// SocketGroup is the client socket's group; "root" by default.
	SocketGroup string
	// Rules are [[rule]] tables.
	Rules string
	// Extra holds more top-level keys.
	Extra string
	// ApprovalTimeout, CommandTimeout and ReadTimeout default to "2s",
	// "20s" and "2s".
	ApprovalTimeout, CommandTimeout, ReadTimeout string
	// MaxConnections defaults to 64.
	MaxConnections int
	// AuditLog replaces the default audit log (Dir/audit.jsonl).
	AuditLog string
	// Env is added to the daemon's environment.
	Env []string
	// Activate, when set, is called with the socket path and returns a
	// listening socket that is passed to the daemon as systemd would
	// (fd 3, LISTEN_FDS=1, LISTEN_FDNAMES=agent, LISTEN_PID of the daemon).
	Activate func(socket string) *os.File
	// Hostname, when set, runs the daemon in a UTS namespace of its own
	// with this host name (unshare --uts), so that daemons on one machine
	// stand in for daemons on several hosts.
	Hostname string
	// CgroupDir, when set, is a cgroup v2 directory (see Cgroup) the
	// daemon is started in, from its first instruction (clone3's
	// CLONE_INTO_CGROUP), and in its v1 pids twin where there is one
	// (see PidsDir): its request cgroups are made under them, where no
	// other test's daemon sees them, and a limit set on PidsDir(CgroupDir)
	// (pids.max) binds the daemon and its requests together.
	CgroupDir string
}

// ExecEnv names the environment variable that sets the exec of the
// daemons whose Config leaves Exec empty: test/system/sudo-rs.sh runs the
// shim's table and the timeout test with it set to "sudo", once with sudo
// and once with sudo-rs as /usr/bin/sudo.
const ExecEnv = "AGENT_SUDO_TEST_EXEC"

// AllowAll allows any program from the secure path with any arguments,
// any allowlisted environment variable, SSH agent forwarding and stdin.
const AllowAll = `
[[rule]]
name = "allow everything"
action = "allow"
match = ["*", "**"]
env = ["*"]
forward_agent = true
stdin = true
`

// AskRules deny rm, ask for touch and allow everything else (any
// environment variable and stdin): the rules of the tests of what an agent
// sees of each verdict.
const AskRules = `
[[rule]]
name = "no rm"
action = "deny"
match = ["rm", "**"]

[[rule]]
name = "ask for touch"
action = "ask"
match = ["touch", "**"]

[[rule]]
name = "allow the rest"
action = "allow"
match = ["*", "**"]
env = ["*"]
stdin = true
`

// Daemon is an agent-sudod configured by Configure, and running once
// started by Start.
type Daemon struct {
	t testing.TB
	// Dir is the daemon's temporary directory, reachable by every user; it
	// is removed when the test ends.
	Dir string
	// Socket and ApproverSocket are the client and approver sockets.
	Socket, ApproverSocket string
	// ConfigPath is the configuration file, and AuditLog the audit log it
	// names (Config.AuditLog, by default Dir/audit.jsonl).
	ConfigPath, AuditLog string
	// Logs collects the daemon's output.
	Logs *Buffer
	// Cmd is the daemon's process, nil when not started by Start.
	Cmd *exec.Cmd
	// Done receives the result of Cmd.Wait once the daemon exits.
	Done chan error

	activate  func(socket string) *os.File
	env       []string
	hostname  string
	cgroupDir string
}

// Configure writes the configuration c describes into a temporary directory
// and returns the daemon it describes, not started.
func Configure(t testing.TB, c Config) *Daemon {
	t.Helper()
	// Unix socket paths are limited to 107 bytes, and t.TempDir can be long,
	// so the daemon gets a short directory of its own.
	dir, err := os.MkdirTemp("", "asd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Other users must be able to reach the socket directory for the tests
	// that connect as them; the socket's own mode still applies.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.Exec, os.Getenv(ExecEnv))
	def(&c.Exec, "direct")
	if c.Cgroup == "" {
		c.Cgroup = "required"
		if CgroupsAvailable() != nil {
			c.Cgroup = "best-effort"
		}
	}
	def(&c.SocketGroup, "root")
	def(&c.ApprovalTimeout, "2s")
	def(&c.CommandTimeout, "20s")
	def(&c.ReadTimeout, "2s")
	def(&c.AuditLog, filepath.Join(dir, "audit.jsonl"))
	if c.MaxConnections == 0 {
		c.MaxConnections = 64
	}
	d := &Daemon{
		t:              t,
		Dir:            dir,
		AuditLog:       c.AuditLog,
		Socket:         filepath.Join(dir, "run", "agent-sudo.sock"),
		ApproverSocket: filepath.Join(dir, "run", "approver.sock"),
		ConfigPath:     filepath.Join(dir, "config.toml"),
		Logs:           &Buffer{},
		activate:       c.Activate,
		env:            c.Env,
		hostname:       c.Hostname,
		cgroupDir:      c.CgroupDir,
	}
	cfg := fmt.Sprintf(`
socket = %q
socket_group = %q
approver_socket = %q
audit_log = %q
exec = %q
cgroup = %q
approval_timeout = %q
command_timeout = %q
kill_grace = "1s"
read_timeout = %q
shutdown_timeout = "5s"
max_connections = %d
%s
%s
`, d.Socket, c.SocketGroup, d.ApproverSocket, c.AuditLog, c.Exec, c.Cgroup,
		c.ApprovalTimeout, c.CommandTimeout, c.ReadTimeout, c.MaxConnections, c.Extra, c.Rules)
	if err := os.WriteFile(d.ConfigPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

// Start builds the binaries, starts agent-sudod with the configuration c
// describes, and waits until it answers a ping. When the test ends it stops
// the daemon (see Stop) and, if the test failed, logs its output. Start
// skips the test unless it runs as root.
func Start(t testing.TB, c Config) *Daemon {
	t.Helper()
	RequireRoot(t)
	d := Configure(t, c)
	d.launch()
	t.Cleanup(func() {
		d.Stop()
		if t.Failed() {
			t.Logf("agent-sudod's log:\n%s", d.Logs.String())
		}
	})
	d.WaitReady()
	return d
}

// Restart stops a daemon started by Start (see Stop) and starts it again
// (see StartAgain).
func (d *Daemon) Restart() {
	d.t.Helper()
	d.Stop()
	d.StartAgain()
}

// StartAgain starts a daemon started by Start and since stopped again, with
// the same configuration, sockets and log buffer, and waits until it
// answers a ping.
func (d *Daemon) StartAgain() {
	d.t.Helper()
	d.launch()
	d.WaitReady()
}

// launch starts the daemon's process; Done receives its Wait.
func (d *Daemon) launch() {
	t := d.t
	t.Helper()
	bin, _ := Binaries(t)
	d.Done = make(chan error, 1)
	d.Cmd = exec.Command(bin, "--config", d.ConfigPath)
	d.Cmd.Env = append(os.Environ(), "NOTIFY_SOCKET=", "LISTEN_FDS=", "LISTEN_PID=", "SSH_AUTH_SOCK=")
	if d.activate != nil {
		if err := os.MkdirAll(filepath.Dir(d.Socket), 0o755); err != nil {
			t.Fatal(err)
		}
		// LISTEN_PID must be the daemon's own pid, which is known only
		// once it runs: a shell sets it to its pid and execs the daemon
		// in place (a test harness, not something the product does).
		// The socket is named as agent-sudo.socket names it.
		d.Cmd = exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ LISTEN_FDS=1 LISTEN_FDNAMES=agent exec "$0" "$@"`, bin, "--config", d.ConfigPath)
		d.Cmd.Env = append(os.Environ(), "NOTIFY_SOCKET=", "SSH_AUTH_SOCK=")
		d.Cmd.ExtraFiles = []*os.File{d.activate(d.Socket)}
	}
	d.Cmd.Env = RaceEnv(append(d.Cmd.Env, d.env...))
	if d.hostname != "" {
		// unshare and the shell exec in place: the daemon keeps the pid
		// that Stop signals.
		d.Cmd.Args = append([]string{"unshare", "--uts", "--", "/bin/sh", "-c", `hostname "$0" && exec "$@"`, d.hostname}, d.Cmd.Args...)
		path, err := exec.LookPath("unshare")
		if err != nil {
			t.Fatalf("Hostname needs unshare: %v", err)
		}
		d.Cmd.Path = path
	}
	d.Cmd.Stdout = d.Logs
	d.Cmd.Stderr = d.Logs
	start := d.Cmd.Start
	if d.cgroupDir != "" {
		start = func() error { return startIn(d.Cmd, d.cgroupDir) }
	}
	if err := start(); err != nil {
		t.Fatal(err)
	}
	done := d.Done
	cmd := d.Cmd
	go func() { done <- cmd.Wait() }()
}

// WaitReady waits up to 30s until the daemon answers a ping, failing the
// test if it does not or if a daemon started by Start exits first.
func (d *Daemon) WaitReady() {
	d.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-d.Done: // nil, never ready, when not started by Start
			d.t.Fatalf("agent-sudod exited during start-up: %v\n%s", err, d.Logs.String())
		default:
		}
		err := d.Ping()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("agent-sudod did not answer a ping within 30s: %v\n%s", err, d.Logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Ping pings the daemon with a one-second timeout.
func (d *Daemon) Ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := client.New(d.Socket).Ping(ctx)
	return err
}

// Stop sends SIGTERM to a daemon started by Start and waits up to 20s for a
// clean exit, failing the test otherwise. It does nothing once the daemon
// has exited and been waited for.
func (d *Daemon) Stop() {
	if d.Cmd == nil || d.Cmd.ProcessState != nil {
		return
	}
	_ = d.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.Done:
		if err != nil {
			d.t.Errorf("agent-sudod exited with %v after SIGTERM\n%s", err, d.Logs.String())
		}
	case <-time.After(20 * time.Second):
		_ = d.Cmd.Process.Kill()
		d.t.Errorf("agent-sudod did not exit within 20s of SIGTERM\n%s", d.Logs.String())
	}
}

// Kill sends SIGKILL to a daemon started by Start and waits until it has
// exited: a daemon that dies with no chance to clean up (kill -9, a crash,
// the OOM killer). StartAgain starts it again on the same state.
func (d *Daemon) Kill() {
	d.t.Helper()
	if d.Cmd == nil || d.Cmd.ProcessState != nil {
		return
	}
	_ = d.Cmd.Process.Kill()
	select {
	case <-d.Done:
	case <-time.After(20 * time.Second):
		d.t.Fatalf("agent-sudod did not exit within 20s of SIGKILL")
	}
}

// Send writes one raw line (a newline is added) to the client socket and
// returns the raw response line.
func (d *Daemon) Send(line string) string {
	d.t.Helper()
	c, err := net.Dial("unix", d.Socket)
	if err != nil {
		d.t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		d.t.Fatalf("write: %v", err)
	}
	resp, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		d.t.Fatalf("read response to %.200s: %v (got %q)\n%s", line, err, resp, d.Logs.String())
	}
	return resp
}

// Run sends req through the client library, adding the current time unless
// req has one, and fails the test if no response comes within 60s.
func (d *Daemon) Run(req *proto.Request) *proto.Response {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if req.Time.IsZero() {
		req.Time = time.Now()
	}
	resp, err := client.New(d.Socket).Run(ctx, req)
	if err != nil {
		d.t.Fatalf("Run(%q): %v\n%s", req.Pipeline, err, d.Logs.String())
	}
	return resp
}
