package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/config"
)

// TestRunWaitsForTheConsole: with a console on the daemon's terminal
// (agent-sudod --tty), Run returns only once that console has returned,
// having restored the terminal, so the shell never gets a terminal in raw
// mode back. Not parallel: it clears systemd's variables.
func TestRunWaitsForTheConsole(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("Run makes the approver socket root's, which needs root")
	}
	for _, k := range []string{"NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "WATCHDOG_USEC"} {
		t.Setenv(k, "")
	}
	dir, err := os.MkdirTemp("", "asr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg, err := config.Parse(fmt.Appendf(nil, `
socket = %q
approver_socket = %q
audit_log = %q
socket_group = "root"
exec = "direct"
cgroup = "best-effort"
`, filepath.Join(dir, "run", "agent.sock"), filepath.Join(dir, "run", "approver.sock"), filepath.Join(dir, "audit.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	alog, err := audit.Open(cfg.AuditLog, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer alog.Close()

	logs := &watchWriter{want: `msg="waiting for the console on this terminal to end"`, seen: make(chan struct{})}
	started, restoring, restored := make(chan string, 1), make(chan struct{}), make(chan struct{})
	opts := Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), Audit: alog,
		Foreground: func(ctx context.Context, sock string) error {
			started <- sock
			<-ctx.Done()
			<-restoring // the console puts the terminal back
			close(restored)
			return nil
		}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- Run(ctx, cfg, opts) }()
	select {
	case sock := <-started:
		if sock != cfg.ApproverSocket {
			t.Errorf("the console got socket %q, want %q", sock, cfg.ApproverSocket)
		}
	case err := <-ran:
		t.Fatalf("Run returned %v before starting the console", err)
	}
	cancel()
	select {
	case err := <-ran:
		close(restoring)
		t.Fatalf("Run returned (%v) while the console still had the terminal", err)
	case <-logs.seen:
	}
	close(restoring)
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	select {
	case <-restored:
	default:
		t.Error("Run returned before the console had restored the terminal")
	}
}

// watchWriter closes seen the first time a write contains want.
type watchWriter struct {
	want string
	seen chan struct{}
	once sync.Once
}

func (w *watchWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}
