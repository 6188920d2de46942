package console

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"reflect"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agent-sudo/agent-sudo/approval"
)

// routed is a message the console sent, with the daemon and connection it
// went to.
type routed struct {
	link  int
	epoch uint64
	m     approval.Message
}

// newDaemonsHarness is a harness for a console of the daemons named names,
// none connected yet; what the console sends is recorded in *out with its
// daemon and connection.
func newDaemonsHarness(t *testing.T, out *[]routed, names ...string) *harness {
	t.Helper()
	h := newHarness(t, "")
	cfg := h.m.cfg
	cfg.daemons = names
	cfg.sendTo = func(link int, epoch uint64, m approval.Message) error {
		*out = append(*out, routed{link, epoch, m})
		return nil
	}
	h.m = newModel(cfg)
	h.m.Init()
	h.update(tea.WindowSizeMsg{Width: 160, Height: 50})
	return h
}

func (h *harness) up(link int, epoch uint64, host, instance string) {
	h.t.Helper()
	h.update(linkUpMsg{link: link, epoch: epoch, hello: approval.Message{Type: approval.MsgHello, Version: "v1", DaemonHost: host, Instance: instance}})
}

// from delivers m from daemon link's connection epoch, through JSON.
func (h *harness) from(link int, epoch uint64, m approval.Message) {
	h.t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		h.t.Fatal(err)
	}
	var back approval.Message
	if err := json.Unmarshal(b, &back); err != nil {
		h.t.Fatal(err)
	}
	h.update(daemonMsg{m: back, link: link, epoch: epoch})
}

func pendingMsg(s *approval.Shown) approval.Message {
	return approval.Message{Type: approval.MsgPending, ID: s.ID, Hash: s.Hash(), Request: s}
}

// TestSeveralDaemonsRouteDecisions: each request shows the daemon it is
// from by the host name the daemon sent, not the request's own host; the
// same id from two daemons is two requests; a decision, a detail request
// and a revocation go only to the daemon, and the connection, that
// announced what they are about; results and resolutions from one daemon
// never touch the other's requests.
func TestSeveralDaemonsRouteDecisions(t *testing.T) {
	var out []routed
	h := newDaemonsHarness(t, &out, "/run/a.sock", "ssh root@b.example")
	h.wantView("○ /run/a.sock: connecting…", "○ ssh root@b.example: connecting…")
	h.up(0, 0, "host-a", "ia")
	h.up(1, 0, "host-b", "ib")
	h.wantView("● host-a (/run/a.sock): connected", "● host-b (ssh root@b.example): connected", "2 daemons")

	sa, sb := shown("r1"), shown("r1")
	sb.Reason = "from b"
	sa.Host, sb.Host = "host-b", "host-a" // the agents' claims, crossed
	h.from(0, 0, pendingMsg(sa))
	h.from(1, 0, pendingMsg(sb))
	h.wantFull("FROM agent-sudod on host-a (/run/a.sock)", "host-b (claimed by the agent)", "1 more after it")

	// b resolving its r1 leaves a's on screen.
	h.from(1, 0, approval.Message{Type: approval.MsgResolved, ID: "r1", Verdict: approval.Timeout, By: "approval_timeout"})
	h.wantView("FROM agent-sudod on host-a (/run/a.sock)")
	if len(h.m.queue) != 1 || h.m.queue[0].link != 0 {
		t.Fatalf("queue after b resolved its r1: %+v", h.m.queue)
	}
	h.from(1, 0, pendingMsg(sb))
	h.pastGuard()
	h.press("a")
	if want := []routed{{0, 0, decideMsg(sa, approval.AllowOnce, "")}}; !reflect.DeepEqual(out, want) {
		t.Fatalf("sent %+v, want %+v", out, want)
	}
	out = nil
	// b's result for its own r1 is not the answer to the decision on a's.
	h.from(1, 0, approval.Message{Type: approval.MsgResult, ID: "r1", OK: true})
	if len(h.m.inflight) != 1 || h.m.inflight[0].link != 0 {
		t.Fatalf("inflight after b's result: %+v", h.m.inflight)
	}
	h.from(0, 0, approval.Message{Type: approval.MsgResult, ID: "r1", OK: true})
	h.wantView("FROM agent-sudod on host-b (ssh root@b.example)", "from b")
	h.pastGuard()
	h.press("d")
	h.press("enter")
	if want := []routed{{1, 0, decideMsg(sb, approval.DenyOnce, "")}}; !reflect.DeepEqual(out, want) {
		t.Fatalf("sent %+v, want %+v", out, want)
	}
	out = nil

	// Grants are per daemon: the same id on both is two grants, and a
	// revocation goes to the daemon that holds the grant.
	g := approval.Grant{ID: "g1", Session: "s", UID: 1000, Pipeline: [][]string{{"true"}}, Created: t0, Expires: t0.Add(time.Hour)}
	h.from(0, 0, approval.Message{Type: approval.MsgGrants, Grants: []approval.Grant{g}})
	h.from(1, 0, approval.Message{Type: approval.MsgGrants, Grants: []approval.Grant{g}})
	h.press("g")
	h.wantView("g1  uid 1000  session s  expires 2025-06-01 13:00:00  on host-a (/run/a.sock)",
		"g1  uid 1000  session s  expires 2025-06-01 13:00:00  on host-b (ssh root@b.example)", "held by host-a")
	h.press("down")
	h.wantView("held by host-b")
	h.press("r")
	if want := []routed{{1, 0, approval.Message{Type: approval.MsgRevoke, Grant: "g1"}}}; !reflect.DeepEqual(out, want) {
		t.Fatalf("revoke sent %+v, want %+v", out, want)
	}
}

