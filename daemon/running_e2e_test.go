package daemon_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// sleepers returns the pids of the processes running "sleep arg". Each
// test sleeps for a duration no other test uses, so that its processes can
// be found in /proc.
func sleepers(t *testing.T, arg string) []string {
	t.Helper()
	names, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err == nil && bytes.Equal(b, []byte("sleep\x00"+arg+"\x00")) {
			pids = append(pids, filepath.Base(filepath.Dir(n)))
		}
	}
	return pids
}

// nextRunning skips messages until a running listing for which ok is true.
func nextRunning(c *daemontest.Console, ok func([]approval.Running) bool) []approval.Running {
	for {
		if m := c.NextOf(approval.MsgRunning); ok(m.Running) {
			return m.Running
		}
	}
}

// stopResult skips messages until the result for run.
func stopResult(c *daemontest.Console, run string) approval.Message {
	for {
		if m := c.NextOf(approval.MsgResult); m.Run == run {
			return m
		}
	}
}

// startSleeper runs, through the client socket, a command a rule allows
// that prints two lines and then sleeps for arg seconds, waits until a
// console that watches (c) lists it, and returns it with the channel of
// its response.
func startSleeper(t *testing.T, d *daemontest.Daemon, c *daemontest.Console, id, arg string) (approval.Running, <-chan *proto.Response) {
	t.Helper()
	done := d.Ask(t, &proto.Request{ID: id, Session: "sess-" + id, Privileged: true, Reason: "a long job",
		Pipeline: [][]string{{"sh", "-c", `printf 'first\n\033[2Jsecond\n'; exec sleep ` + arg}}}).Done
	rs := nextRunning(c, func(rs []approval.Running) bool { return len(rs) == 1 && rs[0].Request == id })
	return rs[0], done
}

// TestE2EStopRunning: a command a rule allowed is listed to a console that
// watches (command, session, requester, who allowed it, start time); the
// console reads the end of its output, raw and bounded; it stops it, and
// the agent is told who stopped it, with the timeout's status and exit
// codes, the audit log records which console (audit show prints it, verify
// passes), and no process of it is left. Stopping it again, or an unknown
// run, is an error that says so.
func TestE2EStopRunning(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll, CommandTimeout: "120s"})
	c := daemontest.Dial(t, d.ApproverSocket)
	c.Send(approval.Message{Type: approval.MsgWatch})
	if m := c.NextOf(approval.MsgRunning); len(m.Running) != 0 {
		t.Fatalf("running before anything ran: %+v", m.Running)
	}

	const arg = "987.651"
	r, done := startSleeper(t, d, c, "stop-1", arg)
	if r.Session != "sess-stop-1" || r.Peer.UID != 0 || r.By != "allow everything" || r.RunAs != "root" ||
		len(r.Pipeline) != 1 || r.Pipeline[0][0] != "sh" || time.Since(r.Started) < 0 || r.StoppedBy != "" {
		t.Fatalf("listed as %+v", r)
	}

	// The output so far, as the command wrote it (escaping is the
	// console's job); asked again until the command has written it.
	var out *approval.Output
	for out == nil || !strings.Contains(string(out.Stdout), "second") {
		c.Send(approval.Message{Type: approval.MsgOutput, Run: r.ID})
		m := c.NextOf(approval.MsgOutput)
		if m.Run != r.ID || m.Output == nil {
			t.Fatalf("output answer %+v", m)
		}
		out = m.Output
	}
	if string(out.Stdout) != "first\n\x1b[2Jsecond\n" || out.StdoutBytes != 17 || len(out.Stderr) != 1 {
		t.Errorf("output %q (%d bytes, %d stderr streams)", out.Stdout, out.StdoutBytes, len(out.Stderr))
	}
	for len(sleepers(t, arg)) == 0 { // the shell execs sleep after printing
		c.Send(approval.Message{Type: approval.MsgOutput, Run: r.ID})
		c.NextOf(approval.MsgOutput)
	}

	c.Send(approval.Message{Type: approval.MsgStop, Run: r.ID})
	// The answer to the stop and the listing without the command come in
	// either order.
	var stopped *approval.Message
	for emptied := false; stopped == nil || !emptied; {
		switch m := c.Next(); {
		case m.Type == approval.MsgResult && m.Run == r.ID:
			stopped = &m
		case m.Type == approval.MsgRunning && len(m.Running) == 0:
			emptied = true
		}
	}
	if !stopped.OK {
		t.Fatalf("stop refused: %+v", stopped)
	}
	resp := <-done
	if resp.Status != proto.StatusTimeout || len(resp.Stages) != 1 || resp.Stages[0].ExitCode != 143 ||
		!strings.HasPrefix(resp.Message, "stopped by an approver (console uid=0 tty=") ||
		!strings.Contains(resp.Message, "SIGTERM and, 1s later, SIGKILL") {
		t.Fatalf("agent got %+v", resp)
	}
	if pids := sleepers(t, arg); len(pids) != 0 {
		t.Errorf("processes of the stopped command still run: %v", pids)
	}

	// The audit log says which console stopped it.
	stoppedBy := ""
	f, err := os.Open(d.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec audit.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err == nil && rec.Type == audit.TypeResult && rec.ID == "stop-1" {
			stoppedBy = rec.Result.StoppedBy
		}
	}
	if !strings.HasPrefix(stoppedBy, "console uid=0 tty=") || !strings.Contains(resp.Message, stoppedBy) {
		t.Errorf("result record stopped_by %q, want the console the agent was told of (%q)", stoppedBy, resp.Message)
	}
	_, cli := daemontest.Binaries(t)
	show, err := exec.Command(cli, "audit", "--log", d.AuditLog, "show", "stop-1").CombinedOutput()
	if err != nil || !strings.Contains(string(show), "stopped by:     "+stoppedBy) {
		t.Errorf("audit show: %v\n%s", err, show)
	}
	if out, err := exec.Command(cli, "audit", "--log", d.AuditLog, "verify").CombinedOutput(); err != nil {
		t.Errorf("audit verify: %v\n%s", err, out)
	}

	// A finished run and an unknown one cannot be stopped, and say why.
	for _, run := range []string{r.ID, "run404"} {
		c.Send(approval.Message{Type: approval.MsgStop, Run: run})
		if m := stopResult(c, run); m.OK || !strings.Contains(m.Error, "no such running command: it has finished, or the id is wrong") {
			t.Errorf("stop of %s answered %+v", run, m)
		}
	}
}

