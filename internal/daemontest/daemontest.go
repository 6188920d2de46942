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
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/account"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
)

var (
	buildOnce sync.Once
	binDir    string
	built     bool
	buildErr  error
)

// BinDirEnv names the environment variable that gives Binaries a directory
// holding agent-sudod and agent-sudo already built for this test run, so
// that each test process does not link its own: make unit builds them once,
// with -race, for every package. The directory must be one only root can
// enter, as Binaries' own is.
const BinDirEnv = "AGENT_SUDO_TEST_BINDIR"

// Binaries builds agent-sudod and agent-sudo once per test process, with
// the race detector when the tests run with it, and returns their paths;
// when BinDirEnv is set it returns those in that directory instead.
// RemoveBinaries removes what it built. It skips the test under -short:
// building them takes longer than a -short run may.
func Binaries(t testing.TB) (daemon, cli string) {
	t.Helper()
	testenv.Slow(t, "builds agent-sudod and agent-sudo for an end-to-end test")
	buildOnce.Do(func() {
		if dir := os.Getenv(BinDirEnv); dir != "" {
			binDir = dir
			for _, name := range []string{"agent-sudod", "agent-sudo"} {
				if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
					buildErr = fmt.Errorf("%s=%s: %w", BinDirEnv, dir, err)
				}
			}
			return
		}
		dir, err := os.MkdirTemp("", "agent-sudo-bin")
		if err != nil {
			buildErr = err
			return
		}
		binDir, built = dir, true
		args := []string{"build", "-o", dir + string(filepath.Separator)}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "github.com/agent-sudo/agent-sudo/cmd/agent-sudod", "github.com/agent-sudo/agent-sudo/cmd/agent-sudo")
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build agent-sudod agent-sudo: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "agent-sudod"), filepath.Join(binDir, "agent-sudo")
}

// RemoveBinaries removes what Binaries built (not a BinDirEnv directory);
// Main calls it after m.Run.
func RemoveBinaries() {
	if built {
		_ = os.RemoveAll(binDir)
	}
}

// quickExit is the GORACE option that stops a program built with the race
// detector from sleeping when it exits: by default (atexit_sleep_ms=1000)
// each one waits a second before exiting, and the end-to-end tests start
// such programs hundreds of times (the daemon, the CLI, a test binary
// acting as a client), each time waiting for it to exit.
const quickExit = "atexit_sleep_ms=0"

// RaceEnv returns env, an environment for a program the test starts, with
// GORACE set so that a program built with the race detector exits without
// sleeping first. GORACE options already in env, or else in this
// process's environment, are kept; an atexit_sleep_ms among them wins.
func RaceEnv(env []string) []string {
	gorace, found := os.LookupEnv("GORACE")
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GORACE="); ok {
			gorace, found = v, true
			continue
		}
		out = append(out, kv)
	}
	switch {
	case !found || gorace == "":
		gorace = quickExit
	case !strings.Contains(gorace, "atexit_sleep_ms"):
		gorace += " " + quickExit
	}
	return append(out, "GORACE="+gorace)
}

// Main is the TestMain of a package whose tests use Binaries: it sets
// GORACE in this process's environment, which the programs the tests start
// inherit, as RaceEnv does; runs the tests; removes the binaries; and exits
// with the tests' status.
func Main(m *testing.M) {
	for _, kv := range RaceEnv(nil) {
		if v, ok := strings.CutPrefix(kv, "GORACE="); ok {
			if err := os.Setenv("GORACE", v); err != nil {
				fmt.Fprintf(os.Stderr, "daemontest: set GORACE: %v\n", err)
				os.Exit(1)
			}
		}
	}
	code := m.Run()
	RemoveBinaries()
	os.Exit(code)
}

var (
	cgroupsOnce sync.Once
	cgroupsErr  error
)

// CgroupsAvailable reports whether this system offers the daemon
// per-request cgroups (runner.OpenCgroups succeeds for a root process), and
// if not, why.
func CgroupsAvailable() error {
	cgroupsOnce.Do(func() {
		if os.Geteuid() != 0 {
			cgroupsErr = errors.New("not root")
			return
		}
		_, cgroupsErr = runner.OpenCgroups()
	})
	return cgroupsErr
}

// RequireCgroups skips the test unless the daemon can make per-request
// cgroups here.
func RequireCgroups(t testing.TB) {
	t.Helper()
	if err := CgroupsAvailable(); err != nil {
		t.Skipf("no per-request cgroups on this system: %v", err)
	}
}

// RequireRoot skips the test under -short and unless it runs as root (see
// testenv.NeedsRoot).
func RequireRoot(t testing.TB) {
	t.Helper()
	testenv.NeedsRoot(t)
}

