package console

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/proto"
)

// fakeDaemon is the daemon's end of a net.Pipe, speaking approver-channel
// lines.
type fakeDaemon struct {
	t     *testing.T
	conn  net.Conn
	lines chan approval.Message
}

func newFakeDaemon(t *testing.T, conn net.Conn) *fakeDaemon {
	d := &fakeDaemon{t: t, conn: conn, lines: make(chan approval.Message, 16)}
	go func() {
		defer close(d.lines)
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			var m approval.Message
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("console sent a bad line %q: %v", sc.Bytes(), err)
				return
			}
			d.lines <- m
		}
	}()
	return d
}

func (d *fakeDaemon) send(m approval.Message) {
	d.t.Helper()
	b, _ := json.Marshal(m)
	_ = d.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := d.conn.Write(append(b, '\n')); err != nil {
		d.t.Fatalf("send %s: %v", m.Type, err)
	}
}

func (d *fakeDaemon) next() approval.Message {
	d.t.Helper()
	select {
	case m, ok := <-d.lines:
		if !ok {
			d.t.Fatal("the console closed the channel")
		}
		return m
	case <-time.After(10 * time.Second):
		d.t.Fatal("the console sent nothing within 10s")
	}
	return approval.Message{}
}

// screen collects what the console draws.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
	// grew, when not nil, is closed by the next Write: waitAfter blocks
	// on it instead of polling.
	grew chan struct{}
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.grew != nil {
		close(s.grew)
		s.grew = nil
	}
	return s.buf.Write(p)
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// mark returns how much has been drawn so far.
func (s *screen) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Len()
}

// waitFor waits until the screen shows want.
func (s *screen) waitFor(t *testing.T, want string) {
	t.Helper()
	s.waitAfter(t, 0, want)
}

// waitAfter waits until what is drawn after mark shows want.
func (s *screen) waitAfter(t *testing.T, mark int, want string) {
	t.Helper()
	s.waitAfterAny(t, mark, want)
}

// waitAfterAny waits until what is drawn after mark shows one of wants,
// and returns the first it found.
func (s *screen) waitAfterAny(t *testing.T, mark int, wants ...string) string {
	t.Helper()
	// Generous: a megabyte request under -race on a loaded machine takes
	// over ten seconds to draw. Only a failing test waits this long.
	deadline := time.After(60 * time.Second)
	for {
		s.mu.Lock()
		for _, want := range wants {
			if bytes.Contains(s.buf.Bytes()[mark:], []byte(want)) {
				s.mu.Unlock()
				return want
			}
		}
		if s.grew == nil {
			s.grew = make(chan struct{})
		}
		grew := s.grew
		s.mu.Unlock()
		select {
		case <-grew:
		case <-deadline:
			t.Fatalf("the screen never showed %q; it has:\n%q", wants, s.String())
		}
	}
}

// startRun runs a console over a pipe and returns the daemon's end, the
// console's keyboard, its screen and its result.
func startRun(t *testing.T, ctx context.Context) (*fakeDaemon, io.WriteCloser, *screen, <-chan error) {
	t.Helper()
	cc, dc := net.Pipe()
	keysR, keys := io.Pipe()
	scr := &screen{}
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cc, keysR, scr, Options{Guard: 50 * time.Millisecond, Proc: fstest.MapFS{}, Getenv: noEnv})
	}()
	t.Cleanup(func() {
		keys.Close()
		dc.Close()
	})
	return newFakeDaemon(t, dc), keys, scr, done
}

func waitDone(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return within 10s")
	}
	return nil
}

func TestRunDecidesAndQuits(t *testing.T) {
	d, keys, scr, done := startRun(t, context.Background())
	d.send(approval.Message{Type: approval.MsgHello, Version: "1.2.3"})
	d.send(approval.Message{Type: approval.MsgGrants})
	s := shown("r1")
	d.send(approval.Message{Type: approval.MsgPending, ID: "r1", Hash: s.Hash(), Request: s})
	scr.waitFor(t, "REQUEST WAITING FOR YOUR DECISION")
	scr.waitFor(t, "agent-sudod 1.2.3")
	if !strings.Contains(scr.String(), "\a") {
		t.Errorf("no bell for the new request")
	}
	// Past the 50ms guard, and with the event loop done drawing: a key
	// the loop gets more than the quiet window after reading it does not
	// count as alone (keyguard.go, readLog.alone).
	time.Sleep(100 * time.Millisecond)
	io.WriteString(keys, "s")
	scr.waitFor(t, "create the grant")
	time.Sleep(100 * time.Millisecond) // past the guard of the confirmation
	io.WriteString(keys, "y")
	if got, want := d.next(), decideMsg(s, approval.AllowSession, ""); !equalMsg(got, want) {
		t.Fatalf("console sent %+v, want %+v", got, want)
	}
	d.send(approval.Message{Type: approval.MsgResolved, ID: "r1", Verdict: approval.Allow, By: "console uid=0 tty=/dev/pts/0 pid=1 (new session grant g1)"})
	d.send(approval.Message{Type: approval.MsgResult, ID: "r1", OK: true})
	scr.waitFor(t, "request r1 was allowed by console uid=0 tty=/dev/pts/0 pid=1")
	scr.waitFor(t, idleText)

	// A denial typed just before quitting still reaches the daemon.
	s2 := shown("r2")
	mark := scr.mark()
	d.send(approval.Message{Type: approval.MsgPending, ID: "r2", Hash: s2.Hash(), Request: s2})
	scr.waitAfter(t, mark, "REQUEST WAITING")
	time.Sleep(100 * time.Millisecond)
	io.WriteString(keys, "d")
	scr.waitFor(t, "Note for the agent")
	// The decision is queued when the quiet window after Enter ends; q
	// right after it must not lose it.
	pressAgainIfDiscarded(t, keys, scr, "\r", "was sent")
	io.WriteString(keys, "q")
	if got, want := d.next(), decideMsg(s2, approval.DenyOnce, ""); !equalMsg(got, want) {
		t.Fatalf("console sent %+v, want %+v", got, want)
	}
	if err := waitDone(t, done); err != nil {
		t.Errorf("Run after q = %v, want nil", err)
	}
}

