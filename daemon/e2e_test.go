package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2EExecution runs pipelines through the daemon in both exec modes.
// Its case past the output cap moves two outputs of 20 MB per mode through
// the daemon; it runs without -race only (see heavy).
func TestE2EExecution(t *testing.T) {
	heavy(t) // it moves 40 MB of output per mode through the daemon without -race
	for _, mode := range []string{"direct", "sudo"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "sudo" {
				if _, err := exec.LookPath("sudo"); err != nil {
					t.Skip("sudo is not installed; .ci/run installs it")
				}
			}
			// socket_group nogroup lets the unprivileged subtest connect as
			// nobody; root is served as always.
			// read_timeout also bounds a stall in reading the answer: a
			// -race client on a loaded machine can stall for seconds in
			// the 35 MB answer of the truncation case.
			d := daemontest.Start(t, daemontest.Config{Exec: mode, Rules: daemontest.AllowAll, SocketGroup: "nogroup", ReadTimeout: "30s"})

			t.Run("single command", func(t *testing.T) {
				resp := d.Run(&proto.Request{Pipeline: [][]string{{"echo", "hello", "world"}}, Privileged: true})
				if resp.Status != proto.StatusOK || string(resp.Stdout) != "hello world\n" || len(resp.Stages) != 1 || resp.Stages[0].ExitCode != 0 {
					t.Fatalf("got %+v", resp)
				}
			})
			t.Run("runs as root", func(t *testing.T) {
				resp := d.Run(&proto.Request{Pipeline: [][]string{{"id", "-u"}}, Privileged: true})
				if string(resp.Stdout) != "0\n" {
					t.Fatalf("id -u printed %q, want 0", resp.Stdout)
				}
			})
			t.Run("three-stage pipeline", func(t *testing.T) {
				resp := d.Run(&proto.Request{Pipeline: [][]string{
					{"printf", "%s\\n", "alpha", "beta", "gamma"}, {"tr", "a-z", "A-Z"}, {"grep", "-c", "A"},
				}, Privileged: true})
				if resp.Status != proto.StatusOK || string(resp.Stdout) != "3\n" || len(resp.Stages) != 3 {
					t.Fatalf("got %+v (stdout %q)", resp, resp.Stdout)
				}
			})
			t.Run("non-zero exits and stderr per stage", func(t *testing.T) {
				resp := d.Run(&proto.Request{Pipeline: [][]string{
					{"sh", "-c", "echo first-err >&2; echo data; exit 3"},
					{"sh", "-c", "cat >/dev/null; echo second-err >&2; exit 5"},
					{"false"},
				}, Privileged: true})
				if resp.Status != proto.StatusOK {
					t.Fatalf("status %s: %s", resp.Status, resp.Message)
				}
				want := []struct {
					code   int
					stderr string
				}{{3, "first-err\n"}, {5, "second-err\n"}, {1, ""}}
				for i, w := range want {
					st := resp.Stages[i]
					if st.ExitCode != w.code || string(st.Stderr) != w.stderr {
						t.Errorf("stage %d: exit %d stderr %q, want %d %q", i, st.ExitCode, st.Stderr, w.code, w.stderr)
					}
				}
			})
			t.Run("truncation flags and exit 0 past the cap", func(t *testing.T) {
				testenv.SkipUnderRace(t, "moves two outputs of 20 MB through the daemon, each cut at the 16 MiB cap: the other cases check the same capture under -race")
				resp := d.Run(&proto.Request{Pipeline: [][]string{
					{"sh", "-c", "head -c 20000000 /dev/zero >&2"}, {"head", "-c", "20000000", "/dev/zero"},
				}, Privileged: true})
				if resp.Status != proto.StatusOK || !resp.StdoutTruncated || len(resp.Stdout) != proto.MaxOutputBytes {
					t.Fatalf("stdout: status %s truncated %v len %d", resp.Status, resp.StdoutTruncated, len(resp.Stdout))
				}
				if !resp.Stages[0].StderrTruncated || len(resp.Stages[0].Stderr) != proto.MaxOutputBytes {
					t.Fatalf("stderr: truncated %v len %d", resp.Stages[0].StderrTruncated, len(resp.Stages[0].Stderr))
				}
				if resp.Stages[0].ExitCode != 0 || resp.Stages[1].ExitCode != 0 {
					t.Fatalf("exit codes %d %d, want 0 0 (no SIGPIPE)", resp.Stages[0].ExitCode, resp.Stages[1].ExitCode)
				}
				if resp.Stages[1].StderrTruncated {
					t.Error("stage 1 stderr flagged truncated")
				}
			})
			t.Run("flags absent when not truncated", func(t *testing.T) {
				raw := d.Send(line(map[string]any{"pipeline": [][]string{{"echo", "x"}}}))
				if strings.Contains(raw, "truncated") {
					t.Fatalf("response carries a truncation flag: %s", raw)
				}
			})
			t.Run("environment", func(t *testing.T) {
				resp := d.Run(&proto.Request{Pipeline: [][]string{{"env"}}, Privileged: true,
					Env: map[string]string{"LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"}})
				env := string(resp.Stdout)
				for _, want := range []string{"LANG=C.UTF-8\n", "DEBIAN_FRONTEND=noninteractive\n", "HOME=/root\n", "USER=root\n"} {
					if !strings.Contains(env, want) {
						t.Errorf("env lacks %q:\n%s", want, env)
					}
				}
				if strings.Contains(env, "SSH_AUTH_SOCK") {
					t.Errorf("privileged command got SSH_AUTH_SOCK:\n%s", env)
				}
			})
			t.Run("cwd", func(t *testing.T) {
				resp := d.Run(&proto.Request{Pipeline: [][]string{{"pwd"}}, Privileged: true, Cwd: "/usr/share"})
				if string(resp.Stdout) != "/usr/share\n" {
					t.Fatalf("pwd = %q", resp.Stdout)
				}
				resp = d.Run(&proto.Request{Pipeline: [][]string{{"pwd"}}, Privileged: true})
				if string(resp.Stdout) != "/\n" {
					t.Fatalf("default cwd = %q, want /", resp.Stdout)
				}
			})
			t.Run("unprivileged runs as the peer", func(t *testing.T) {
				out := sendAs(t, d, "nobody", line(map[string]any{"pipeline": [][]string{{"id", "-un"}}, "privileged": false}))
				resp, err := proto.DecodeResponse([]byte(out))
				if err != nil {
					t.Fatalf("%v: %q", err, out)
				}
				if resp.Status != proto.StatusOK || string(resp.Stdout) != "nobody\n" {
					t.Fatalf("as nobody: %s %q %q", resp.Status, resp.Stdout, resp.Message)
				}
			})
		})
	}
}

