package daemon_test

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// notifySocket listens where the daemon sends its sd_notify messages, as
// systemd does, and returns its path and the messages.
func notifySocket(t *testing.T) (string, <-chan string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "asn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	msgs := make(chan string, 64)
	go func() {
		defer close(msgs)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	return path, msgs
}

// nextNotify returns the next sd_notify message that contains want, failing
// the test if none comes within 30s.
func nextNotify(t *testing.T, msgs <-chan string, want string) string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatalf("notify socket closed before %q", want)
			}
			if strings.Contains(m, want) {
				return m
			}
		case <-timeout:
			t.Fatalf("no sd_notify message with %q within 30s", want)
		}
	}
}

// TestE2EReload: SIGHUP makes the running daemon read its configuration
// file again: a rule added to it allows a request that had to ask before,
// the console connected before the reload still gets requests, a session
// grant made before it still applies, a changed key that needs a restart is
// logged and not applied, and systemd is told RELOADING=1, then READY=1 with
// the outcome in STATUS=. A file that is not valid is refused, logged, and
// the configuration in force stays.
func TestE2EReload(t *testing.T) {
	t.Parallel()
	sock, notes := notifySocket(t)
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "30s", Env: []string{"NOTIFY_SOCKET=" + sock}})
	if m := nextNotify(t, notes, "READY=1"); !strings.Contains(m, "STATUS=listening on "+d.Socket+"; 0 rules") {
		t.Errorf("start-up notification %q, want READY=1 and the status", m)
	}
	c := daemontest.Dial(t, d.ApproverSocket)
	decide := func(req *proto.Request, choice approval.Choice) *proto.Response {
		t.Helper()
		done := d.Ask(t, req).Done
		p := c.Pending(req.ID)
		c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: choice})
		return <-done
	}
	if resp := decide(&proto.Request{ID: "before", Pipeline: [][]string{{"true"}}, Privileged: true}, approval.DenyOnce); resp.Status != proto.StatusDenied {
		t.Fatalf("before the reload: %s %q, want denied by the console", resp.Status, resp.Message)
	}
	granted := func(id string) *proto.Request {
		return &proto.Request{ID: id, Session: "s1", Pipeline: [][]string{{"echo", "granted"}}, Privileged: true}
	}
	if resp := decide(granted("grant"), approval.AllowSession); resp.Status != proto.StatusOK {
		t.Fatalf("session grant: %s %q", resp.Status, resp.Message)
	}

	text, err := os.ReadFile(d.ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	text = []byte(strings.Replace(string(text), "max_connections = 64", "max_connections = 32", 1) + `
[[rule]]
name = "true is harmless"
action = "allow"
match = ["true"]
`)
	if err := os.WriteFile(d.ConfigPath, text, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	nextNotify(t, notes, "RELOADING=1")
	if m := nextNotify(t, notes, "READY=1"); !strings.Contains(m, "; 1 rules; reload 1 at ") || !strings.HasSuffix(m, " ok") {
		t.Errorf("after the reload: notification %q, want READY=1 and a status with the new rule and the reload ok", m)
	}
	d.WaitLog("msg=reloaded")
	if logs := d.Logs.String(); !strings.Contains(logs, "not applied until agent-sudod restarts: max_connections") {
		t.Errorf("the log does not say that max_connections needs a restart:\n%s", logs)
	}

	if resp := d.Run(&proto.Request{ID: "after", Pipeline: [][]string{{"true"}}, Privileged: true}); resp.Status != proto.StatusOK {
		t.Errorf("after the reload: %s %q, want allowed by the new rule", resp.Status, resp.Message)
	}
	if resp := d.Run(granted("grant-again")); resp.Status != proto.StatusOK || string(resp.Stdout) != "granted\n" {
		t.Errorf("after the reload: %s %q, want allowed by the session grant", resp.Status, resp.Message)
	}
	// The console connected before the reload still decides.
	if resp := decide(&proto.Request{ID: "asks", Pipeline: [][]string{{"false"}}, Privileged: true}, approval.DenyOnce); resp.Status != proto.StatusDenied {
		t.Errorf("a request no rule decides: %s %q, want denied by the console connected before the reload", resp.Status, resp.Message)
	}

	if err := os.WriteFile(d.ConfigPath, []byte("approval_timeout = \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// The failed reload is named, with its reason, and the status says the
	// configuration of reload 1 is in force: it never reads as reload 1's
	// "ok" (issue 33).
	if m := nextNotify(t, notes, "READY=1"); !strings.Contains(m, "; 1 rules; reload 2 failed at ") ||
		!strings.Contains(m, ": toml: ") || !regexp.MustCompile(`; running with the configuration of reload 1 \(at [0-9TZ:-]+\)$`).MatchString(m) {
		t.Errorf("after an invalid file: notification %q, want the old rule, reload 2 failed with its reason, and reload 1's configuration in force", m)
	}
	d.WaitLog("reload refused")
	if logs := d.Logs.String(); !strings.Contains(logs, "expected value but found") {
		t.Errorf("the log does not say why the reload was refused:\n%s", logs)
	}
	if resp := d.Run(&proto.Request{ID: "still", Pipeline: [][]string{{"true"}}, Privileged: true}); resp.Status != proto.StatusOK {
		t.Errorf("after an invalid file: %s %q, want allowed by the rule in force", resp.Status, resp.Message)
	}
}
