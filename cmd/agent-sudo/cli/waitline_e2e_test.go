package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/tmuxtest"
)

// shimOf installs the shim of the CLI bin in a directory of the test's
// and returns the path of its sudo.
func shimOf(t *testing.T, bin string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shim")
	if out, err := exec.Command(bin, "shim", "install", dir).CombinedOutput(); err != nil {
		t.Fatalf("shim install: %v, %q", err, out)
	}
	return filepath.Join(dir, "sudo")
}

// waitingLine matches the spinner's line after at least three seconds.
var waitingLine = regexp.MustCompile(`agent-sudo: [|/\\-] ([3-9]|[1-9][0-9]+)s `)

// oneWaitingLine fails the test unless screen, a whole terminal, shows exactly one non-empty line, the waiting line, containing want.
func oneWaitingLine(t *testing.T, screen, want string) {
	t.Helper()
	var lines []string
	for l := range strings.SplitSeq(screen, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "agent-sudo: ") || !strings.Contains(lines[0], want) {
		t.Fatalf("the terminal shows %d lines:\n%s\nwant exactly one, the waiting line, containing %q", len(lines), screen, want)
	}
}

// TestWaitingLineCountsApproversAt80Columns: the shim's and run's waiting
// line, on a real terminal 80 columns wide (and 120 and 160), stays one line redrawn in
// place, cut to the terminal's width, after several spinner ticks; and it
// says how many approver consoles and web approvers (connections that sent
// signed_only) are connected, changing as they come and go.
func TestWaitingLineCountsApproversAt80Columns(t *testing.T) {
	daemontest.RequireRoot(t)
	_, bin := daemontest.Binaries(t)
	sudo := shimOf(t, bin)
	shim := []string{sudo, "touch"}
	run := []string{bin, "run", "--reason", "waitline", "--", "touch"}
	for _, tt := range []struct {
		name    string
		command []string
		cols    int
	}{
		{"shim at 80 columns", shim, 80},
		{"run at 80 columns", run, 80},
		{"run at 120 columns", run, 120},
		{"shim at 160 columns", shim, 160},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "5m", Rules: daemontest.AskRules})
			file := filepath.Join(t.TempDir(), "f")
			cmd := "env " + envSocket + "=" + d.Socket + " " + strings.Join(tt.command, " ") + " " + file
			s := tmuxtest.Start(t, tmuxtest.Config{Command: cmd, Cols: tt.cols, Rows: 24, Timeout: 60 * time.Second})

			screen := s.Wait(func(screen string) bool {
				return waitingLine.MatchString(screen) && strings.Contains(screen, "no approver connected")
			}, "the waiting line after three seconds, saying no approver is connected")
			oneWaitingLine(t, screen, "waits for approval, no approver connected")

			console := daemontest.Dial(t, d.ApproverSocket)
			console.NextOf(approval.MsgPending)
			s.WaitFor("waits for approval, 1 approver console connected")

			web := daemontest.Dial(t, d.ApproverSocket)
			web.NextOf(approval.MsgPending)
			web.Send(approval.Message{Type: approval.MsgSignedOnly})
			s.WaitFor("waits for approval, 1 approver console and 1 web approver")

			console.Close()
			screen = s.WaitFor("waits for approval, 1 web approver connected")
			oneWaitingLine(t, screen, "waits for approval, 1 web approver connected")
		})
	}
}

// TestSudoNFailsAtOnceWithoutApprover: "sudo -n CMD" through the shim, for
// a command that needs a human's approval, fails at once with sudo's exit
// status for -n (1) and says why when no approver is connected, as agents
// probe with it; with an approver connected it waits, and runs once
// allowed.
func TestSudoNFailsAtOnceWithoutApprover(t *testing.T) {
	daemontest.RequireRoot(t)
	_, bin := daemontest.Binaries(t)
	sudo := shimOf(t, bin)
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "5m", Rules: daemontest.AskRules})
	file := filepath.Join(t.TempDir(), "f")
	sudoN := func(ctx context.Context) (int, string, error) {
		cmd := exec.CommandContext(ctx, sudo, "-n", "touch", file)
		cmd.Env = e2eEnv(envSocket + "=" + d.Socket)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			return 0, "", err
		}
		if ctx.Err() != nil {
			return 0, stderr.String(), ctx.Err()
		}
		return cmd.ProcessState.ExitCode(), stderr.String(), nil
	}

	// Not a timing assertion: a bound far below approval_timeout (5m),
	// past which the shim is plainly waiting for it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	code, stderr, err := sudoN(ctx)
	cancel()
	want := "sudo: a password is required (here: a human's approval), and no approver could answer: no approver console or web approver is connected"
	if err != nil || code != 1 || !strings.HasPrefix(stderr, want) {
		t.Fatalf("sudo -n touch with no approver = %d, %v, stderr %q; want 1 at once, stderr starting %q", code, err, stderr, want)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s: %v; want it not made", file, err)
	}
	// agent-sudo run --non-interactive, as its help says: denied at once
	// (status 77), nothing run.
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	run := exec.CommandContext(rctx, bin, "run", "--socket", d.Socket, "--non-interactive", "--", "touch", file)
	run.Env = e2eEnv()
	out, rerr := run.CombinedOutput()
	late := rctx.Err()
	rcancel()
	if late != nil || run.ProcessState == nil || run.ProcessState.ExitCode() != 77 || !strings.Contains(string(out), "no approver could answer") {
		t.Fatalf("run --non-interactive with no approver: %v, %s; want status 77 at once, saying no approver could answer", rerr, out)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s after run --non-interactive: %v; want it not made", file, err)
	}

	console := daemontest.Dial(t, d.ApproverSocket)
	done := make(chan struct{})
	go func() {
		defer close(done)
		code, stderr, err = sudoN(context.Background())
	}()
	p := console.NextOf(approval.MsgPending)
	console.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce})
	<-done
	if err != nil || code != 0 {
		t.Fatalf("sudo -n touch with a console that allows it = %d, %v, stderr %q; want 0", code, err, stderr)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("%s was not made: %v", file, err)
	}
}