func stages(n int) [][]string {
	out := make([][]string, n)
	for i := range out {
		out[i] = []string{"cat"}
	}
	return out
}

// sendAs runs the test binary as user name to send one line from that
// user's uid, and returns the raw response (or an error line).
func sendAs(t *testing.T, d *daemontest.Daemon, name, reqLine string) string {
	t.Helper()
	return sendAsPath(t, d, name, d.Socket, reqLine)
}

// sendAsPath is sendAs to the socket at sock.
func sendAsPath(t *testing.T, d *daemontest.Daemon, name, sock, reqLine string) string {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Skipf("no user %s: %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	cmd := exec.Command(publicTestBinary(t, d))
	cmd.Env = daemontest.RaceEnv([]string{clientEnv + "=" + reqLine, "AGENT_SUDO_E2E_SOCKET=" + sock})
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	// The response is on stdout alone: a test binary built with -cover
	// warns on stderr that it has nowhere to write its coverage.
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client as %s: %v\n%s%s", name, err, out, stderr.Bytes())
	}
	return string(out)
}

func TestE2EPeerAuthorisation(t *testing.T) {
	t.Parallel()
	// nobody's primary group on Debian is nogroup, so with socket_group =
	// nogroup the socket file lets nobody connect; whether the daemon then
	// serves it is the SO_PEERCRED check under test.
	g, err := user.LookupGroup("nogroup")
	if err != nil {
		t.Skip("no group nogroup")
	}
	t.Run("member of socket_group is served", func(t *testing.T) {
		t.Parallel()
		d := daemontest.Start(t, daemontest.Config{SocketGroup: g.Name, Rules: daemontest.AllowAll})
		out := sendAs(t, d, "nobody", line(map[string]any{"pipeline": [][]string{{"true"}}, "privileged": false}))
		if !strings.Contains(out, `"status":"ok"`) {
			t.Fatalf("nobody was not served: %s", out)
		}
	})
	t.Run("explicit allow lists refuse others", func(t *testing.T) {
		t.Parallel()
		d := daemontest.Start(t, daemontest.Config{SocketGroup: g.Name, Rules: daemontest.AllowAll,
			Extra: "allowed_users = [\"root\"]\nallowed_groups = []"})
		marker := d.Dir + "/must-not-exist"
		out := sendAs(t, d, "nobody", line(map[string]any{"id": "unauth-1", "pipeline": [][]string{{"touch", marker}}, "privileged": false}))
		if !contains(out, `"status":"error"`, `not allowed: user nobody (uid 65534) may not use agent-sudo`) {
			t.Fatalf("unauthorised peer got: %s", out)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the unauthorised request ran")
		}
		// root is still served.
		if resp := d.Run(&proto.Request{Pipeline: [][]string{{"true"}}, Privileged: true}); resp.Status != proto.StatusOK {
			t.Fatalf("root refused: %+v", resp)
		}
	})
	t.Run("socket mode keeps non-members out", func(t *testing.T) {
		t.Parallel()
		d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll}) // group root
		fi, err := os.Stat(d.Socket)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o660 {
			t.Errorf("socket mode %v, want 0660", fi.Mode().Perm())
		}
		out := sendAs(t, d, "nobody", line(map[string]any{"pipeline": [][]string{{"true"}}}))
		if !strings.Contains(out, "permission denied") {
			t.Fatalf("nobody reached a root-group socket: %s", out)
		}
	})
}

