package console

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

// testRuns are two running commands, the second with hostile strings.
func testRuns() []approval.Running {
	return []approval.Running{
		{ID: "run1", Request: "req-1", Session: "build-42", Host: "vm", Peer: approval.PeerInfo{UID: 1000, User: "alice", PID: 812, Exe: "/usr/bin/agent-sudo"},
			Pipeline: [][]string{{"sleep", "600"}}, RunAs: "root", Privileged: true, By: `rule "sleeps"`, Started: t0.Add(-90 * time.Second)},
		{ID: "run2", Request: "req-\x1b[2J", Session: "s\u202e", Peer: approval.PeerInfo{UID: 1001, User: "bob", PID: 9, Exe: "/tmp/\x1b]0;x\x07"},
			Pipeline: [][]string{{"echo", "\x1b[2J"}}, RunAs: "bob", By: "console uid=0 tty=/dev/pts/3 pid=7", Started: t0},
	}
}

// TestRunningScreenListAndStop: w asks the daemon for the running commands
// once and lists them with the highlighted one's details (command, session,
// requester, elapsed time, who allowed it), escaped; x asks for a
// confirmation and sends nothing; any key but y cancels it; x then y sends
// the stop; the daemon's answer and a later listing are shown.
func TestRunningScreenListAndStop(t *testing.T) {
	h := newHarness(t, "")
	h.press("w")
	if got, want := h.takeSent(), []approval.Message{{Type: approval.MsgWatch}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("w sent %+v, want %+v", got, want)
	}
	h.wantView("RUNNING COMMANDS", "asking the daemon for the running commands")
	h.daemon(approval.Message{Type: approval.MsgRunning, Running: testRuns()})
	h.wantView("run1  1m30s  uid 1000  session build-42  sleep 600", `run2  0s  uid 1001  session s\u202e  echo $'\x1b[2J'`,
		"command    sleep 600", "runs       as root", "running    1m30s, since", "asked by   uid 1000 (alice), pid 812, /usr/bin/agent-sudo",
		"session    build-42 (claimed by the agent)", `allowed by rule "sleeps"`, "x stop the highlighted command")
	h.advance(30 * time.Second)
	h.wantView("run1  2m0s", "running    2m0s")

	h.press("x")
	h.wantView("Stop run1 (sleep 600)? Press y to stop it")
	if got := h.takeSent(); len(got) != 0 {
		t.Fatalf("x alone sent %+v", got)
	}
	h.press("n")
	h.wantView("run1 was not stopped")
	h.notView("Stop run1")
	if got := h.takeSent(); len(got) != 0 {
		t.Fatalf("x then n sent %+v", got)
	}
	h.press("y") // y without x does nothing
	if got := h.takeSent(); len(got) != 0 {
		t.Fatalf("y alone sent %+v", got)
	}

	h.press("down")
	h.wantView(`command    echo $'\x1b[2J'`, `asked by   uid 1001 (bob), pid 9, /tmp/\x1b]0;x\x07`, "runs       as bob (unprivileged)", `request    req-\x1b[2J`)
	h.press("x")
	h.wantView(`Stop run2 (echo $'\x1b[2J')?`)
	h.press("y")
	if got, want := h.takeSent(), []approval.Message{{Type: approval.MsgStop, Run: "run2"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("x then y sent %+v, want %+v", got, want)
	}
	h.daemon(approval.Message{Type: approval.MsgResult, Run: "run2", OK: true})
	h.wantView("run2 is being stopped: SIGTERM now, SIGKILL after kill_grace")
	runs := testRuns()
	runs[1].StoppedBy = "console uid=0 tty=/dev/pts/4 pid=8"
	h.daemon(approval.Message{Type: approval.MsgRunning, Running: runs})
	h.wantView("session s\\u202e  echo $'\\x1b[2J'  (stopping)", "stopped by console uid=0 tty=/dev/pts/4 pid=8 · being killed")
	h.press("x") // already being stopped: nothing to confirm
	h.notView("Stop run2")

	// A stop the daemon refuses (the command ended meanwhile) says why.
	h.press("up")
	h.press("x")
	h.press("y")
	h.daemon(approval.Message{Type: approval.MsgResult, Run: "run1", Error: `no such running command: it has finished, or the id is wrong ("run1")`})
	h.wantView(`could not stop run1: no such running command: it has finished, or the id is wrong ("run1")`)

	// A confirmation for a command that ends meanwhile is dropped.
	h.press("x")
	h.daemon(approval.Message{Type: approval.MsgRunning, Running: runs[1:]})
	h.wantView("run1 ended before you confirmed stopping it")
	h.press("y")
	if got := h.takeSent(); len(got) != 1 || got[0].Type != approval.MsgStop || got[0].Run != "run1" {
		t.Fatalf("sent %+v, want only the earlier stop of run1", got)
	}

	h.daemon(approval.Message{Type: approval.MsgRunning})
	h.wantView("no command is running")
	// w again goes back, and does not ask the daemon twice.
	h.press("w")
	h.press("w")
	if got := h.takeSent(); len(got) != 0 {
		t.Fatalf("reopening sent %+v", got)
	}
	h.press("esc")
	h.wantView("w running commands")
}

// TestOutputErrorIsNotTakenForTheStop: an output request sent before a
// stop of the same command is answered first (the daemon answers in
// order); its error shows as the output's, and the stop's answer as the
// stop's.
func TestOutputErrorIsNotTakenForTheStop(t *testing.T) {
	h := newHarness(t, "")
	h.press("w")
	h.daemon(approval.Message{Type: approval.MsgRunning, Running: testRuns()})
	h.press("o")
	h.press("x")
	h.press("y")
	if got := h.takeSent(); len(got) != 3 || got[1].Type != approval.MsgOutput || got[2].Type != approval.MsgStop {
		t.Fatalf("sent %+v, want the watch, the output request and the stop", got)
	}
	h.daemon(approval.Message{Type: approval.MsgResult, Run: "run1", Error: "output gone"})
	h.wantView("the output could not be shown: output gone")
	h.notView("could not stop run1")
	h.daemon(approval.Message{Type: approval.MsgResult, Run: "run1", OK: true})
	h.wantView("run1 is being stopped: SIGTERM now, SIGKILL after kill_grace")
}

// TestRunningScreenStaysForARequest: a request arriving while the running
// commands are on screen does not take the screen (a confirmation in
// progress is not hijacked); it waits for the human to go back.
func TestRunningScreenStaysForARequest(t *testing.T) {
	h := newHarness(t, "")
	h.press("w")
	h.daemon(approval.Message{Type: approval.MsgRunning, Running: testRuns()})
	h.press("x")
	h.pending(shown("r1"))
	h.wantView("RUNNING COMMANDS", "Stop run1 (sleep 600)?")
	h.press("y")
	if got := h.takeSent(); len(got) != 2 || got[1].Type != approval.MsgStop || got[1].Run != "run1" {
		t.Fatalf("sent %+v, want the watch and the stop of run1", got)
	}
	h.press("esc")
	h.wantView("REQUEST WAITING", "(keys enabled in 0.5s)")
}

// TestRunningOutputIsEscaped: o asks for the end of the highlighted
// command's output, and what the daemon sends (hostile: escape sequences,
// a bell, bidi and invalid UTF-8) is shown escaped, never raw; an error
// answer is shown as such.
func TestRunningOutputIsEscaped(t *testing.T) {
	h := newHarness(t, "")
	h.press("w")
	h.daemon(approval.Message{Type: approval.MsgRunning, Running: testRuns()})
	h.takeSent()
	h.press("o")
	if got, want := h.takeSent(), []approval.Message{{Type: approval.MsgOutput, Run: "run1"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("o sent %+v, want %+v", got, want)
	}
	h.wantView("asking the daemon for the output")
	hostile := "ok line\n\x1b]0;pwned\x07\x1b[2J\x1b[1;1Hfake prompt \u202eevil\xff\n"
	h.daemon(approval.Message{Type: approval.MsgOutput, Run: "run1", Output: &approval.Output{
		Stdout: []byte(hostile), StdoutBytes: 5000, Stderr: [][]byte{[]byte("warn\r\n")}, StderrBytes: []int64{6}, At: t0}})
	h.wantView("END OF THE OUTPUT as of", "── stdout: 5000 bytes, the last 49 shown", "  ok line",
		`  \x1b]0;pwned\x07\x1b[2J\x1b[1;1Hfake prompt \u202eevil\xff`, "── stderr of stage 1: 6 bytes", `  warn\r`)
	v := h.view()
	for _, raw := range []string{"\x1b", "\x07", "\u202e", "\r", "\xff"} {
		if strings.Contains(v, raw) {
			t.Errorf("the screen holds %q raw", raw)
		}
	}
	h.press("o")
	h.daemon(approval.Message{Type: approval.MsgResult, Run: "run1", Error: "no such running command\x1b[2J"})
	h.wantView(`the output could not be shown: no such running command\x1b[2J`)
}
