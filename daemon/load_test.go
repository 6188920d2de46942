package daemon

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/loadgen"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestServerLoadLeavesNothingBehind: 200 clients send allowed `true`
// requests to an in-process server that really runs them, with
// max_connections and root_connections at their defaults; every request
// is answered correctly (busy answers retried), and afterwards the process
// has no more goroutines and no more open descriptors than before. The
// end-to-end twin, internal/loadgen: TestE2ELoadEveryRequestAnswered,
// checks the real daemon's descriptors and audit log; only here can the
// goroutines be counted. Not parallel: it counts every goroutine.
func TestServerLoadLeavesNothingBehind(t *testing.T) {
	testenv.NeedsRoot(t) // the pipelines really run, as root
	// Long first-byte and read timeouts: on a loaded machine the 200
	// clients in this process may not run for seconds between connecting
	// and writing, and the server would rightly time them out.
	ts := startServer(t, serverSetup{toml: "first_byte_timeout = \"60s\"\nread_timeout = \"60s\"\n" + allowTrue,
		opts: Options{Exec: runner.Run}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// Patient clients: whether the default retries suffice depends on the
	// machine's speed; this test is about what the server keeps.
	patient := client.BusyRetry{Retries: 1000}
	load := func(clients, requests int) *loadgen.Result {
		t.Helper()
		res, err := loadgen.Run(ctx, loadgen.Options{Socket: ts.socket, DaemonPID: os.Getpid(),
			Clients: clients, Requests: requests, Stages: 1, Busy: patient})
		if err != nil {
			t.Fatal(err)
		}
		if res.OK != requests || res.Failed != 0 {
			t.Fatalf("%d of %d requests answered correctly, %d failed: %q", res.OK, requests, res.Failed, res.Failures)
		}
		return res
	}
	// The baseline is taken once a ping has been answered (Serve and its
	// own goroutines run) and the ping's connection is gone.
	load(1, 1)
	goroutines, fds := settle(t, ctx, -1, -1)

	const requests = 300
	res := load(200, requests)
	t.Logf("%d ok, %d busy retries (at most %d for one request); goroutines %d before; descriptors %d before, %d at the peak",
		res.OK, res.Retries, res.MaxRetries, goroutines, fds, res.Peak.FDs)
	settle(t, ctx, goroutines, fds)
}

// settle waits until no goroutine serves a connection and the process has
// at most goroutines goroutines and fds open descriptors (no bound when
// negative), and returns the numbers then. A handler ends just after its
// client has its answer, so this is polled (there is no event for "every
// handler has returned"); one that leaked is still there after the
// generous deadline, which fails the test with every goroutine's stack.
func settle(t *testing.T, ctx context.Context, goroutines, fds int) (int, int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		buf := make([]byte, 4<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		g := runtime.NumGoroutine()
		p, err := loadgen.ReadProc(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		serving := strings.Contains(stacks, "(*Server).handle") || strings.Contains(stacks, "(*connLimits).") ||
			strings.Contains(stacks, "(*Server).refuseConn")
		if !serving && (goroutines < 0 || g <= goroutines) && (fds < 0 || p.FDs <= fds) {
			return g, p.FDs
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("not idle within 30s: a connection is still served, or %d goroutines (want at most %d, -1: any), %d descriptors (at most %d):\n%s",
				g, goroutines, p.FDs, fds, strings.TrimSpace(stacks))
		}
		time.Sleep(10 * time.Millisecond) // polling: see above
	}
}

// TestRefuseConnAnswersWithoutDeadline: a connection refused before it is
// read gets its answer whole, before the close that discards its unread
// request (which makes the client's next read fail with a reset), and the
// answer is written in one attempt without a deadline, so a daemon too
// loaded to run for a second cannot miss it (see writeOnce).
func TestRefuseConnAnswersWithoutDeadline(t *testing.T) {
	ts := newServer(t, serverSetup{})
	daemonSide, clientSide := socketPair(t)
	if _, err := clientSide.Write([]byte(request(nil) + "\n")); err != nil {
		t.Fatal(err)
	}
	ts.srv.refuseConn(daemonSide, 1000, "busy", "busy: test")
	resp, err := proto.ReadResponse(clientSide)
	if err != nil {
		t.Fatalf("read the refusal: %v", err)
	}
	if !client.IsBusy(resp) || resp.Message != "busy: test" {
		t.Errorf("refusal = %+v, want the busy answer without an id", resp)
	}
	if err := writeOnce(daemonSide, []byte("x")); err == nil {
		t.Error("writeOnce on a closed connection succeeded")
	}
}