func TestE2EValidationErrors(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll})
	now := time.Now().UTC()
	tests := []struct {
		name, line, want, id string
	}{
		{"not json", `hello`, `invalid JSON: at byte offset 1: invalid character 'h' looking for beginning of value`, ""},
		{"not an object", `[]`, `invalid request: the request must be a JSON object, got an array`, ""},
		{"duplicate key", `{"id":"d1","id":"d2"}`, `invalid request: field \"id\": appears more than once`, ""},
		{"missing pipeline", line(map[string]any{"id": "v1"}), `invalid request: field \"pipeline\": is required`, "v1"},
		{"empty pipeline", line(map[string]any{"id": "v2", "pipeline": []any{}}), `field \"pipeline\": must have at least one stage`, "v2"},
		{"empty stage", line(map[string]any{"id": "v3", "pipeline": []any{[]any{}}}), `field \"pipeline[0]\": must not be empty`, "v3"},
		{"non-string arg", line(map[string]any{"id": "v4", "pipeline": []any{[]any{"echo", 1}}}), `field \"pipeline[0][1]\": must be a string, got a number`, "v4"},
		{"NUL arg", line(map[string]any{"id": "v5", "pipeline": []any{[]any{"echo", "a\x00"}}}), `contains a NUL byte`, "v5"},
		{"missing time", `{"id":"v6","pipeline":[["true"]]}`, `field \"time\": is required`, "v6"},
		{"bad time", line(map[string]any{"id": "v7", "time": "now", "pipeline": [][]string{{"true"}}}), `field \"time\": \"now\" is not an RFC 3339 timestamp`, "v7"},
		{"stale time", line(map[string]any{"id": "v8", "time": now.Add(-5 * time.Minute).Format(time.RFC3339), "pipeline": [][]string{{"true"}}}), `older than the daemon's clock`, "v8"},
		{"future time", line(map[string]any{"id": "v9", "time": now.Add(5 * time.Minute).Format(time.RFC3339), "pipeline": [][]string{{"true"}}}), `ahead of the daemon's clock`, "v9"},
		{"bad env name", line(map[string]any{"id": "v10", "pipeline": [][]string{{"true"}}, "env": map[string]string{"1X": "y"}}), `\"1X\" is not a valid variable name`, "v10"},
		{"env not allowed", line(map[string]any{"id": "v11", "pipeline": [][]string{{"true"}}, "env": map[string]string{"FOO": "y"}}), `FOO`, "v11"},
		{"env dangerous", line(map[string]any{"id": "v12", "pipeline": [][]string{{"true"}}, "env": map[string]string{"LD_PRELOAD": "/tmp/x.so"}}), `LD_PRELOAD`, "v12"},
		{"forward_agent privileged", line(map[string]any{"id": "v13", "pipeline": [][]string{{"true"}}, "forward_agent": true}), `field \"forward_agent\": true is only valid with \"privileged\": false`, "v13"},
		{"forward_agent without agent", line(map[string]any{"id": "v14", "pipeline": [][]string{{"true"}}, "forward_agent": true, "privileged": false}), `forward_agent: the daemon has no SSH agent to forward`, "v14"},
		{"unknown program", line(map[string]any{"id": "v15", "pipeline": [][]string{{"no-such-program-xyz"}}}), `pipeline[0]: `, "v15"},
		{"relative program path", line(map[string]any{"id": "v16", "pipeline": [][]string{{"./x"}}}), `pipeline[0]: `, "v16"},
		{"cwd missing", line(map[string]any{"id": "v17", "pipeline": [][]string{{"true"}}, "cwd": "/no/such/dir"}), `cwd \"/no/such/dir\"`, "v17"},
		{"cwd relative", line(map[string]any{"id": "v18", "pipeline": [][]string{{"true"}}, "cwd": "tmp"}), `field \"cwd\": must be an absolute path`, "v18"},
		{"too many stages", line(map[string]any{"id": "v19", "pipeline": stages(33)}), `field \"pipeline\": has 33 stages; at most 32 are allowed`, "v19"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := d.Send(tt.line)
			if !strings.Contains(raw, `"status":"error"`) || !strings.Contains(raw, tt.want) || !strings.HasPrefix(raw, `{"id":"`+tt.id+`",`) {
				t.Fatalf("response to %.120s:\n got %s\nwant error with id %q containing %s", tt.line, raw, tt.id, tt.want)
			}
		})
	}
	t.Run("missing trailing newline", func(t *testing.T) {
		c, err := net.Dial("unix", d.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = c.Write([]byte(line(map[string]any{"pipeline": [][]string{{"true"}}})))
		_ = c.(*net.UnixConn).CloseWrite()
		buf := make([]byte, 4096)
		n, _ := c.Read(buf)
		if !strings.Contains(string(buf[:n]), "missing trailing newline") {
			t.Fatalf("got %q", buf[:n])
		}
	})
	t.Run("over 1 MB", func(t *testing.T) {
		c, err := net.Dial("unix", d.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() { _, _ = c.Write(bytes.Repeat([]byte(" "), 2<<20)) }()
		buf := make([]byte, 4096)
		n, _ := c.Read(buf)
		if !strings.Contains(string(buf[:n]), "request too large: no newline within the first 1048576 bytes") {
			t.Fatalf("got %q", buf[:n])
		}
	})
	t.Run("read timeout", func(t *testing.T) {
		c, err := net.Dial("unix", d.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = c.Write([]byte(`{"id":"slow"`))
		buf := make([]byte, 4096)
		n, _ := c.Read(buf)
		if !strings.Contains(string(buf[:n]), "timed out after 2s waiting for a complete request line") {
			t.Fatalf("got %q", buf[:n])
		}
	})
	t.Run("empty connection", func(t *testing.T) {
		c, err := net.Dial("unix", d.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.(*net.UnixConn).CloseWrite()
		buf := make([]byte, 4096)
		n, _ := c.Read(buf)
		if !strings.Contains(string(buf[:n]), "empty request") {
			t.Fatalf("got %q", buf[:n])
		}
	})
	t.Run("still serving", func(t *testing.T) {
		if resp := d.Run(&proto.Request{Pipeline: [][]string{{"true"}}, Privileged: true}); resp.Status != proto.StatusOK {
			t.Fatalf("after bad input: %+v", resp)
		}
	})
}

func TestE2EReplay(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll})
	l := line(map[string]any{"id": "replay-me", "pipeline": [][]string{{"true"}}})
	if first := d.Send(l); !strings.Contains(first, `"status":"ok"`) {
		t.Fatalf("first use: %s", first)
	}
	second := d.Send(l)
	if !contains(second, `"id":"replay-me"`, `"status":"error"`, `request id \"replay-me\" was already used by a request that can still be fresh; refusing it as a replay`) {
		t.Fatalf("replay: %s", second)
	}
}

// TestE2EReplayAfterRestart: a restart does not forget the ids of requests
// that can still be fresh: the new daemon reads them back from the end of
// the audit log, so the same line is refused after a restart as before it.
func TestE2EReplayAfterRestart(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll})
	l := line(map[string]any{"id": "replay-across-restart", "pipeline": [][]string{{"true"}}})
	if first := d.Send(l); !strings.Contains(first, `"status":"ok"`) {
		t.Fatalf("first use: %s", first)
	}
	d.Restart()
	second := d.Send(l)
	if !contains(second, `"id":"replay-across-restart"`, `"status":"error"`, `request id \"replay-across-restart\" was already used by a request that can still be fresh; refusing it as a replay`) {
		t.Fatalf("replay after a restart: %s", second)
	}
}