// TestReconnectForgetsTheOldConnection: when a daemon's connection breaks,
// its requests leave the screen at once and it shows RECONNECTING while
// the other daemon's requests stay decidable; a line still queued from the
// old connection is dropped; after the reconnection (a new instance) the
// request listed again is decided on the new connection, and the decision
// in flight on the old one is reported as unanswered, never resent.
func TestReconnectForgetsTheOldConnection(t *testing.T) {
	var out []routed
	h := newDaemonsHarness(t, &out, "/run/a.sock", "/run/b.sock")
	h.up(0, 0, "host-a", "ia")
	h.up(1, 0, "host-b", "ib")
	sa, sb := shown("ra"), shown("rb")
	h.from(0, 0, pendingMsg(sa))
	h.pastGuard()
	h.press("a") // in flight on a's connection 0
	h.from(1, 0, pendingMsg(sb))
	h.from(0, 0, pendingMsg(shown("ra2")))
	out = nil

	h.update(linkDownMsg{link: 0, epoch: 1, err: errors.New("agent-sudod closed the approver channel\x1b[2J"), attempt: 1, retry: h.now.Add(time.Second)})
	h.wantView("○ host-a (/run/a.sock): RECONNECTING (attempt 1 in 1s): agent-sudod closed the approver channel\\x1b[2J",
		"lost the connection to host-a (/run/a.sock); reconnecting",
		"no answer came from host-a (/run/a.sock) to your decision (allow once) on request ra",
		"FROM agent-sudod on host-b (/run/b.sock)", "1 waiting")
	h.notView("ra2")
	// A line of the old connection that was still on its way is dropped.
	h.from(0, 0, pendingMsg(shown("stale")))
	h.notView("stale")
	if len(h.m.queue) != 1 {
		t.Fatalf("queue: %d requests, want b's only", len(h.m.queue))
	}
	// b is unaffected.
	h.pastGuard()
	h.press("a")
	if want := []routed{{1, 0, decideMsg(sb, approval.AllowOnce, "")}}; !reflect.DeepEqual(out, want) {
		t.Fatalf("sent %+v, want %+v", out, want)
	}
	out = nil
	h.from(1, 0, approval.Message{Type: approval.MsgResult, ID: "rb", OK: true})

	// a is back, restarted; its ra2 is listed again.
	h.up(0, 1, "host-a", "ia-2")
	h.wantView("reconnected to host-a (/run/a.sock): it restarted (a new instance)", "● host-a (/run/a.sock): connected")
	h.from(0, 1, pendingMsg(shown("ra2")))
	h.pastGuard()
	h.press("a")
	if want := []routed{{0, 1, decideMsg(shown("ra2"), approval.AllowOnce, "")}}; !reflect.DeepEqual(out, want) {
		t.Fatalf("sent %+v, want ra2's decision on connection 1", out)
	}
}

