package console_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/consoletest"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/internal/tmuxtest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// The end-to-end test runs the real binaries: agent-sudod with a temporary
// configuration that has no rules (every request asks), and
// "agent-sudo approve" in a detached tmux session of a private tmux server.
// It sends requests with the client library, reads the screen with
// capture-pane and types with send-keys, like a human at a terminal. It
// needs root (the daemon and the approver channel are root only) and tmux.

func TestMain(m *testing.M) {
	daemontest.Main(m)
}

// daemonConfig has no rules, so every request asks.
var daemonConfig = daemontest.Config{ApprovalTimeout: "40s", MaxConnections: 16}

func TestE2EApproveInTmux(t *testing.T) {
	t.Parallel()
	d, tm := startConsoleE2E(t)
	tm.WaitFor("⚠ WARNING: in tmux, an agent typing into it could approve its own requests")

	t.Run("allow once", func(t *testing.T) {
		r := ask(t, d, &proto.Request{Pipeline: [][]string{{"echo", "hello from e2e"}}, Reason: "say hello", Session: "e2e"})
		screen := tm.WaitFor("command    echo 'hello from e2e'")
		for _, want := range []string{
			"REQUEST WAITING FOR YOUR DECISION",
			"runs       as root",
			"reason     say hello",
			"agent      session e2e · host e2e-host (≠ " + daemonHost(t) + ") · claimed by the agent",
			"why        no rule applies to stage 1 of 1: /usr/bin/echo",
			"asked by   uid 0 (root), kernel-verified: ",
			"> Deny",
		} {
			if !strings.Contains(screen, want) {
				t.Errorf("screen lacks %q:\n%s", want, screen)
			}
		}
		// /usr/bin/echo is what the command says: no stage line repeats it.
		if strings.Contains(screen, "stage 1    ") {
			t.Errorf("screen has a stage line that repeats the command:\n%s", screen)
		}
		t.Logf("the screen of a waiting request:\n%s", strings.TrimRight(screen, "\n"))
		consoletest.Press(t, tm, "a", "request "+r.ID+" was allowed by console uid=0 tty=/dev/pts/")
		resp := r.Wait()
		if resp.Status != proto.StatusOK || string(resp.Stdout) != "hello from e2e\n" {
			t.Fatalf("allowed request: status %q stdout %q message %q", resp.Status, resp.Stdout, resp.Message)
		}
	})

	t.Run("deny runs nothing", func(t *testing.T) {
		marker := filepath.Join(d.Dir, "must-not-exist")
		r := ask(t, d, &proto.Request{Pipeline: [][]string{{"touch", marker}}, Session: "e2e"})
		tm.WaitFor("command    touch " + marker)
		consoletest.Press(t, tm, "d", "Note for the agent (optional)")
		tm.Keys("-l", "not today")
		tm.WaitFor("not today")
		// Enter right after the note's text would arrive with it and be
		// discarded; it decides only on its own.
		consoletest.Press(t, tm, "Enter", "request "+r.ID+" was denied by console uid=0")
		resp := r.Wait()
		if resp.Status != proto.StatusDenied || !strings.Contains(resp.Message, "not today") {
			t.Fatalf("denied request: status %q message %q", resp.Status, resp.Message)
		}
		if _, err := os.Stat(marker); !os.IsNotExist(err) {
			t.Fatalf("a denied touch ran: stat %s: %v", marker, err)
		}
	})

	t.Run("hostile arguments are escaped", func(t *testing.T) {
		r := ask(t, d, &proto.Request{
			Pipeline: [][]string{{"echo", "\x1b[2J", "\x1b]0;title\x07", "\u202eevil"}},
			Reason:   "clear\x1b[2Jthe screen", Session: "e2e",
		})
		screen := tm.WaitFor(`command    echo $'\x1b[2J' $'\x1b]0;title\x07' $'\u202eevil'`)
		for _, want := range []string{
			`\x1b[2J`, `\u202e`,
			"this request contains control, invisible or ambiguous-width characters, or non-ASCII in a program or an option; they are shown escaped",
			`reason     clear\x1b[2Jthe screen`,
			// The screen was not cleared: the header and banner are there.
			"agent-sudo approve · 1 waiting",
			"WARNING: in tmux, an agent typing into it",
		} {
			if !strings.Contains(screen, want) {
				t.Errorf("screen lacks %q:\n%s", want, screen)
			}
		}
		if strings.ContainsAny(screen, "\u202e\x1b\x07") {
			t.Errorf("a raw control character reached the screen:\n%q", screen)
		}
		if title := tm.Run("display-message", "-p", "-t", tm.Name, "#{pane_title}"); strings.TrimSpace(title) == "title" {
			t.Errorf("the request set the pane title to %q", title)
		}
		t.Logf("the screen of a hostile request:\n%s", strings.TrimRight(screen, "\n"))
		denyWithoutNote(t, tm, r)
		if resp := r.Wait(); resp.Status != proto.StatusDenied {
			t.Fatalf("status %q, want denied", resp.Status)
		}
	})

	t.Run("keys within the guard are dropped", func(t *testing.T) {
		// The key must reach the console within 500ms of the request
		// appearing. The prompt appears after the request is sent, so a
		// key sent less than 300ms after sending is inside the guard with
		// room to spare. A loaded machine can still spoil an attempt: the
		// prompt shows late, the console discards the key for arriving
		// late (its quiet window), or reads it only after the guard has
		// ended, when it acts. Such an attempt proves nothing either way
		// and is tried again; a console without the guard acts on the key
		// in every attempt, and three such attempts in a row fail.
		const ignored = "ignored a key pressed within 0.5s of the prompt appearing"
		decided := 0
		for attempt := 1; attempt <= 3; attempt++ {
			marker := filepath.Join(d.Dir, fmt.Sprintf("guard-%d", attempt))
			sent := time.Now()
			r := ask(t, d, &proto.Request{Pipeline: [][]string{{"touch", marker}}, Session: "e2e"})
			screen := tm.WaitFor("command    touch " + marker)
			if strings.Contains(screen, ignored) {
				t.Fatalf("the screen says a key was ignored before one was pressed:\n%s", screen)
			}
			if shown := time.Since(sent); shown > 300*time.Millisecond {
				t.Logf("attempt %d: the request took %v to show; trying again", attempt, shown)
				denyWithoutNote(t, tm, r)
				r.Wait()
				continue
			}
			before := consoletest.Discards(screen)
			tm.Keys("a")
			allowed := "request " + r.ID + " was allowed by"
			screen = tm.Wait(func(s string) bool {
				return strings.Contains(s, ignored) || strings.Contains(s, allowed) || consoletest.Discards(s) != before
			}, "say the key was ignored, discarded or acted on")
			switch {
			case strings.Contains(screen, allowed):
				decided++
				t.Logf("attempt %d: the key, sent %v after the request, allowed it: the console read it after the guard, or has none", attempt, time.Since(sent))
				r.Wait()
				continue
			case !strings.Contains(screen, ignored):
				t.Logf("attempt %d: the console discarded the key as arriving late, not as early; trying again", attempt)
				denyWithoutNote(t, tm, r)
				r.Wait()
				continue
			}
			if !strings.Contains(screen, "command    touch "+marker) || strings.Contains(screen, "was sent") {
				t.Fatalf("after an early key the request is not waiting any more:\n%s", screen)
			}
			// Still pending: the client has no answer and nothing ran.
			select {
			case resp := <-r.Done:
				t.Fatalf("a key inside the guard decided the request: %+v", resp)
			case <-time.After(300 * time.Millisecond): // the quiet window, with room
			}
			if _, err := os.Stat(marker); !os.IsNotExist(err) {
				t.Fatalf("the command ran: %v", err)
			}
			consoletest.Press(t, tm, "a", allowed)
			if resp := r.Wait(); resp.Status != proto.StatusOK {
				t.Fatalf("after the guard: status %q message %q", resp.Status, resp.Message)
			}
			if _, err := os.Stat(marker); err != nil {
				t.Fatalf("the approved touch did not run: %v", err)
			}
			return
		}
		if decided == 3 {
			t.Fatalf("in each of three attempts a key sent less than 300ms after the request allowed it: the console has no key guard")
		}
		t.Skip("this machine is too slow to land a key inside the 500ms guard reliably")
	})

	t.Run("session grant and revoke", func(t *testing.T) {
		req := func() *proto.Request {
			return &proto.Request{Pipeline: [][]string{{"echo", "granted"}}, Session: "e2e-grant", Env: map[string]string{"LC_ALL": "C"}}
		}
		r := ask(t, d, req())
		tm.WaitFor("command    echo granted")
		consoletest.Press(t, tm, "s", "y create the grant")
		consoletest.Press(t, tm, "y", "new session grant g")
		if resp := r.Wait(); resp.Status != proto.StatusOK {
			t.Fatalf("status %q", resp.Status)
		}
		// The same request again runs without asking.
		if resp := ask(t, d, req()).Wait(); resp.Status != proto.StatusOK || string(resp.Stdout) != "granted\n" {
			t.Fatalf("granted repeat: status %q stdout %q", resp.Status, resp.Stdout)
		}
		screen := consoletest.Press(t, tm, "g", "SESSION GRANTS")
		if !strings.Contains(screen, "session e2e-grant") || !strings.Contains(screen, "command    echo granted") ||
			!strings.Contains(screen, "env keys   LC_ALL") {
			t.Errorf("grants screen:\n%s", screen)
		}
		t.Logf("the session grants screen:\n%s", strings.TrimRight(screen, "\n"))
		consoletest.Press(t, tm, "r", "revoked")
		tm.WaitFor("no session grants")
		consoletest.Press(t, tm, "Escape", "waiting for requests…")
		// Revoked: it asks again.
		r = ask(t, d, req())
		tm.WaitFor("command    echo granted")
		consoletest.Press(t, tm, "Enter", "Note for the agent") // Deny is preselected
		consoletest.Press(t, tm, "Enter", "request "+r.ID+" was denied by")
		if resp := r.Wait(); resp.Status != proto.StatusDenied {
			t.Fatalf("after revoking: status %q", resp.Status)
		}
	})

	t.Run("quit decides nothing", func(t *testing.T) {
		r := ask(t, d, &proto.Request{Pipeline: [][]string{{"echo", "left alone"}}, Session: "e2e"})
		tm.WaitFor("command    echo 'left alone'")
		consoletest.Press(t, tm, "q", "exited with status 0")
		select {
		case resp := <-r.Done:
			t.Fatalf("quitting decided the request: %+v", resp)
		case <-time.After(300 * time.Millisecond):
		}
		r.Cancel()
	})
}