func TestE2ERules(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "200ms", Rules: `
[[rule]]
name = "no shells"
action = "deny"
match = ["sh", "**"]

[[rule]]
name = "echo is fine"
action = "allow"
match = ["echo", "**"]

[[rule]]
name = "true as root only"
action = "allow"
match = ["true"]
privileged = true
`})
	marker := d.Dir + "/ran"
	tests := []struct {
		name     string
		pipeline [][]string
		priv     bool
		status   proto.Status
		msg      string
	}{
		{"allowed", [][]string{{"echo", "hi"}}, true, proto.StatusOK, ""},
		{"denied names the rule", [][]string{{"sh", "-c", "touch " + marker}}, true, proto.StatusDenied, `"no shells"`},
		{"any denied stage denies", [][]string{{"echo", "x"}, {"sh", "-c", "cat > " + marker}}, true, proto.StatusDenied, `"no shells"`},
		{"unruled asks and times out", [][]string{{"touch", marker}}, true, proto.StatusTimeout, "nobody approved the request within approval_timeout (200ms); it was not run"},
		{"allowed stage plus unruled stage asks", [][]string{{"echo", "x"}, {"tee", marker}}, true, proto.StatusTimeout, "approval_timeout"},
		{"privileged constraint", [][]string{{"true"}}, false, proto.StatusTimeout, "approval_timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := d.Run(&proto.Request{Pipeline: tt.pipeline, Privileged: tt.priv})
			if resp.Status != tt.status || !strings.Contains(resp.Message, tt.msg) {
				t.Fatalf("got %s %q, want %s containing %q", resp.Status, resp.Message, tt.status, tt.msg)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("a request that was not allowed ran")
			}
		})
	}
}