// TestLinkSendsOnlyOnItsConnection: a message for a connection that is
// gone, or for an older one, is refused rather than sent on the current one.
func TestLinkSendsOnlyOnItsConnection(t *testing.T) {
	l := &link{}
	m := approval.Message{Type: approval.MsgDecide, ID: "r1"}
	if err := l.send(0, m); err == nil {
		t.Fatal("a link with no connection took a message")
	}
	c := &connection{epoch: 1, outbox: make(chan approval.Message, 1)}
	l.cur = c
	if err := l.send(0, m); err == nil {
		t.Fatal("a message for connection 0 was queued on connection 1")
	}
	if err := l.send(1, m); err != nil {
		t.Fatalf("send on the current connection: %v", err)
	}
	if got := <-c.outbox; !reflect.DeepEqual(got, m) {
		t.Fatalf("queued %+v", got)
	}
	l.flush()
	if err := l.send(1, m); err == nil {
		t.Fatal("a flushed link took a message")
	}
}

// TestRetryDelayGrowsToItsBound: a console retries every half second for
// the first minute a daemon is gone, so that it picks up a restarted daemon
// within a second (issue 22: after a restart it showed a new request only
// after 11s), then backs off to every 30s.
func TestRetryDelayGrowsToItsBound(t *testing.T) {
	var waited time.Duration
	for n := 1; n <= fastRetries; n++ {
		got := retryDelay(n)
		if got > time.Second {
			t.Fatalf("retryDelay(%d) = %v after %v down: a console would pick up a restarted daemon only after more than a second", n, got, waited)
		}
		waited += got
	}
	if waited < 50*time.Second {
		t.Errorf("the fast retries end after %v, want about a minute: a restart with commands running takes up to 45s", waited)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	for i, w := range want {
		if got := retryDelay(fastRetries + 1 + i); got != w {
			t.Errorf("retryDelay(%d) = %v, want %v", fastRetries+1+i, got, w)
		}
	}
	if got := retryDelay(fastRetries + 100); got != maxRetry {
		t.Errorf("retryDelay(%d) = %v, want %v", fastRetries+100, got, maxRetry)
	}
}

// TestRemoteBacksOffFromTheFirst: a daemon reached through ssh is retried
// with a growing delay from the first attempt: each attempt is a login.
func TestRemoteBacksOffFromTheFirst(t *testing.T) {
	for n, want := range []time.Duration{firstRetry, 2 * firstRetry, 4 * firstRetry, 8 * firstRetry} {
		if got := backoff(n+1, 1); got != want {
			t.Errorf("backoff(%d, 1) = %v, want %v", n+1, got, want)
		}
	}
}

// TestDialCommandSaysHowTheCommandEnded: a connection through a command
// reads what the command writes, and when it ends the read error gives its
// exit status and the last line of its stderr.
func TestDialCommandSaysHowTheCommandEnded(t *testing.T) {
	c, err := DialCommand(context.Background(), []string{"/bin/sh", "-c", `read line; echo "got $line"; echo "ssh: connect to host h port 22: Connection refused" >&2; exit 255`})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "hello\n"); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(c)
	if !sc.Scan() || sc.Text() != "got hello" {
		t.Fatalf("read %q, %v", sc.Text(), sc.Err())
	}
	if sc.Scan() {
		t.Fatalf("read %q after the command ended", sc.Text())
	}
	if err := sc.Err(); err == nil || err.Error() != "/bin/sh ended: exit status 255: ssh: connect to host h port 22: Connection refused" {
		t.Fatalf("error after the command ended: %v", err)
	}
	if _, err := DialCommand(context.Background(), []string{"/nonexistent/ssh"}); err == nil {
		t.Fatal("a missing program was started")
	}
}