// TestE2EForegroundTTY runs agent-sudod --tty in tmux: the daemon's own
// terminal is the console.
func TestE2EForegroundTTY(t *testing.T) {
	t.Parallel()
	needE2E(t)
	d := daemontest.Configure(t, daemonConfig)
	tm := d.Foreground(t)
	r := ask(t, d, &proto.Request{Pipeline: [][]string{{"echo", "approved in the foreground"}}, Session: "e2e"})
	tm.WaitFor("command    echo 'approved in the foreground'")
	consoletest.Press(t, tm, "a", "request "+r.ID+" was allowed by console uid=0 tty=/dev/pts/")
	if resp := r.Wait(); resp.Status != proto.StatusOK || string(resp.Stdout) != "approved in the foreground\n" {
		t.Fatalf("status %q stdout %q message %q", resp.Status, resp.Stdout, resp.Message)
	}

	// Quitting the console stops the daemon, and the keys say so; with a
	// request waiting it asks first, and the agent is told the truth.
	r = ask(t, d, &proto.Request{Pipeline: [][]string{{"echo", "left waiting"}}, Session: "e2e"})
	tm.WaitFor("command    echo 'left waiting'")
	tm.WaitFor("q stop agent-sudod")
	consoletest.Press(t, tm, "q", "Stop agent-sudod? 1 request waiting will not run; its agent is told the daemon was stopped at its terminal.")
	consoletest.Press(t, tm, "Escape", "> Deny (d)")
	if err := d.Ping(); err != nil {
		t.Fatalf("agent-sudod stopped without the confirmation: %v", err)
	}
	consoletest.Press(t, tm, "q", "y stop agent-sudod")
	consoletest.Press(t, tm, "y", "exited with status 0")
	resp := r.Wait()
	if resp.Status != proto.StatusError || !strings.Contains(resp.Message, "agent-sudod stopped: the console on agent-sudod's terminal (agent-sudod --tty) was quit, which stops the daemon; the request was not run. Nothing is wrong with it") {
		t.Errorf("the waiting request was answered %q %q", resp.Status, resp.Message)
	}
	if err := d.Ping(); err == nil {
		t.Errorf("agent-sudod still answers after its console quit")
	}
}