func TestE2ECommandTimeout(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll, CommandTimeout: "1s"})
	pidFile := d.Dir + "/child.pid"
	start := time.Now()
	// The child ignores SIGTERM and has a grandchild; both must be gone.
	resp := d.Run(&proto.Request{Pipeline: [][]string{
		{"sh", "-c", `trap "" TERM; echo partial; sleep 60 & echo $! > ` + pidFile + `; wait`},
	}, Privileged: true})
	elapsed := time.Since(start)
	if resp.Status != proto.StatusTimeout || !strings.Contains(resp.Message, "command_timeout (1s) reached") {
		t.Fatalf("got %s %q", resp.Status, resp.Message)
	}
	if string(resp.Stdout) != "partial\n" || len(resp.Stages) != 1 {
		t.Errorf("captured output %q stages %d", resp.Stdout, len(resp.Stages))
	}
	if elapsed > 15*time.Second {
		t.Errorf("took %s to time out a 1s command with 1s grace", elapsed)
	}
	pid, _ := os.ReadFile(pidFile)
	if n, err := strconv.Atoi(strings.TrimSpace(string(pid))); err == nil {
		// SIGKILL went to the whole group; the grandchild may still be a
		// zombie waiting for init to reap it, but it must not be running.
		if st := processState(n); st != "" && st != "Z" {
			t.Errorf("grandchild %d survived the timeout (state %s)", n, st)
		}
	} else {
		t.Errorf("no grandchild pid recorded: %q", pid)
	}
	if resp := d.Run(&proto.Request{Pipeline: [][]string{{"echo", "after"}}, Privileged: true}); string(resp.Stdout) != "after\n" {
		t.Fatalf("daemon not answering after a timeout: %+v", resp)
	}
}

// processState returns the state letter of pid from /proc, "" if it is gone.
func processState(pid int) string {
	st, err := testenv.ReadProcStat(pid)
	if err != nil {
		return ""
	}
	return st.State()
}