// TestE2EStopNeedsApproverChannel: only the root-only approver channel can
// stop a command. A non-root peer is refused there, even with the socket's
// mode opened up, and a stop message sent to the agent socket is refused
// as a request; the command keeps running until a root console stops it.
func TestE2EStopNeedsApproverChannel(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll, CommandTimeout: "120s"})
	c := daemontest.Dial(t, d.ApproverSocket)
	c.Send(approval.Message{Type: approval.MsgWatch})
	r, done := startSleeper(t, d, c, "stop-2", "987.652")
	stop := `{"type":"stop","run":"` + r.ID + `"}`

	if out := sendAsPath(t, d, "nobody", d.ApproverSocket, stop); !strings.Contains(out, "permission denied") {
		t.Fatalf("nobody reached the 0600 approver socket: %s", out)
	}
	if err := os.Chmod(d.ApproverSocket, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(d.ApproverSocket), 0o755); err != nil {
		t.Fatal(err)
	}
	if out := sendAsPath(t, d, "nobody", d.ApproverSocket, stop); !strings.Contains(out, "not allowed: the approver channel is for root only") {
		t.Fatalf("non-root stop was not refused: %s", out)
	}
	if out := d.Send(stop); !strings.Contains(out, `"status":"error"`) {
		t.Fatalf("stop on the agent socket answered %s", out)
	}

	// Still running, stopped by nobody: the next listing, asked for by a
	// new watch, shows it so.
	c.Send(approval.Message{Type: approval.MsgWatch})
	if rs := c.NextOf(approval.MsgRunning).Running; len(rs) != 1 || rs[0].ID != r.ID || rs[0].StoppedBy != "" {
		t.Fatalf("after the refused stops: %+v", rs)
	}
	select {
	case resp := <-done:
		t.Fatalf("the command ended: %+v", resp)
	default:
	}
	c.Send(approval.Message{Type: approval.MsgStop, Run: r.ID})
	if m := stopResult(c, r.ID); !m.OK {
		t.Fatalf("root console's stop refused: %+v", m)
	}
	if resp := <-done; resp.Status != proto.StatusTimeout || !strings.Contains(resp.Message, "stopped by an approver") {
		t.Fatalf("agent got %+v", resp)
	}
}
