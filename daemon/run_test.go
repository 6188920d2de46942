package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// TestRunWaitsForTheConsole: with a console on the daemon's terminal
// (agent-sudod --tty), Run returns only once that console has returned,
// having restored the terminal, so the shell never gets a terminal in raw
// mode back. Not parallel: it clears systemd's variables.
func TestRunWaitsForTheConsole(t *testing.T) {
	cfg, alog := runSetup(t)
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

// runSetup skips the test unless it runs as root (Run makes the approver
// socket root's), clears systemd's variables, and returns a configuration
// in a directory of its own and its audit log, opened.
func runSetup(t *testing.T) (*config.Config, *audit.Log) {
	t.Helper()
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
	t.Cleanup(func() { alog.Close() })
	return cfg, alog
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

// TestRunTTYHangupStops: with a console on the daemon's terminal
// (Options.Foreground, agent-sudod --tty), SIGHUP means that terminal hung
// up, and so does a console that ends with ErrTerminalHungUp (its input
// ended): Run stops, as on SIGTERM, and logs why, instead of serving on
// with nobody at the console; the audit log's last record is the daemon's
// stop, saying the terminal hung up. Without a foreground console SIGHUP
// still reloads and the daemon serves on. Not parallel: it sends SIGHUP to
// the test process (Run catches it) and clears systemd's variables.
func TestRunTTYHangupStops(t *testing.T) {
	const why = `msg=stopped why="the terminal of agent-sudod --tty hung up, which stops the daemon"`
	hup := func() {
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name string
		// console is the foreground console; it is told when Run started
		// it, and Run stops when it returns.
		console func(ctx context.Context, started chan<- struct{}) error
		// then is done once the console started.
		then func()
	}{
		{"SIGHUP", func(ctx context.Context, started chan<- struct{}) error {
			close(started)
			<-ctx.Done()
			return nil
		}, hup},
		{"input ended", func(ctx context.Context, started chan<- struct{}) error {
			close(started)
			return fmt.Errorf("console: error reading input: %w", ErrTerminalHungUp)
		}, func() {}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, alog := runSetup(t)
			var logs daemontest.Buffer
			started, reloaded := make(chan struct{}), make(chan struct{}, 1)
			opts := Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Audit: alog,
				Reload: func() (*config.Config, error) {
					reloaded <- struct{}{}
					return nil, fmt.Errorf("not reloaded in this test")
				},
				Foreground: func(ctx context.Context, _ string) error { return tt.console(ctx, started) }}
			ctx, cancel := context.WithCancel(context.Background())
			ran := make(chan error, 1)
			go func() { ran <- Run(ctx, cfg, opts) }()
			defer func() { cancel(); <-ran }()
			select {
			case <-started:
			case err := <-ran:
				ran <- err
				t.Fatalf("Run returned %v before starting the console", err)
			}
			tt.then()
			select {
			case err := <-ran:
				ran <- err
				if err != nil {
					t.Errorf("Run: %v", err)
				}
			case <-reloaded:
				t.Fatal("SIGHUP reloaded the configuration of a daemon with a console on its terminal, which serves on")
			}
			if !strings.Contains(logs.String(), why) {
				t.Errorf("the log does not say why the daemon stopped (%s):\n%s", why, logs.String())
			}
			wantRun(t, cfg.AuditLog, ErrTerminalHungUp.Error())
		})
	}

	t.Run("no console: SIGHUP reloads", func(t *testing.T) {
		cfg, alog := runSetup(t)
		var logs daemontest.Buffer
		reloaded := make(chan struct{}, 1)
		opts := Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Audit: alog,
			Reload: func() (*config.Config, error) {
				reloaded <- struct{}{}
				next := *cfg // Reload adjusts what it is given
				return &next, nil
			}}
		sock := cfg.Socket
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ran := make(chan error, 1)
		go func() { ran <- Run(ctx, cfg, opts) }()
		// SIGHUP is acted on once the daemon is ready: it then answers a
		// connection on its socket.
		for range 6000 {
			if c, err := net.Dial("unix", sock); err == nil {
				c.Close()
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		hup()
		select {
		case <-reloaded:
		case err := <-ran:
			t.Fatalf("Run returned %v on SIGHUP without a console on its terminal; want a reload", err)
		}
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
		if strings.Contains(logs.String(), "hung up") {
			t.Errorf("a daemon without a console on its terminal says it hung up:\n%s", logs.String())
		}
		wantRun(t, cfg.AuditLog, "stopped by its caller")
	})
}

// wantRun checks that the audit log at path holds one run of the daemon:
// its start first, its stop last saying why, both this process's, with the
// same instance, and no other daemon record.
func wantRun(t *testing.T, path, why string) {
	t.Helper()
	var recs []*audit.Record
	for e, err := range audit.Read(context.Background(), path) {
		if err != nil {
			t.Fatalf("read the audit log: %v", err)
		}
		recs = append(recs, e.Record)
	}
	daemons := 0
	for _, r := range recs {
		if r.Type == audit.TypeDaemon {
			daemons++
		}
	}
	if len(recs) < 2 || daemons != 2 || recs[0].Daemon == nil || recs[len(recs)-1].Daemon == nil {
		for _, r := range recs {
			t.Logf("%s record %+v", r.Type, r.Daemon)
		}
		t.Fatalf("the audit log has %d records, %d of the daemon; want the daemon's start first and its stop last", len(recs), daemons)
	}
	start, stop := recs[0].Daemon, recs[len(recs)-1].Daemon
	if start.Event != audit.DaemonStarted || start.PID != os.Getpid() || start.Version != Version() || start.Instance == "" {
		t.Errorf("the first record is %+v; want the start of this process's daemon", *start)
	}
	if stop.Event != audit.DaemonStopped || stop.Reason != why || stop.Instance != start.Instance || stop.PID != start.PID {
		t.Errorf("the last record is %+v; want the stop of the run %s, saying %q", *stop, start.Instance, why)
	}
	if _, err := audit.Verify(context.Background(), path); err != nil {
		t.Errorf("the audit log does not verify: %v", err)
	}
}

// TestRunStopRecordNotWritten: a stop record that cannot be written (here
// the log is closed under the daemon) does not change how the daemon
// stops: Run returns as it would, and its log says the stop is not
// recorded and why the daemon stopped. Not parallel: it clears systemd's
// variables.
func TestRunStopRecordNotWritten(t *testing.T) {
	cfg, alog := runSetup(t)
	var logs daemontest.Buffer
	opts := Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Audit: alog,
		Foreground: func(ctx context.Context, _ string) error {
			// The human quits the console, and the log is gone.
			return alog.Close()
		}}
	if err := Run(context.Background(), cfg, opts); err != nil {
		t.Fatalf("Run: %v", err)
	}
	const want = `level=ERROR msg="audit log: the daemon's stop is not recorded" why="the console on agent-sudod's terminal (agent-sudod --tty) was quit, which stops the daemon" err="audit log is closed"`
	if !strings.Contains(logs.String(), want) {
		t.Errorf("the daemon's log does not say the stop is not recorded (%s):\n%s", want, logs.String())
	}
}