func TestE2EPing(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{})
	resp, err := client.New(d.Socket).Ping(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != proto.StatusOK || resp.Version == "" || resp.Message != "pong" || !strings.Contains(resp.Access, "user root (uid 0) may use it: root is allowed when neither allowed_users nor allowed_groups is set") {
		t.Fatalf("ping: %+v", resp)
	}
}

func TestE2EBusy(t *testing.T) {
	t.Parallel()
	// Root has root_connections slots of its own and may use the
	// max_connections ones too; with one of each, two connections that say
	// nothing hold them all until the first-byte timeout ends them.
	d := daemontest.Start(t, daemontest.Config{MaxConnections: 1, Extra: "root_connections = 1"})
	// The slot of the start-up ping may not be free yet, so retry until the
	// holders are not themselves refused as busy.
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for attempt := 0; len(held) < 2; attempt++ {
		c, err := net.Dial("unix", d.Socket)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		n, err := c.Read(make([]byte, 512))
		if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			held = append(held, c)
			continue
		}
		c.Close()
		if attempt == 20 {
			t.Fatal("could not take both connection slots")
		}
	}
	raw := d.Send(line(map[string]any{"pipeline": [][]string{{"true"}}}))
	if !contains(raw, `"status":"error"`, `busy: the daemon is already serving 2 connections (root_connections and max_connections)`) {
		t.Fatalf("got %s", raw)
	}
}

func TestE2EWithdrawnOnDisconnect(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "30s"})
	c, err := net.Dial("unix", d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	console := daemontest.Dial(t, d.ApproverSocket)
	_, _ = c.Write([]byte(line(map[string]any{"id": "gone-1", "pipeline": [][]string{{"true"}}}) + "\n"))
	console.Pending("gone-1")
	c.Close()
	d.WaitLog("verdict=withdrawn")
}

func TestE2EHalfCloseStillAnswered(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "200ms"})
	c, err := net.Dial("unix", d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte(line(map[string]any{"id": "half-1", "pipeline": [][]string{{"true"}}}) + "\n"))
	_ = c.(*net.UnixConn).CloseWrite()
	buf := make([]byte, 4096)
	n, _ := c.Read(buf)
	if !contains(string(buf[:n]), `"id":"half-1"`, `"status":"timeout"`) {
		t.Fatalf("half-closed client got %q", buf[:n])
	}
}

func TestE2EShutdownAnswersInFlight(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "30s", Rules: `
[[rule]]
action = "allow"
match = ["sh", "**"]
`})
	var wg sync.WaitGroup
	results := make([]string, 2)
	wg.Add(2)
	console := daemontest.Dial(t, d.ApproverSocket)
	running := d.Mark("running")
	go func() { // running: finishes within shutdown_timeout
		defer wg.Done()
		results[0] = d.Send(line(map[string]any{"pipeline": [][]string{{"sh", "-c", running.Shell() + "; sleep 1; echo done"}}}))
	}()
	go func() { // waiting for approval: ended, never run
		defer wg.Done()
		results[1] = d.Send(line(map[string]any{"id": "waiting-1", "pipeline": [][]string{{"touch", d.Dir + "/ran"}}}))
	}()
	running.Wait()
	console.Pending("waiting-1")
	d.Stop()
	wg.Wait()
	if !contains(results[0], `"status":"ok"`, `"stdout":"ZG9uZQo="`) {
		t.Errorf("running command: %s", results[0])
	}
	if !contains(results[1], `"status":"error"`, "agent-sudod is shutting down (it was stopped or restarted); the request was not run") {
		t.Errorf("waiting request: %s", results[1])
	}
	if _, err := os.Stat(d.Dir + "/ran"); err == nil {
		t.Error("the request that was waiting for approval ran")
	}
}

// TestE2ELoad: 50 clients of the client library, with its defaults, each
// sending requests one after another, all at once: every request is
// answered, and with its own output (no answer goes to another
// connection). The load itself (hundreds of clients, the connection
// limits, the audit log and the daemon's descriptors after it) is
// internal/loadgen's TestE2ELoadEveryRequestAnswered.
func TestE2ELoad(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll})
	const clients, perClient = 50, 4
	var wg sync.WaitGroup
	errs := make(chan error, clients*perClient)
	c := client.New(d.Socket)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range perClient {
				want := fmt.Sprintf("%d-%d", i, j)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				resp, err := c.Run(ctx, &proto.Request{Pipeline: [][]string{{"echo", want}}, Privileged: true, Time: time.Now()})
				cancel()
				switch {
				case err != nil:
					errs <- err
				case resp.Status != proto.StatusOK || string(resp.Stdout) != want+"\n":
					errs <- fmt.Errorf("request %s: %s %q %q", want, resp.Status, resp.Stdout, resp.Message)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n < 5 {
			t.Error(err)
		}
		n++
	}
	if n > 0 {
		t.Fatalf("%d of %d requests failed", n, clients*perClient)
	}
}

