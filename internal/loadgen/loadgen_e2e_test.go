package loadgen_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/loadgen"
)

func TestMain(m *testing.M) {
	daemontest.Main(m)
}

// loadRequests is the size of the end-to-end load run: large enough that
// 200 clients overrun the default max_connections for a while, small
// enough for CI. `make load` runs 10,000.
const loadRequests = 600

// TestE2ELoadEveryRequestAnswered: 200 clients against the real daemon,
// with max_connections and root_connections at their defaults, get every
// request answered correctly (busy answers are retried by the client), the
// audit log holds all four records of every request and verifies, and the
// daemon's open descriptors come back to their number before the run. It
// counts; it times nothing.
func TestE2ELoadEveryRequestAnswered(t *testing.T) {
	t.Parallel()
	def := config.Default()
	// read_timeout and first_byte_timeout are long: on a loaded machine
	// 200 clients in one test process (with the race detector) may not be
	// scheduled for seconds between connecting and writing, and the daemon
	// would rightly time them out. The connection limits are the defaults.
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll, MaxConnections: def.MaxConnections,
		ReadTimeout: "60s", Extra: `first_byte_timeout = "60s"`})
	if got, err := os.ReadFile(d.ConfigPath); err != nil {
		t.Fatal(err)
	} else if configured(string(got), "root_connections") {
		t.Fatalf("the daemon's configuration sets root_connections; the test is for the default:\n%s", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res, err := loadgen.Run(ctx, loadgen.Options{Socket: d.Socket, DaemonPID: d.Cmd.Process.Pid,
		Clients: 200, Requests: loadRequests, Stages: 1, Busy: patient})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d ok, %d failed, %d busy retries (at most %d for one request), %.0f req/s, p50 %v, p99 %v, max %v; daemon fds %d/%d/%d, threads peak %d",
		res.OK, res.Failed, res.Retries, res.MaxRetries, res.Throughput(), res.P50, res.P99, res.Max,
		res.Before.FDs, res.Peak.FDs, res.After.FDs, res.Peak.Threads)
	if res.OK != loadRequests || res.Failed != 0 {
		t.Errorf("%d of %d requests answered correctly, %d failed (%d still busy after the retries): %q",
			res.OK, loadRequests, res.Failed, res.Busy, res.Failures)
	}
	// The daemon closes each connection just after its answer: wait for
	// the last ones (a generous bound, not a timing).
	sctx, scancel := context.WithTimeout(ctx, 30*time.Second)
	defer scancel()
	if p, err := loadgen.Settle(sctx, d.Cmd.Process.Pid, res.Before.FDs, 10*time.Millisecond); err != nil {
		t.Errorf("descriptors: %v (%d open)", err, p.FDs)
	}

	// Stopped, the daemon has written and synced every record.
	d.Stop()
	files, err := audit.Files(d.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[audit.Type]int{}
	for e, err := range audit.Read(ctx, files...) {
		if err != nil {
			t.Fatal(err)
		}
		counts[e.Record.Type]++
	}
	for _, typ := range []audit.Type{audit.TypeRequest, audit.TypeDecision, audit.TypeExec, audit.TypeResult} {
		if counts[typ] != loadRequests {
			t.Errorf("%d %s records, want %d (one per request): %v", counts[typ], typ, loadRequests, counts)
		}
	}
	if _, err := audit.Verify(ctx, files...); err != nil {
		t.Errorf("the audit log does not verify after the load: %v", err)
	}
}

// patient retries busy answers for as long as the test may take: whether
// the client's default retries suffice depends on how fast the machine
// serves 200 clients (make load reports that); what this test checks is
// that the daemon answers and records every request and keeps nothing.
var patient = client.BusyRetry{Retries: 1000}

// configured reports whether the configuration text sets key.
func configured(text, key string) bool {
	for l := range strings.Lines(text) {
		if strings.HasPrefix(strings.TrimSpace(l), key) {
			return true
		}
	}
	return false
}
