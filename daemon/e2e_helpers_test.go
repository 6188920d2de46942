package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/proto"
)

// The end-to-end tests build the real agent-sudod once, start it on a
// temporary socket with a temporary configuration, and talk to it over the
// wire. They need root (the daemon runs commands as other users); CI runs
// them as root.

var (
	buildOnce sync.Once
	daemonBin string
	buildErr  error
)

// clientEnv makes the test binary act as a one-shot wire client instead of
// running tests: the parent starts it as another user to test what a
// non-root peer sees.
const clientEnv = "AGENT_SUDO_E2E_CLIENT"

func TestMain(m *testing.M) {
	if line := os.Getenv(clientEnv); line != "" {
		os.Exit(actAsClient(os.Getenv("AGENT_SUDO_E2E_SOCKET"), line))
	}
	code := m.Run()
	if daemonBin != "" {
		_ = os.RemoveAll(filepath.Dir(daemonBin))
	}
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

func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("end-to-end daemon tests need root; CI runs them as root")
	}
}

func buildDaemon(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agent-sudod-bin")
		if err != nil {
			buildErr = err
			return
		}
		daemonBin = filepath.Join(dir, "agent-sudod")
		args := []string{"build", "-o", daemonBin}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "github.com/agent-sudo/agent-sudo/cmd/agent-sudod")
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build agent-sudod: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return daemonBin
}

// testDaemon is a running agent-sudod.
type testDaemon struct {
	t      testing.TB
	dir    string
	socket string
	cmd    *exec.Cmd
	logs   *syncBuffer
	done   chan error
}

// daemonConfig is the configuration the tests start from: everything in a
// temporary directory, short timeouts, and rules given by each test.
type daemonConfig struct {
	exec            string // "direct" or "sudo"
	socketGroup     string
	extra           string // more top-level keys
	rules           string // [[rule]] tables
	approvalTimeout string
	commandTimeout  string
	maxConnections  int
	// auditLog replaces the default audit log (dir/audit.jsonl).
	auditLog string
	// env is added to the daemon's environment.
	env []string
	// activate, when set, is called with the socket path and returns a
	// listening socket that is passed to the daemon as systemd would
	// (fd 3, LISTEN_FDS=1, LISTEN_PID of the daemon).
	activate func(socket string) *os.File
}

// allowAll allows any program from the secure path with any arguments.
const allowAll = `
[[rule]]
name = "allow everything"
action = "allow"
match = ["*", "**"]
`

func startDaemon(t testing.TB, c daemonConfig) *testDaemon {
	t.Helper()
	requireRoot(t)
	bin := buildDaemon(t)
	// Unix socket paths are limited to 107 bytes, and t.TempDir can be long,
	// so the socket lives in a short directory of its own.
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
	if c.exec == "" {
		c.exec = "direct"
	}
	if c.socketGroup == "" {
		c.socketGroup = "root"
	}
	if c.approvalTimeout == "" {
		c.approvalTimeout = "2s"
	}
	if c.commandTimeout == "" {
		c.commandTimeout = "20s"
	}
	if c.maxConnections == 0 {
		c.maxConnections = 64
	}
	socket := filepath.Join(dir, "run", "agent-sudo.sock")
	if c.auditLog == "" {
		c.auditLog = filepath.Join(dir, "audit.jsonl")
	}
	cfg := fmt.Sprintf(`
socket = %q
socket_group = %q
approver_socket = %q
audit_log = %q
exec = %q
approval_timeout = %q
command_timeout = %q
kill_grace = "1s"
read_timeout = "2s"
shutdown_timeout = "5s"
max_connections = %d
%s
%s
`, socket, c.socketGroup, filepath.Join(dir, "run", "approver.sock"), c.auditLog,
		c.exec, c.approvalTimeout, c.commandTimeout, c.maxConnections, c.extra, c.rules)
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &testDaemon{t: t, dir: dir, socket: socket, logs: &syncBuffer{}, done: make(chan error, 1)}
	d.cmd = exec.Command(bin, "--config", cfgPath)
	d.cmd.Env = append(os.Environ(), "NOTIFY_SOCKET=", "LISTEN_FDS=", "LISTEN_PID=", "SSH_AUTH_SOCK=")
	if c.activate != nil {
		if err := os.MkdirAll(filepath.Dir(socket), 0o755); err != nil {
			t.Fatal(err)
		}
		// LISTEN_PID must be the daemon's own pid, which is known only
		// once it runs: a shell sets it to its pid and execs the daemon
		// in place (a test harness, not something the product does).
		d.cmd = exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@"`, bin, "--config", cfgPath)
		d.cmd.Env = append(os.Environ(), "NOTIFY_SOCKET=", "SSH_AUTH_SOCK=")
		d.cmd.ExtraFiles = []*os.File{c.activate(socket)}
	}
	d.cmd.Env = append(d.cmd.Env, c.env...)
	d.cmd.Stdout = d.logs
	d.cmd.Stderr = d.logs
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(d.stop)
	d.waitReady()
	return d
}

func (d *testDaemon) waitReady() {
	d.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-d.done:
			d.t.Fatalf("agent-sudod exited during start-up: %v\n%s", err, d.logs.String())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := client.New(d.socket).Ping(ctx)
		cancel()
		if err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.t.Fatalf("agent-sudod did not answer a ping within 30s\n%s", d.logs.String())
}

// stop sends SIGTERM and waits for a clean exit.
func (d *testDaemon) stop() {
	if d.cmd.ProcessState != nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		if err != nil {
			d.t.Errorf("agent-sudod exited with %v after SIGTERM\n%s", err, d.logs.String())
		}
	case <-time.After(20 * time.Second):
		_ = d.cmd.Process.Kill()
		d.t.Errorf("agent-sudod did not exit within 20s of SIGTERM\n%s", d.logs.String())
	}
}

// send writes one raw line (a newline is added) and returns the raw
// response line.
func (d *testDaemon) send(line string) string {
	d.t.Helper()
	c, err := net.Dial("unix", d.socket)
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
		d.t.Fatalf("read response to %.200s: %v (got %q)\n%s", line, err, resp, d.logs.String())
	}
	return resp
}

// run sends a request for pipeline through the client library.
func (d *testDaemon) run(req *proto.Request) *proto.Response {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if req.Time.IsZero() {
		req.Time = time.Now()
	}
	resp, err := client.New(d.socket).Run(ctx, req)
	if err != nil {
		d.t.Fatalf("Run(%q): %v\n%s", req.Pipeline, err, d.logs.String())
	}
	return resp
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

// syncBuffer collects the daemon's log output from two pipes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