func TestE2ESocketActivationAndNotify(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	notifyDir, err := os.MkdirTemp("", "ntf")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(notifyDir)
	notifyPath := notifyDir + "/notify"
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close()

	var activated *net.UnixListener
	d := daemontest.Start(t, daemontest.Config{
		Rules: daemontest.AllowAll,
		Env:   []string{"NOTIFY_SOCKET=" + notifyPath, "WATCHDOG_USEC=200000"},
		Activate: func(socket string) *os.File {
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
			if err != nil {
				t.Fatal(err)
			}
			ln.SetUnlinkOnClose(false)
			activated = ln
			f, err := ln.File()
			if err != nil {
				t.Fatal(err)
			}
			return f
		},
	})
	defer activated.Close()
	// The log reaches the buffer through a pipe copied by another
	// goroutine, possibly after the start-up ping was answered.
	d.WaitLog("socket_activated=true")
	if resp := d.Run(&proto.Request{Pipeline: [][]string{{"echo", "activated"}}, Privileged: true}); string(resp.Stdout) != "activated\n" {
		t.Fatalf("over the activated socket: %+v", resp)
	}

	got := map[string]bool{}
	readNotify := func(want string) {
		t.Helper()
		buf := make([]byte, 256)
		deadline := time.Now().Add(10 * time.Second)
		for !got[want] {
			_ = notify.SetReadDeadline(deadline)
			n, err := notify.Read(buf)
			if err != nil {
				t.Fatalf("waiting for %s from sd_notify (got %v): %v", want, got, err)
			}
			// A message may carry several assignments, one a line
			// (READY=1 comes with STATUS=...).
			for _, a := range strings.Split(string(buf[:n]), "\n") {
				got[a] = true
			}
		}
	}
	readNotify("READY=1")
	readNotify("WATCHDOG=1")
	d.Stop()
	readNotify("STOPPING=1")
}

func TestE2EForwardAgent(t *testing.T) {
	t.Parallel()
	g, err := user.LookupGroup("nogroup")
	if err != nil {
		t.Skip("no group nogroup")
	}
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll, SocketGroup: g.Name, Env: []string{"SSH_AUTH_SOCK=/run/approver-agent.sock"}})
	out := sendAs(t, d, "nobody", line(map[string]any{"pipeline": [][]string{{"env"}}, "privileged": false, "forward_agent": true}))
	resp, err := proto.DecodeResponse([]byte(out))
	if err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if resp.Status != proto.StatusOK || !strings.Contains(string(resp.Stdout), "SSH_AUTH_SOCK=/run/approver-agent.sock\n") ||
		!strings.Contains(string(resp.Stdout), "USER=nobody\n") {
		t.Fatalf("forwarded agent: %s %q %q", resp.Status, resp.Stdout, resp.Message)
	}
	// Without forward_agent the command does not get it.
	resp = d.Run(&proto.Request{Pipeline: [][]string{{"env"}}, Privileged: true})
	if strings.Contains(string(resp.Stdout), "SSH_AUTH_SOCK") {
		t.Fatalf("privileged command got the agent:\n%s", resp.Stdout)
	}
}

func TestE2EClientDisconnectDuringRunFinishes(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll})
	marker := d.Dir + "/finished"
	c, err := net.Dial("unix", d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	started, left := d.Mark("started"), d.Mark("left")
	_, _ = c.Write([]byte(line(map[string]any{"pipeline": [][]string{{"sh", "-c",
		started.Shell() + "; " + left.Shell() + "; touch " + marker}}}) + "\n"))
	started.Wait()
	c.Close()
	// The command goes on only once its client has left.
	left.Wait()
	d.WaitLog("msg=result")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the approved command was stopped when its client left: %v\n%s", err, d.Logs.String())
	}
}