// ask sends req to d in the background (daemontest's Ask), as an agent on
// the host e2e-host asking to run it as root.
func ask(t *testing.T, d *daemontest.Daemon, req *proto.Request) *daemontest.Asked {
	t.Helper()
	req.Host = "e2e-host"
	req.Privileged = true
	return d.Ask(t, req)
}

// daemonHost is the host name the daemon reports as its own.
func daemonHost(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// denyWithoutNote denies r, the request on screen, with d and then Esc
// in the note.
func denyWithoutNote(t *testing.T, tm *tmuxtest.Session, r *daemontest.Asked) {
	t.Helper()
	consoletest.Press(t, tm, "d", "Note for the agent (optional)")
	consoletest.Press(t, tm, "Escape", "request "+r.ID+" was denied by")
}

// needE2E skips an end-to-end test under -short and unless it runs as
// root (agent-sudod and its approver socket are root only) with tmux
// installed. The tests run in parallel, each with a daemon, a console and
// a tmux server of its own; they press keys with consoletest, which
// presses again a key that a loaded machine made the console discard.
func needE2E(t *testing.T) {
	t.Helper()
	testenv.NeedsRoot(t)
	testenv.NeedsTmux(t)
}

// startConsoleE2E skips the test unless it is a full run as root with tmux
// installed, then starts a real daemon and a real `agent-sudo approve` on
// its approver socket inside tmux, and waits until the console is idle.
func startConsoleE2E(t *testing.T) (*daemontest.Daemon, *tmuxtest.Session) {
	t.Helper()
	needE2E(t)
	d := daemontest.Start(t, daemonConfig)
	return d, startApprove(t, d, 0, 0)
}

// startApprove runs "agent-sudo approve" for d in a tmux session of
// cols×rows (tmuxtest's default size when zero), and waits for its idle
// screen.
func startApprove(t *testing.T, d *daemontest.Daemon, cols, rows int) *tmuxtest.Session {
	t.Helper()
	_, cli := daemontest.Binaries(t)
	tm := tmuxtest.Start(t, tmuxtest.Config{Command: fmt.Sprintf("%s approve --approver-socket %s", cli, d.ApproverSocket), Cols: cols, Rows: rows})
	tm.WaitFor("waiting for requests…")
	return tm
}

// TestE2EApproveSeveralDaemonsReconnects: one "agent-sudo approve" serves
// two daemons; a request on each is approved where it came from; when one
// daemon stops, the console shows it RECONNECTING and the other still
// works; when it is back the console reconnects by itself and its requests
// can be approved again.
func TestE2EApproveSeveralDaemonsReconnects(t *testing.T) {
	t.Parallel()
	needE2E(t)
	_, cli := daemontest.Binaries(t)
	a := daemontest.Start(t, daemonConfig)
	b := daemontest.Start(t, daemonConfig)
	tm := tmuxtest.Start(t, tmuxtest.Config{Command: fmt.Sprintf("%s approve --approver-socket %s --approver-socket %s", cli, a.ApproverSocket, b.ApproverSocket)})
	tm.WaitFor("waiting for requests…")
	tm.WaitFor("(" + a.ApproverSocket + "): connected")
	tm.WaitFor("(" + b.ApproverSocket + "): connected")

	approveOn := func(d *daemontest.Daemon, text string) {
		t.Helper()
		r := ask(t, d, &proto.Request{Pipeline: [][]string{{"echo", text}}, Session: "e2e"})
		tm.WaitFor("command    echo '" + text + "'")
		tm.WaitFor("FROM agent-sudod on " + daemonHost(t) + " (" + d.ApproverSocket + ")")
		consoletest.Press(t, tm, "a", "request "+r.ID+" was allowed by console uid=0")
		if resp := r.Wait(); resp.Status != proto.StatusOK || string(resp.Stdout) != text+"\n" {
			t.Fatalf("request to %s: status %q stdout %q message %q", d.ApproverSocket, resp.Status, resp.Stdout, resp.Message)
		}
	}
	approveOn(a, "on daemon a")
	approveOn(b, "on daemon b")

	a.Stop()
	tm.WaitFor("(" + a.ApproverSocket + "): RECONNECTING")
	approveOn(b, "b while a is away")

	a.StartAgain()
	tm.WaitFor("reconnected to ")
	tm.WaitFor("(" + a.ApproverSocket + "): connected")
	approveOn(a, "a after its restart")
}
