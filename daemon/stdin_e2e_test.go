package daemon_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2EStdinCLI runs "echo hello | agent-sudo run -- tee FILE" and the
// shim's "sudo tee", "sudo tee -a" and "sudo dd of=" through the real
// binaries and the real daemon in both exec modes: the input reaches the
// file (before the stdin extension it was emptied and the command exited
// 0). Oversize input is refused with a message and nothing is sent.
func TestE2EStdinCLI(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"direct", "sudo"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			if mode == "sudo" {
				if _, err := os.Stat("/usr/bin/sudo"); err != nil {
					t.Skip("sudo not installed")
				}
			}
			d := daemontest.Start(t, daemontest.Config{Exec: mode, Rules: daemontest.AllowAll})
			_, cli := daemontest.Binaries(t)
			sudo := filepath.Join(d.Dir, "sudo")
			if err := os.Symlink(cli, sudo); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(d.Dir, "target")
			if err := os.WriteFile(file, []byte("old\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			run := func(stdin string, argv ...string) (int, string, string) {
				t.Helper()
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Env = append(os.Environ(), "AGENT_SUDO_SOCKET="+d.Socket)
				cmd.Stdin = strings.NewReader(stdin)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				return code, stdout.String(), stderr.String()
			}
			content := func() string {
				b, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			if code, out, errs := run("hello\n", cli, "run", "--", "tee", file); code != 0 || out != "hello\n" || content() != "hello\n" {
				t.Fatalf("echo hello | agent-sudo run -- tee: exit %d, stdout %q, stderr %q, file %q", code, out, errs, content())
			}
			if code, _, errs := run("more\n", sudo, "tee", "-a", file); code != 0 || content() != "hello\nmore\n" {
				t.Fatalf("sudo tee -a: exit %d, stderr %q, file %q", code, errs, content())
			}
			if code, _, errs := run("via dd\n", sudo, "dd", "of="+file, "status=none"); code != 0 || content() != "via dd\n" {
				t.Fatalf("sudo dd of=: exit %d, stderr %q, file %q", code, errs, content())
			}
			if code, _, errs := run("ignored\n", cli, "run", "--no-stdin", "--", "tee", file); code != 0 || content() != "" {
				t.Fatalf("--no-stdin: exit %d, stderr %q, file %q", code, errs, content())
			}
			if err := os.WriteFile(file, []byte("kept\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			big := strings.Repeat("x", proto.MaxStdinBytes+1)
			code, _, errs := run(big, cli, "run", "--", "tee", file)
			if code != 2 || !strings.Contains(errs, "stdin holds more than 737280 bytes, the most one request can carry") ||
				!strings.Contains(errs, "nothing was sent") || content() != "kept\n" {
				t.Fatalf("oversize: exit %d, stderr %q, file %q", code, errs, content())
			}
			if code, _, errs := run(big, sudo, "tee", file); code != 2 || !strings.Contains(errs, "stdin holds more than") || content() != "kept\n" {
				t.Fatalf("oversize through the shim: exit %d, stderr %q, file %q", code, errs, content())
			}
		})
	}
}

// TestE2EStdinApproval checks, over the real approver channel, that the
// approver's Shown carries the stdin's size, hash and content; that a
// decision made on other stdin is refused; that a session grant covers only
// the exact same stdin; and that the audit log records the stdin's hash and
// size but not its content.
func TestE2EStdinApproval(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "20s"})
	c := daemontest.Dial(t, d.ApproverSocket)
	input := []byte("top secret\x00\xff\n")
	sum := sha256.Sum256(input)
	req := func(id string, stdin []byte) *proto.Request {
		return &proto.Request{ID: id, Pipeline: [][]string{{"od", "-An", "-tx1"}}, Privileged: true, Session: "s-stdin", Stdin: stdin}
	}

	done := d.Ask(t, req("in-1", input)).Done
	p := c.Pending("in-1")
	s := p.Request.Stdin
	if s == nil || s.Size != len(input) || s.SHA256 != hex.EncodeToString(sum[:]) || !bytes.Equal(s.Data, input) {
		t.Fatalf("shown stdin %+v", s)
	}
	// The hash binds the stdin: a decision on other bytes is refused.
	other := *p.Request
	other.Stdin = approval.NewStdinShown([]byte("top secreT\x00\xff\n"))
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: other.Hash(), Decision: approval.AllowSession})
	if r := c.Result("in-1"); r.OK || !strings.Contains(r.Error, "hash mismatch") {
		t.Fatalf("decision on other stdin: %+v", r)
	}
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowSession})
	if r := c.Result("in-1"); !r.OK {
		t.Fatalf("decision refused: %+v", r)
	}
	const want = " 74 6f 70 20 73 65 63 72 65 74 00 ff 0a\n"
	if resp := <-done; resp.Status != proto.StatusOK || string(resp.Stdout) != want {
		t.Fatalf("response %+v stdout %q", resp, resp.Stdout)
	}

	// The grant covers the same stdin ...
	if resp := d.Ask(t, req("in-2", input)).Wait(); resp.Status != proto.StatusOK || string(resp.Stdout) != want {
		t.Fatalf("granted repeat: %+v", resp)
	}
	// ... but not other stdin, nor none: both ask again.
	for _, in := range [][]byte{[]byte("other"), nil} {
		id := "in-other"
		if in == nil {
			id = "in-none"
		}
		done = d.Ask(t, req(id, in)).Done
		p = c.Pending(id)
		c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.DenyOnce})
		if resp := <-done; resp.Status != proto.StatusDenied {
			t.Fatalf("%s: %+v", id, resp)
		}
	}

	// The audit log has the hash and size, never the content.
	log, err := os.ReadFile(d.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, l := range bytes.Split(log, []byte("\n")) {
		var rec struct {
			ID      string `json:"id"`
			Request *struct {
				StdinBytes  int    `json:"stdin_bytes"`
				StdinSHA256 string `json:"stdin_sha256"`
			} `json:"request"`
		}
		if len(l) == 0 || json.Unmarshal(l, &rec) != nil || rec.Request == nil {
			continue
		}
		if rec.ID == "in-1" || rec.ID == "in-2" {
			if rec.Request.StdinBytes != len(input) || rec.Request.StdinSHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("audit record of %s: %+v", rec.ID, *rec.Request)
			}
			found++
		}
	}
	if found != 2 {
		t.Errorf("found %d request records with stdin, want 2", found)
	}
	if bytes.Contains(log, []byte("top secret")) || bytes.Contains(log, []byte("dG9wIHNlY3JldA")) {
		t.Error("the audit log holds the stdin content")
	}
}