// TestRunLeavesNoGoroutine: Run returns only after every goroutine it
// started has ended, the systemd watchdog's feeder among them (fed here
// through a notify socket of the test's, every millisecond). Not parallel:
// it sets systemd's variables and reads every goroutine's stack.
func TestRunLeavesNoGoroutine(t *testing.T) {
	cfg, alog := runSetup(t)
	notify := filepath.Join(t.TempDir(), "notify")
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notify, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	t.Setenv("NOTIFY_SOCKET", notify)
	t.Setenv("WATCHDOG_USEC", "2000")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- Run(ctx, cfg, Options{Audit: alog}) }()
	// Read the notifications until the watchdog is fed, then go on reading
	// so that no send blocks.
	fed := make(chan struct{})
	go func() {
		buf := make([]byte, 4096)
		once := sync.Once{}
		for {
			n, err := sock.Read(buf)
			if err != nil {
				return
			}
			if strings.Contains(string(buf[:n]), "WATCHDOG=1") {
				once.Do(func() { close(fed) })
			}
		}
	}()
	select {
	case <-fed:
	case err := <-ran:
		t.Fatalf("Run returned %v before feeding the watchdog", err)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for _, f := range []string{"daemon.feedWatchdog", "daemon.(*approverServer).serve", "daemon.Run.func"} {
		if strings.Contains(stacks, f) {
			t.Errorf("after Run returned, a goroutine still runs %s:\n%s", f, stacks)
		}
	}
}