// Config is the configuration a test starts the daemon with: everything in
// a temporary directory, short timeouts, and the rules the test gives. The
// zero value is a daemon with no rules, so every request asks.
type Config struct {
	// Exec is "direct" (the default) or "sudo".
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
}

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

	activate func(socket string) *os.File
	env      []string
	hostname string
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
	if err := d.Cmd.Start(); err != nil {
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

// Buffer collects the daemon's output from two pipes.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	// grew, when not nil, is closed by the next Write: a Wait blocks on
	// it instead of polling.
	grew chan struct{}
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.grew != nil {
		close(b.grew)
		b.grew = nil
	}
	return b.buf.Write(p)
}

// Wait blocks until what was written contains s and returns it, or
// returns what was written and ctx's error once ctx is done.
func (b *Buffer) Wait(ctx context.Context, s string) (string, error) {
	for {
		b.mu.Lock()
		if all := b.buf.String(); strings.Contains(all, s) {
			b.mu.Unlock()
			return all, nil
		}
		if b.grew == nil {
			b.grew = make(chan struct{})
		}
		grew := b.grew
		b.mu.Unlock()
		select {
		case <-grew:
		case <-ctx.Done():
			return b.String(), ctx.Err()
		}
	}
}

// WaitLog waits until the daemon's output contains s, failing the test if
// it does not within 30s, and returns the output.
func (d *Daemon) WaitLog(s string) string {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logs, err := d.Logs.Wait(ctx, s)
	if err != nil {
		d.t.Fatalf("agent-sudod did not log %q within 30s:\n%s", s, logs)
	}
	return logs
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Console is a bare approver-channel client speaking the JSON lines of
// docs/approver-protocol.md. Its methods fail the test on any error.
type Console struct {
	t    testing.TB
	conn net.Conn
	in   *bufio.Scanner
	// LastSize is the length in bytes of the last line Next read.
	LastSize int
	// Timeout is how long Next waits for a line; zero means 30s.
	Timeout time.Duration
	// Hello is the daemon's greeting.
	Hello approval.Message
}

// Dial connects to the approver socket at socket, reads the hello and the
// grants that open the channel, and closes the connection when the test
// ends.
func Dial(t testing.TB, socket string) *Console {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatalf("dial the approver socket: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	sc := bufio.NewScanner(conn)
	sc.Buffer(nil, approval.MaxLine)
	c := &Console{t: t, conn: conn, in: sc}
	if c.Hello = c.Next(); c.Hello.Type != approval.MsgHello || c.Hello.Version == "" {
		t.Fatalf("first message %+v, want hello", c.Hello)
	}
	if m := c.Next(); m.Type != approval.MsgGrants {
		t.Fatalf("second message %+v, want grants", m)
	}
	return c
}

// Next returns the next message, waiting up to 30s.
func (c *Console) Next() approval.Message {
	c.t.Helper()
	wait := c.Timeout
	if wait == 0 {
		wait = 30 * time.Second
	}
	_ = c.conn.SetReadDeadline(time.Now().Add(wait))
	if !c.in.Scan() {
		c.t.Fatalf("approver channel: closed or no message within %s: %v", wait, c.in.Err())
	}
	c.LastSize = len(c.in.Bytes()) + 1
	var m approval.Message
	if err := json.Unmarshal(c.in.Bytes(), &m); err != nil {
		c.t.Fatalf("approver channel: bad line %q: %v", c.in.Bytes(), err)
	}
	return m
}

// NextOf skips messages until one of type typ.
func (c *Console) NextOf(typ string) approval.Message {
	c.t.Helper()
	for {
		if m := c.Next(); m.Type == typ {
			return m
		}
	}
}

// Pending skips messages until the pending message for request id.
func (c *Console) Pending(id string) approval.Message {
	c.t.Helper()
	for {
		if m := c.Next(); m.Type == approval.MsgPending && m.ID == id {
			return m
		}
	}
}

// Result skips messages until the result for the request or grant id.
func (c *Console) Result(id string) approval.Message {
	c.t.Helper()
	for {
		if m := c.Next(); m.Type == approval.MsgResult && (m.ID == id || m.Grant == id) {
			return m
		}
	}
}

// Send writes m as one line.
func (c *Console) Send(m approval.Message) {
	c.t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
}

// accountCmd runs useradd, groupadd, userdel or groupdel, retrying while
// another process holds the lock on /etc/passwd or /etc/group.
func accountCmd(args ...string) error {
	var out []byte
	var err error
	for attempt := range 40 {
		out, err = exec.Command(args[0], args[1:]...).CombinedOutput()
		if err == nil {
			return nil
		}
		if !bytes.Contains(out, []byte("lock")) {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 25 * time.Millisecond)
	}
	return fmt.Errorf("%v: %v: %s", args, err, bytes.TrimSpace(out))
}

// uniqueName returns "asudo-" + area + "-" + a random suffix: a user or
// group name no other test uses (at most 32 bytes for short areas).
func uniqueName(area string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("asudo-%s-%x", area, b)
}

// AddGroup creates a group with a unique name built from area, removed
// when the test ends, and returns its name and gid. It needs root.
func AddGroup(t testing.TB, area string) (name string, gid uint32) {
	t.Helper()
	RequireRoot(t)
	name = uniqueName(area)
	if err := accountCmd("groupadd", name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := accountCmd("groupdel", name); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	g, err := user.LookupGroup(name)
	if err != nil {
		t.Fatal(err)
	}
	id, err := account.ParseID(g.Gid)
	if err != nil {
		t.Fatal(err)
	}
	return name, id
}

// AddUser creates a user with a unique name built from area, no home
// directory and no login shell, with the given supplementary groups,
// removed (with its own primary group) when the test ends. It needs root.
func AddUser(t testing.TB, area string, groups ...string) *User {
	t.Helper()
	RequireRoot(t)
	name := uniqueName(area)
	args := []string{"useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group"}
	if len(groups) > 0 {
		args = append(args, "--groups", strings.Join(groups, ","))
	}
	if err := accountCmd(append(args, name)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := accountCmd("userdel", name); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	u, err := LookupUser(name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// User is a local account as a test runs processes under it.
type User struct {
	Name     string
	UID, GID uint32
	// Groups are its supplementary groups.
	Groups []uint32
}

// LookupUser reads name's ids and groups from the user database.
func LookupUser(name string) (*User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	r := &User{Name: name}
	if r.UID, err = account.ParseID(u.Uid); err != nil {
		return nil, fmt.Errorf("user %q: uid: %w", name, err)
	}
	if r.GID, err = account.ParseID(u.Gid); err != nil {
		return nil, fmt.Errorf("user %q: gid: %w", name, err)
	}
	gids, err := u.GroupIds()
	if err != nil {
		return nil, err
	}
	for _, g := range gids {
		id, err := account.ParseID(g)
		if err != nil {
			return nil, fmt.Errorf("user %q: group: %w", name, err)
		}
		r.Groups = append(r.Groups, id)
	}
	return r, nil
}

// Command returns cmd set to run as u, with u's supplementary groups, as
// `setpriv --init-groups` would.
func (u *User) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}}
	return cmd
}

// PublicCLI returns a copy of the agent-sudo binary that every user can
// run: Binaries builds into a directory only root can enter.
func (d *Daemon) PublicCLI() string {
	d.t.Helper()
	_, cli := Binaries(d.t)
	return d.PublicCopy(cli, "agent-sudo")
}

// PublicCopy returns a copy of the program at src, as Dir/name, that every
// user can run; it is written once per daemon (testenv.WriteExecutable),
// and later calls return it.
func (d *Daemon) PublicCopy(src, name string) string {
	d.t.Helper()
	dst := filepath.Join(d.Dir, name)
	if _, err := os.Stat(dst); err == nil {
		return dst
	}
	testenv.CopyExecutable(d.t, src, dst)
	return dst
}

// Mark is a named pipe in the daemon's directory through which a command
// the daemon runs tells the test that it got somewhere, so that the test
// waits for that event instead of a guessed time: the command runs Shell,
// which blocks until the test's Wait has read it.
type Mark struct {
	t    testing.TB
	path string
}

// Mark makes a named pipe called name in d.Dir that any user's command can
// write to.
func (d *Daemon) Mark(name string) *Mark {
	d.t.Helper()
	path := filepath.Join(d.Dir, name)
	if err := syscall.Mkfifo(path, 0o666); err != nil {
		d.t.Fatalf("mkfifo %s: %v", path, err)
	}
	// The umask may have narrowed the mode.
	if err := os.Chmod(path, 0o666); err != nil {
		d.t.Fatal(err)
	}
	return &Mark{t: d.t, path: path}
}

// Shell is the shell command that reaches the mark: it writes a line to
// the pipe, blocking until the test reads it.
func (m *Mark) Shell() string { return "echo reached > '" + m.path + "'" }

// Wait blocks until a command has run Shell, failing the test after 30s.
func (m *Mark) Wait() {
	m.t.Helper()
	done := make(chan error, 1)
	go func() {
		f, err := os.Open(m.path) // blocks until a writer opens the pipe
		if err == nil {
			_, err = io.ReadAll(f)
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			m.t.Fatalf("read the mark %s: %v", m.path, err)
		}
	case <-time.After(30 * time.Second):
		// Release the reader blocked in open.
		if f, err := os.OpenFile(m.path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		m.t.Fatalf("no command reached the mark %s within 30s", m.path)
	}
}

// AuditRecords returns the records of request id in d's audit log, in
// order (every record when id is ""); a line that does not decode fails
// the test.
func (d *Daemon) AuditRecords(id string) []audit.Record {
	d.t.Helper()
	b, err := os.ReadFile(d.AuditLog)
	if err != nil {
		d.t.Fatal(err)
	}
	var out []audit.Record
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var r audit.Record
		if err := json.Unmarshal(line, &r); err != nil {
			d.t.Fatalf("audit line %q: %v", line, err)
		}
		if id == "" || r.ID == id {
			out = append(out, r)
		}
	}
	return out
}
