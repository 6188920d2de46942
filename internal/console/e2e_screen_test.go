package console_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/consoletest"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// shellHop is the shell between the agent and agent-sudo run in the
// asked-by chain: shown, or counted among the hops left out.
var shellHop = regexp.MustCompile(`[→↳] (sh \(pid |… 1 shell \(v\))`)

// TestE2EFirstScreenAt80x24InTmux runs the real daemon and the real
// console in a tmux pane of 80×24 (so with the multiplexer warning), with
// three notices on screen, and checks that a typical request (a two-stage
// pipeline with environment and a two-line reason) shows everything needed
// to judge it on the first screen, without scrolling: the command (each
// stage's resolved program only where it says more than the command), who
// it runs as, why it needs approval, who asked, the reason, the directory,
// the environment's names and the time left. Then that an agent's
// `echo ... | sudo tee FILE` shows the first lines of what it writes next
// to the command, and that PgDn moves a page, not a line.
func TestE2EFirstScreenAt80x24InTmux(t *testing.T) {
	t.Parallel()
	needE2E(t)
	cfg := daemonConfig
	cfg.Rules = `
[[rule]]
name = "echo is harmless"
action = "allow"
match = ["echo", "**"]
env = ["LANG", "LC_ALL"]
`
	d := daemontest.Start(t, cfg)
	tm := startApprove(t, d, 80, 24)

	// Three notices: three requests whose clients give up.
	for i := range 3 {
		r := ask(t, d, &proto.Request{Pipeline: [][]string{{"true"}}, Session: "e2e"})
		tm.WaitFor("command    true")
		r.Cancel()
		tm.WaitFor(fmt.Sprintf("request %s was withdrawn", r.ID))
		if i < 2 {
			tm.WaitFor("waiting for requests…")
		}
	}

	// The request comes as an agent's would: agent-sudo run, started by a
	// shell, so that its ancestry has a parent to show.
	log := d.Dir + "/rotate.log"
	agent := exec.Command("/bin/sh", "-c", `"$CLI" run --socket "$SOCK" --session e2e-screen --host e2e-host --no-stdin `+
		`--env LANG=C.UTF-8 --env LC_ALL=C --reason "$REASON" -- echo rotated "|" tee -a "$LOG"; echo "exit $?"`)
	agent.Env = []string{"PATH=/usr/bin:/bin", "CLI=" + d.PublicCLI(), "SOCK=" + d.Socket, "LOG=" + log,
		"REASON=note the log rotation\nthe disk is 95% full"}
	var agentOut bytes.Buffer
	agent.Stdout, agent.Stderr = &agentOut, &agentOut
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	agentDone := make(chan error, 1)
	go func() { agentDone <- agent.Wait() }()
	t.Cleanup(func() {
		_ = agent.Process.Kill()
		err := <-agentDone
		if t.Failed() {
			t.Logf("the agent (agent-sudo run): %v; its output:\n%s", err, agentOut.String())
		}
	})
	screen := tm.WaitFor("Your decision:")
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	if len(rows) > 24 || !strings.HasPrefix(rows[0], "agent-sudo approve · 1 waiting") {
		t.Errorf("the screen is not 24 rows under the header:\n%s", screen)
	}
	for _, want := range []string{
		"⚠ WARNING: in tmux, an agent typing into it could approve its own requests",
		"REQUEST WAITING FOR YOUR DECISION · times out in ",
		"command    echo rotated | tee -a " + log,
		"runs       as root",
		"why        no rule applies to stage 2 of 2: /usr/bin/tee",
		"asked by   uid 0 (root), kernel-verified: ",
		// The agent (here the test binary, which started the shell)
		// and the client always stay; the shell between them stays
		// when the line has room (TestFirstScreenKeepsTheAgent).
		"console.test (pid",
		"agent-sudo run (pid ",
		"agent      session e2e-screen · host e2e-host (≠ ",
		"reason     note the log rotation",
		"           the disk is 95% full",
		"cwd        /",
		"env        LANG LC_ALL (values: press v)",
		"> Deny (d)",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the first screen lacks %q:\n%s", want, screen)
		}
	}
	// The hop may start a wrapped line (↳), where the test binary's path
	// is long enough to push it there.
	if !shellHop.MatchString(screen) {
		t.Errorf("the first screen has neither the shell between the agent and agent-sudo run nor its count:\n%s", screen)
	}
	if n := strings.Count(screen, " was withdrawn by the client"); n != 3 {
		t.Errorf("%d notices on screen, want 3, one line each:\n%s", n, screen)
	}
	// echo and tee are the system's: a stage line would only repeat the
	// command.
	for _, not := range []string{"PgUp/PgDn scroll --", "stage 1    ", "stage 2    "} {
		if strings.Contains(screen, not) {
			t.Errorf("the first screen has %q:\n%s", not, screen)
		}
	}
	t.Logf("the first screen at 80×24 in tmux:\n%s", strings.TrimRight(screen, "\n"))
	if strings.Contains(screen, `\x1b`) {
		t.Errorf("the console's own styling was escaped onto the screen:\n%s", screen)
	}

	// The details are one key away.
	details := consoletest.Press(t, tm, "v", "ALL DETAILS")
	t.Logf("the details at 80×24 in tmux:\n%s", strings.TrimRight(details, "\n"))
	// A session grant asks first; any key but y goes back.
	confirm := consoletest.Press(t, tm, "s", "y create the grant")
	t.Logf("the session grant's confirmation at 80×24 in tmux:\n%s", strings.TrimRight(confirm, "\n"))
	consoletest.Press(t, tm, "Escape", "> Deny (d)")
	consoletest.Press(t, tm, "d", "Note for the agent (optional)")
	consoletest.Press(t, tm, "Escape", "was denied by console")
	select {
	case err := <-agentDone:
		agentDone <- err
		if !strings.HasSuffix(agentOut.String(), "exit 77\n") {
			t.Fatalf("agent-sudo run: %v\n%s\nwant exit 77, denied", err, agentOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("agent-sudo run did not end after the denial:\n%s", agentOut.String())
	}

	// An agent writes a file with sudo tee, the content on its stdin
	// (issue 22: the first screen showed a SHA-256 and not one line of
	// it).
	conf := d.Dir + "/nginx-test-port.conf"
	writer := exec.Command("/bin/sh", "-c", `printf 'server {\n    listen 8081;\n    server_name test.local;\n    root /srv/test;\n}\n' | `+
		`"$CLI" run --socket "$SOCK" --session e2e-screen --host e2e-host --reason "serve the test site on 8081" -- tee "$CONF"; echo "exit $?"`)
	writer.Env = []string{"PATH=/usr/bin:/bin", "CLI=" + d.PublicCLI(), "SOCK=" + d.Socket, "CONF=" + conf}
	var writerOut bytes.Buffer
	writer.Stdout, writer.Stderr = &writerOut, &writerOut
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	writerDone := make(chan error, 1)
	go func() { writerDone <- writer.Wait() }()
	t.Cleanup(func() {
		_ = writer.Process.Kill()
		<-writerDone
	})
	screen = tm.Wait(func(s string) bool {
		return strings.Contains(s, "command    tee "+conf) && strings.Contains(s, "Your decision:")
	}, "show sudo tee's prompt")
	for _, want := range []string{
		"command    tee " + conf,
		"stdin      76 bytes · sha256 ",
		"… · the first stage reads this",
		"           server {",
		"               listen 8081;",
		"               server_name test.local;",
		"… 22 more bytes not shown: press i to see all 76 bytes",
		"reason     serve the test site on 8081",
		"runs       as root",
		" i stdin ",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the first screen of sudo tee lacks %q:\n%s", want, screen)
		}
	}
	for _, not := range []string{"PgUp/PgDn scroll --", "stage 1    "} {
		if strings.Contains(screen, not) {
			t.Errorf("the first screen of sudo tee has %q:\n%s", not, screen)
		}
	}
	t.Logf("the first screen of sudo tee at 80×24 in tmux:\n%s", strings.TrimRight(screen, "\n"))
	consoletest.Press(t, tm, "d", "Note for the agent (optional)")
	consoletest.Press(t, tm, "Escape", "waiting for requests…")
	select {
	case err := <-writerDone:
		writerDone <- err
		if !strings.HasSuffix(writerOut.String(), "exit 77\n") {
			t.Fatalf("sudo tee: %v\n%s\nwant exit 77, denied", err, writerOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("sudo tee did not end after the denial:\n%s", writerOut.String())
	}

	// A request longer than the screen: PgDn moves a page.
	args := []string{"true"}
	for i := range 60 {
		args = append(args, fmt.Sprintf("argument-number-%02d", i))
	}
	r := ask(t, d, &proto.Request{Pipeline: [][]string{args}, Session: "e2e-screen"})
	// The prompt shows once the whole request has loaded.
	screen = tm.Wait(func(s string) bool {
		return strings.Contains(s, "-- lines 1-") && strings.Contains(s, "Your decision:")
	}, "show the long request's prompt")
	first, last, total, _ := scrollPosition(screen)
	consoletest.WaitPastGuard(tm)
	tm.Keys("NPage") // scrolling acts at once
	screen = tm.Wait(func(s string) bool { f, _, _, ok := scrollPosition(s); return ok && f != first }, "scroll")
	from, _, _, _ := scrollPosition(screen)
	if page := last - first; from-first != min(page, total-last) || from-first < 5 {
		t.Errorf("PgDn moved from line %d to %d (of %d, %d shown); want a page:\n%s", first, from, total, last-first+1, screen)
	}
	tm.Keys("PPage")
	tm.WaitFor(fmt.Sprintf("-- lines %d-%d of %d", first, last, total))
	denyWithoutNote(t, tm, r)
	if resp := r.Wait(); resp.Status != proto.StatusDenied {
		t.Fatalf("status %q, want denied", resp.Status)
	}
}

var scrollRE = regexp.MustCompile(`-- lines (\d+)-(\d+) of (\d+) `)

// scrollPosition reads the scroll indicator: the first and last body line
// shown and how many there are; ok is false when there is none.
func scrollPosition(screen string) (first, last, total int, ok bool) {
	m := scrollRE.FindStringSubmatch(screen)
	if m == nil {
		return 0, 0, 0, false
	}
	first, _ = strconv.Atoi(m[1])
	last, _ = strconv.Atoi(m[2])
	total, _ = strconv.Atoi(m[3])
	return first, last, total, true
}