// pressAgainIfDiscarded writes key and waits for want; if the console
// discards the key instead (its event loop got to it more than the quiet
// window after reading it, which a loaded machine can cause: keyguard.go,
// readLog.alone), it presses again, as a human would, at most three
// times. What the key does is unchanged: a discarded key decides nothing.
func pressAgainIfDiscarded(t *testing.T, keys io.Writer, scr *screen, key, want string) {
	t.Helper()
	for range 3 {
		mark := scr.mark()
		io.WriteString(keys, key)
		if scr.waitAfterAny(t, mark, want, "input discarded") == want {
			return
		}
	}
	t.Fatalf("the console discarded %q three times", key)
}

func equalMsg(a, b approval.Message) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestRunDaemonGoesAway(t *testing.T) {
	d, _, scr, done := startRun(t, context.Background())
	d.send(approval.Message{Type: approval.MsgHello, Version: "1"})
	scr.waitFor(t, idleText)
	d.conn.Close()
	if err := waitDone(t, done); !errors.Is(err, ErrDisconnected) {
		t.Errorf("Run after the daemon closed = %v, want ErrDisconnected", err)
	}
}

func TestRunRefused(t *testing.T) {
	d, _, scr, done := startRun(t, context.Background())
	d.send(approval.Message{Type: approval.MsgResult, Error: "not allowed: the approver channel is for root only, and uid 1000 is not root\x1b[2J"})
	err := waitDone(t, done)
	if err == nil || !strings.Contains(err.Error(), `agent-sudod refused this console: not allowed: the approver channel is for root only, and uid 1000 is not root\x1b[2J`) {
		t.Errorf("Run = %v, want the refusal, escaped", err)
	}
	if scr.String() != "" {
		t.Errorf("a refused console drew %q", scr.String())
	}
}

func TestRunBadGreeting(t *testing.T) {
	for _, line := range []string{`{"type":"pending"}`, `not json`} {
		d, _, _, done := startRun(t, context.Background())
		_ = d.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(d.conn, line+"\n")
		if err := waitDone(t, done); err == nil || errors.Is(err, ErrDisconnected) {
			t.Errorf("greeting %q: Run = %v, want a protocol error", line, err)
		}
	}
}

func TestRunContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	d, _, scr, done := startRun(t, ctx)
	d.send(approval.Message{Type: approval.MsgHello, Version: "1"})
	scr.waitFor(t, idleText)
	cancel()
	if err := waitDone(t, done); !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel = %v, want context.Canceled", err)
	}
}

func TestRunCancelledBeforeGreeting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	_, _, _, done := startRun(t, ctx)
	cancel()
	if err := waitDone(t, done); !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

func TestRunSkipsBadLines(t *testing.T) {
	d, _, scr, done := startRun(t, context.Background())
	d.send(approval.Message{Type: approval.MsgHello, Version: "1"})
	_ = d.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(d.conn, "{not json\n")
	scr.waitFor(t, "the daemon sent a line that is not a message")
	d.conn.Close()
	if err := waitDone(t, done); !errors.Is(err, ErrDisconnected) {
		t.Errorf("Run = %v", err)
	}
}