// reading is a connection that says when a Read starts.
type reading struct {
	net.Conn
	started chan struct{}
}

func (r reading) Read(p []byte) (int, error) {
	select {
	case r.started <- struct{}{}:
	default:
	}
	return r.Conn.Read(p)
}

// TestDialCommandRecvCancelled: an approval.Client's Recv blocked on a
// connection through a command returns when its context ends (the console
// relies on it for the greeting's timeout), and the connection still works
// afterwards: its pipes take read deadlines, so the read is interrupted,
// not the connection closed.
func TestDialCommandRecvCancelled(t *testing.T) {
	conn, err := DialCommand(context.Background(), []string{"/bin/cat"})
	if err != nil {
		t.Fatal(err)
	}
	r := reading{Conn: conn, started: make(chan struct{}, 1)}
	c := approval.NewClient(r)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := c.Recv(ctx)
		got <- err
	}()
	<-r.started // cat has nothing to say: the read blocks
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("Recv after cancel: %v, want context.Canceled", err)
	}
	if err := c.Send(approval.Message{Type: approval.MsgHello, Version: "v"}); err != nil {
		t.Fatalf("Send after the interrupted Recv: %v", err)
	}
	if m, err := c.Recv(context.Background()); err != nil || m.Type != approval.MsgHello {
		t.Fatalf("Recv of what cat echoed: %+v %v, want the hello", m, err)
	}
}

// TestSeveralDaemonsRefuseRunningList: a console of several daemons does
// not list the running commands (w), on the idle screen or on a request's:
// it asks no daemon for them, says why, and stays where it was, rather
// than guess which daemon a command runs on.
func TestSeveralDaemonsRefuseRunningList(t *testing.T) {
	var out []routed
	h := newDaemonsHarness(t, &out, "/run/a.sock", "/run/b.sock")
	h.update(tea.WindowSizeMsg{Width: 200, Height: 50})
	h.up(0, 0, "host-a", "ia")
	h.up(1, 0, "host-b", "ib")
	refused := "✗ could not ask the daemon for the running commands: the running commands are listed only by a console of one daemon; run agent-sudo approve for that daemon alone"
	h.press("w")
	h.wantView(refused, "nothing waiting")
	h.notView("RUNNING COMMANDS")

	h.from(1, 0, pendingMsg(shown("r1")))
	h.pastGuard()
	h.press("w")
	h.wantView(refused, "FROM agent-sudod on host-b (/run/b.sock)")
	h.notView("RUNNING COMMANDS")
	if len(out) != 0 {
		t.Fatalf("w with two daemons sent %+v, want nothing", out)
	}
}

// TestReconnectingSaysDaemonNotRunning: a daemon whose socket is gone, or
// that refuses or resets the connection, is shown as not running, with
// where to look (issue 22: the console only said "no such file or
// directory"); another reason is shown as it is.
func TestReconnectingSaysDaemonNotRunning(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOENT, syscall.ECONNREFUSED, syscall.ECONNRESET} {
		t.Run(errno.Error(), func(t *testing.T) {
			var out []routed
			h := newDaemonsHarness(t, &out, "/run/a.sock")
			h.up(0, 0, "host-a", "ia")
			h.update(linkDownMsg{link: 0, epoch: 1, err: &net.OpError{Op: "dial", Net: "unix", Err: errno}, attempt: 3, retry: h.now.Add(time.Second)})
			h.wantView("RECONNECTING (attempt 3 in 1s): dial unix: "+errno.Error()+"; agent-sudod is not running: it may have failed to start",
				"journalctl -u")
		})
	}
	var out []routed
	h := newDaemonsHarness(t, &out, "/run/a.sock")
	h.up(0, 0, "host-a", "ia")
	h.update(linkDownMsg{link: 0, epoch: 1, err: &net.OpError{Op: "dial", Net: "unix", Err: syscall.EACCES}, attempt: 3, retry: h.now.Add(time.Second)})
	h.wantView("RECONNECTING (attempt 3 in 1s): dial unix: permission denied")
	h.notView("is not running")
}
