package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/audit"
)

// writeDaemonLog writes a log of two runs of the daemon around the
// fixture's first two requests: start, r-ok, stop (SIGTERM), start,
// r-denied, stop with a reason holding an escape sequence, as an error's
// text might. It returns the log's path.
func writeDaemonLog(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "log", "audit.jsonl")
	now := auditT0
	l, err := audit.Open(path, audit.Options{Now: func() time.Time { return now }, DaemonHost: "alpha.example"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	run := audit.DaemonSection{Version: "1.2.3", PID: 42, Config: "/etc/agent-sudo/config.toml", Instance: "RUN1"}
	for i, f := range auditFixtures()[:2] {
		now = f.at
		start := run
		start.Event, start.Instance = audit.DaemonStarted, []string{"RUN1", "RUN2"}[i]
		if _, err := l.Daemon(ctx, start); err != nil {
			t.Fatal(err)
		}
		appendFixture(t, l, f)
		stop := start
		stop.Event, stop.Reason = audit.DaemonStopped, []string{"terminated signal received", "error: accept: \x1b[2Jgone"}[i]
		if _, err := l.Daemon(ctx, stop); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestAuditDaemonRecords: the listing shows the requests of a log with
// daemon records as before, one row each and no row for the daemon's
// records; show ID prints the request's records only; show --daemon prints
// the daemon's, escaped (--json: as the log has them); verify counts them
// in the chain (docs/audit.md, "Daemon records").
func TestAuditDaemonRecords(t *testing.T) {
	ctx := context.Background()
	path := writeDaemonLog(t)

	got := runAuditCLI(ctx, "--log", path, "--json")
	if ids := jsonIDs(t, got.stdout); got.code != 0 || strings.Join(ids, " ") != "r-ok r-denied" {
		t.Errorf("audit --json: exit %d, rows %q; want r-ok and r-denied only\n%s", got.code, ids, got.stderr)
	}
	got = runAuditCLI(ctx, "--log", path)
	if got.code != 0 || strings.Count(got.stdout, "\n") != 3 {
		t.Errorf("audit: exit %d; want a header and two rows:\n%s%s", got.code, got.stdout, got.stderr)
	}

	got = runAuditCLI(ctx, "--log", path, "show", "r-ok")
	if got.code != 0 || strings.Contains(got.stdout, "daemon 2026") || !strings.Contains(got.stdout, "request 2026-11-20T09:00:00Z") {
		t.Errorf("show r-ok: exit %d; want the request's records only:\n%s", got.code, got.stdout)
	}

	got = runAuditCLI(ctx, "--log", path, "show", "--daemon")
	for _, want := range []string{
		"daemon 2026-11-20T09:00:00Z  (" + path + ":1, seq 1)\n  event:          started\n  version:        1.2.3\n  pid:            42\n" +
			"  config:         /etc/agent-sudo/config.toml\n  instance:       RUN1\n  daemon host:    alpha.example\n",
		"daemon 2026-11-20T09:00:00Z  (" + path + ":6, seq 6)\n  event:          stopped\n  reason:         terminated signal received\n",
		"(" + path + ":7, seq 7)\n  event:          started\n",
		"  event:          stopped\n  reason:         error: accept: \\x1b[2Jgone\n",
	} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("show --daemon lacks %q:\n%s", want, got.stdout)
		}
	}
	if got.code != 0 || strings.Count(got.stdout, "daemon 2026") != 4 || strings.Contains(got.stdout, "\x1b") || strings.Contains(got.stdout, "r-ok") {
		t.Errorf("show --daemon: exit %d; want the four daemon records, escaped, and nothing else:\n%s", got.code, got.stdout)
	}
	got = runAuditCLI(ctx, "--log", path, "show", "--daemon", "--json")
	if got.code != 0 || strings.Count(got.stdout, "\n") != 4 || strings.Count(got.stdout, `{"type":"daemon",`) != 4 ||
		!strings.Contains(got.stdout, `"reason":"error: accept: \u001b[2Jgone"`) {
		t.Errorf("show --daemon --json: exit %d:\n%s", got.code, got.stdout)
	}

	got = runAuditCLI(ctx, "--log", path, "verify")
	if got.code != 0 || !strings.HasPrefix(got.stdout, "ok: 10 records in 1 file\n") {
		t.Errorf("verify: exit %d\n%s%s", got.code, got.stdout, got.stderr)
	}

	got = runAuditCLI(ctx, "--log", path, "show", "--daemon", "r-ok")
	if got.code != exitUsage || !strings.Contains(got.stderr, "--daemon takes no request id, got 1 arguments") {
		t.Errorf("show --daemon r-ok: exit %d, %q; want a usage error", got.code, got.stderr)
	}
	older := writeAuditLog(t)
	got = runAuditCLI(ctx, "--log", older, "show", "--daemon")
	if got.code != exitNotFound || !strings.Contains(got.stderr, "no daemon record in ") {
		t.Errorf("show --daemon of a log without daemon records: exit %d, %q; want 1", got.code, got.stderr)
	}
}