// TestRunRefusesUnverifiedRequests: a pending message whose request does
// not hash to its announced hash (a relay changed it) is refused where the
// channel is read (approval.Client.Recv) and never shown; the channel goes
// on, and the next request is shown. So is a full text (detail message) of
// a request announced as a summary that does not hash to the announced
// hash.
func TestRunRefusesUnverifiedRequests(t *testing.T) {
	d, _, scr, done := startRun(t, context.Background())
	d.send(approval.Message{Type: approval.MsgHello, Version: "1"})
	s := shown("r1")
	hash := s.Hash()
	s.Reason = "TAMPERED"
	d.send(approval.Message{Type: approval.MsgPending, ID: "r1", Hash: hash, Request: s})
	scr.waitFor(t, "request r1 with contents")
	s2 := shown("r2")
	s2.Reason = "UNTOUCHED"
	d.send(approval.Message{Type: approval.MsgPending, ID: "r2", Hash: s2.Hash(), Request: s2})
	scr.waitFor(t, "REQUEST WAITING")
	scr.waitFor(t, "UNTOUCHED")
	if strings.Contains(scr.String(), "TAMPERED") {
		t.Errorf("the unverified request was drawn:\n%q", scr.String())
	}

	// A request announced as a summary whose full text comes back changed:
	// the changed text is refused too, and the request stays a summary.
	d.send(approval.Message{Type: approval.MsgResolved, ID: "r2", Verdict: approval.Deny, By: "elsewhere"})
	s3 := shown("r3")
	short := *s3
	short.Pipeline, short.Programs, short.Env = nil, nil, nil
	d.send(approval.Message{Type: approval.MsgPending, ID: "r3", Hash: s3.Hash(), Request: &short,
		Summary: &approval.Summary{Bytes: 123456, Stages: len(s3.Pipeline), EnvVars: len(s3.Env)}})
	asked := false
	for range 20 {
		if m := d.next(); m.Type == approval.MsgDetail && m.ID == "r3" {
			asked = true
			break
		}
	}
	if !asked {
		t.Fatal("the console did not ask for the full text of r3 in its first 20 messages")
	}
	changed := *s3
	changed.Pipeline = [][]string{{"/usr/bin/rm", "-rf", "/TAMPEREDARG"}}
	mark := scr.mark()
	d.send(approval.Message{Type: approval.MsgDetail, ID: "r3", Hash: s3.Hash(), Request: &changed})
	scr.waitAfterAny(t, mark, "does not match its hash", "TAMPEREDARG")
	if strings.Contains(scr.String(), "TAMPEREDARG") {
		t.Errorf("the changed full text was drawn:\n%q", scr.String())
	}
	d.conn.Close()
	if err := waitDone(t, done); !errors.Is(err, ErrDisconnected) {
		t.Errorf("Run = %v", err)
	}
}

func TestDialFails(t *testing.T) {
	_, err := Dial(context.Background(), t.TempDir()+"/nope.sock")
	if err == nil || !strings.Contains(err.Error(), "connect to the approver socket") {
		t.Errorf("Dial = %v", err)
	}
	if err := DialAndRun(context.Background(), t.TempDir()+"/nope.sock", nil, io.Discard, Options{}); err == nil {
		t.Errorf("DialAndRun to nothing succeeded")
	}
}

// TestRunAcceptsTheLargestPending: the daemon re-encodes a request, and
// encoding/json writes each of < > & as the six bytes \u003c, so a request
// line at the 1 MiB limit can become a pending line of about 6 MiB. The
// console must take it rather than drop the channel (which an agent could
// otherwise do to every console, on every reconnect, at will).
func TestRunAcceptsTheLargestPending(t *testing.T) {
	d, _, scr, done := startRun(t, context.Background())
	d.send(approval.Message{Type: approval.MsgHello, Version: "1"})
	s := shown("big")
	arg := strings.Repeat("<", proto.MaxRequestBytes-1024)
	s.Pipeline = [][]string{{"echo", arg}}
	s.Programs = []approval.Program{{Chain: []string{"/usr/bin/echo"}}}
	m := approval.Message{Type: approval.MsgPending, ID: "big", Hash: s.Hash(), Request: s}
	var line bytes.Buffer
	if err := json.NewEncoder(&line).Encode(m); err != nil { // as the daemon encodes
		t.Fatal(err)
	}
	if line.Len() <= 4<<20 {
		t.Fatalf("the test line is only %d bytes", line.Len())
	}
	_ = d.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := d.conn.Write(line.Bytes()); err != nil {
		t.Fatal(err)
	}
	scr.waitFor(t, "1 waiting")
	select {
	case err := <-done:
		t.Fatalf("Run ended on a %d-byte pending line: %v", line.Len(), err)
	default:
	}
	d.conn.Close()
	waitDone(t, done)
}

// TestRunOnDaemonTerminalEndsWhenInputEnds: the console of agent-sudod
// --tty (Options.StopsDaemon) ends with ErrHungUp when its terminal's input
// ends, as a hung-up terminal reads: agent-sudod then stops instead of
// serving on with nobody at the console (bubbletea alone would stop
// reading and run on).
func TestRunOnDaemonTerminalEndsWhenInputEnds(t *testing.T) {
	cc, dc := net.Pipe()
	keysR, keys := io.Pipe()
	scr := &screen{}
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), cc, keysR, scr, Options{Guard: 50 * time.Millisecond, Proc: fstest.MapFS{}, Getenv: noEnv, StopsDaemon: true})
	}()
	t.Cleanup(func() { dc.Close() })
	d := newFakeDaemon(t, dc)
	d.send(approval.Message{Type: approval.MsgHello, Version: "1"})
	scr.waitFor(t, "q stop agent-sudod")
	keys.Close() // EOF
	if err := waitDone(t, done); !errors.Is(err, ErrHungUp) {
		t.Errorf("Run after its input ended = %v, want ErrHungUp", err)
	}
}