// TestE2EWireCompat sends the control requests of the protocol's origin
// (sudo-proxy 1.1), as docs/protocol.md describes them: ping with an empty
// pipeline is answered ok with the version; stop is refused with a clear
// error and the daemon keeps serving; "action": "exec" and a "version" field
// in the request are accepted.
func TestE2EWireCompat(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll})
	now := func() string { return time.Now().UTC().Format("2006-01-02T15:04:05Z") }
	var resp struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Message string `json:"message"`
		Version string `json:"version"`
		Stdout  string `json:"stdout"`
	}
	decode := func(line string) {
		t.Helper()
		resp.ID, resp.Status, resp.Message, resp.Version, resp.Stdout = "", "", "", "", ""
		if err := json.Unmarshal([]byte(line), &resp); err != nil {
			t.Fatalf("response %q: %v", line, err)
		}
	}
	decode(d.Send(`{"id":"cp-1","version":"1.1.0","action":"ping","pipeline":[],"time":"` + now() + `"}`))
	if resp.ID != "cp-1" || resp.Status != "ok" || resp.Version == "" {
		t.Fatalf("ping: %+v", resp)
	}
	decode(d.Send(`{"id":"cp-2","version":"1.1.0","action":"stop","pipeline":[],"time":"` + now() + `"}`))
	if resp.ID != "cp-2" || resp.Status != "error" || resp.Version == "" ||
		!strings.HasPrefix(resp.Message, `action "stop" is refused: agent-sudod is a system service shared by every user of this machine and is not stopped by its clients`) {
		t.Fatalf("stop: %+v", resp)
	}
	decode(d.Send(`{"id":"cp-3","version":"1.1.0","action":"exec","pipeline":[["echo","hi"]],"time":"` + now() + `"}`))
	if resp.ID != "cp-3" || resp.Status != "ok" || resp.Stdout != "aGkK" {
		t.Fatalf("exec after stop: %+v", resp)
	}
}
