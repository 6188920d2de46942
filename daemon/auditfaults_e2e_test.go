package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2EAuditDiskFullKeepsAcknowledged puts the audit log on a small
// tmpfs, fills it, and gives space back a page at a time while requests
// come in one after the other: allowed ones that run, and denied ones. Some
// are refused "audit log unavailable"; but every request answered ok has
// its result record in the log (unless writing that record failed, which
// the daemon logs), and every request answered denied its decision record,
// although those records were written without waiting for their sync and
// the next write failed for want of space. The chain verifies.
func TestE2EAuditDiskFullKeepsAcknowledged(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	mnt := testenv.Tmpfs(t, 256<<10)

	logPath := filepath.Join(mnt, "log", "audit.jsonl")
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AskRules, AuditLog: logPath})
	filler, err := os.OpenFile(filepath.Join(mnt, "filler"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer filler.Close()
	page := make([]byte, 4096)
	for {
		if _, err := filler.Write(page); err != nil {
			break // full
		}
	}
	freePage := func() {
		fi, err := filler.Stat()
		if err != nil {
			t.Fatal(err)
		}
		if err := filler.Truncate(max(0, fi.Size()-4096)); err != nil {
			t.Fatal(err)
		}
	}

	want := map[string]audit.Type{} // id -> the record its answer promises
	unavailable := 0
	// An argument of 1.5 KiB makes each request's records take about a
	// page and a half.
	arg := strings.Repeat("x", 1500)
	for i := range 40 {
		freePage()
		id := fmt.Sprintf("full-%d", i)
		pipeline, wantStatus, rec := [][]string{{"true", arg}}, proto.StatusOK, audit.TypeResult
		if i%3 == 2 {
			pipeline, wantStatus, rec = [][]string{{"rm", arg}}, proto.StatusDenied, audit.TypeDecision
		}
		resp := d.Run(&proto.Request{ID: id, Pipeline: pipeline, Privileged: true})
		switch {
		case resp.Status == wantStatus:
			want[id] = rec
		case resp.Status == proto.StatusError && strings.Contains(resp.Message, "audit log unavailable"):
			unavailable++
		default:
			t.Fatalf("request %s: %s %q", id, resp.Status, resp.Message)
		}
	}
	if unavailable == 0 || len(want) < 10 {
		t.Fatalf("%d requests answered and %d refused as the log was unavailable: the test did not fill the disk as it should", len(want), unavailable)
	}
	d.Stop()
	// A result record whose own write failed is missing, and the daemon
	// logs it: the command ran, so the answer was still ok.
	for l := range strings.Lines(d.Logs.String()) {
		if strings.Contains(l, `msg="audit: result not recorded"`) {
			for id := range want {
				if strings.Contains(l, " id="+id+" ") {
					delete(want, id)
				}
			}
		}
	}
	for e, err := range audit.Read(context.Background(), logPath) {
		if err != nil {
			t.Fatal(err)
		}
		if rec, ok := want[e.Record.ID]; ok && e.Record.Type == rec {
			delete(want, e.Record.ID)
		}
	}
	if len(want) > 0 {
		t.Errorf("%d answered requests have no record of their answer in the log: %v", len(want), want)
	}
	if code, out, errOut := auditCLI("audit", "verify", "--log", logPath); code != 0 {
		t.Errorf("verify: %d %q %q", code, out, errOut)
	}
	t.Logf("%d requests refused while the log was full", unavailable)
}

// TestE2EAuditReopenUnderLoad sends SIGHUP (as logrotate's postrotate and
// systemctl reload do) again and again while clients run pipelines: the
// log's path still names the same file, so the daemon keeps it, and its
// lock, and no request is refused "audit log unavailable" because a stage
// being started held the old descriptor. Every request is answered ok and
// has its result record, and the daemon never blames a second agent-sudod.
func TestE2EAuditReopenUnderLoad(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll})
	const hups, clients = 30, 4
	stop := make(chan struct{})
	var (
		mu     sync.Mutex
		ids    []string
		failed []string
		wg     sync.WaitGroup
	)
	for c := range clients {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("hup-%d-%d", c, i)
				resp := d.Run(&proto.Request{ID: id, Pipeline: [][]string{{"true"}, {"true"}, {"true"}}, Privileged: true})
				mu.Lock()
				ids = append(ids, id)
				if resp.Status != proto.StatusOK {
					failed = append(failed, fmt.Sprintf("%s: %s %q", id, resp.Status, resp.Message))
				}
				mu.Unlock()
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := 1; i <= hups; i++ {
		if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		// Each SIGHUP ends in a reload's outcome; waiting for it keeps the
		// signals from merging.
		if logs, err := d.Logs.WaitCount(ctx, "msg=reloaded", i); err != nil {
			t.Fatalf("SIGHUP %d: no reload logged: %v\n%s", i, err, logs)
		}
	}
	close(stop)
	wg.Wait()
	d.Stop()
	logs := d.Logs.String()
	for _, bad := range []string{"reopen after SIGHUP failed", "second agent-sudod", "audit log unavailable"} {
		if strings.Contains(logs, bad) {
			t.Errorf("the daemon logged %q:\n%s", bad, logs)
		}
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d requests failed: %q", len(failed), len(ids), failed)
	}
	results := map[string]bool{}
	for e, err := range audit.Read(context.Background(), d.AuditLog) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Record.Type == audit.TypeResult {
			results[e.Record.ID] = true
		}
	}
	for _, id := range ids {
		if !results[id] {
			t.Errorf("request %s has no result record", id)
		}
	}
	t.Logf("%d requests during %d SIGHUPs", len(ids), hups)
}

// TestE2EReplayAfterRestartAroundClockStep: a request runs; then the clock
// steps (back or forward an hour) and requests are recorded under the
// stepped clock; the clock is put right and the daemon restarts. The
// request line that already ran is refused as a replay: the restarted
// daemon reads back the ids of the request records in its window wherever
// they are in the log, not only until the first record dated before it.
// The steps are injected: the test writes the records under the stepped
// clock itself, as the daemon would have, between the two daemons.
func TestE2EReplayAfterRestartAroundClockStep(t *testing.T) {
	t.Parallel()
	for _, step := range []time.Duration{-time.Hour, time.Hour, -24 * time.Hour} {
		t.Run(step.String(), func(t *testing.T) {
			t.Parallel()
			d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll})
			id := "replay-around-step"
			l := line(map[string]any{"id": id, "pipeline": [][]string{{"true"}}})
			if first := d.Send(l); !strings.Contains(first, `"status":"ok"`) {
				t.Fatalf("first use: %s", first)
			}
			d.Stop()
			// What the daemon writes while the clock is stepped.
			alog, err := audit.Open(d.AuditLog, audit.Options{Now: func() time.Time { return time.Now().Add(step) }})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				req := &proto.Request{ID: fmt.Sprintf("while-stepped-%d", i), Action: proto.ActionExecute,
					Time: time.Now().Add(step), Pipeline: [][]string{{"true"}}}
				if _, err := alog.Received(context.Background(), req, peercred.Creds{UID: 0, PID: 1, Exe: "/usr/bin/agent"}); err != nil {
					t.Fatal(err)
				}
			}
			if err := alog.Close(); err != nil {
				t.Fatal(err)
			}
			// The clock is right again; the daemon restarts.
			d.StartAgain()
			second := d.Send(l)
			if !contains(second, `"status":"error"`, `request id \"replay-around-step\" was already used by a request that can still be fresh; refusing it as a replay`) {
				t.Fatalf("replay after a restart around a clock step of %s: %s", step, second)
			}
		})
	}
}

// TestE2EStagesDoNotHoldTheAuditLog: a stage has no descriptor of the audit
// log once it runs its program (every descriptor of the log is
// close-on-exec, and clone3's child closes them at its exec), so no
// command can keep the log, or its writers' lock, from the daemon.
func TestE2EStagesDoNotHoldTheAuditLog(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll})
	for _, pipeline := range [][][]string{
		{{"ls", "-l", "/proc/self/fd/"}},
		{{"true"}, {"ls", "-l", "/proc/self/fd/"}},
	} {
		resp := d.Run(&proto.Request{Pipeline: pipeline, Privileged: true})
		if resp.Status != proto.StatusOK || !strings.Contains(string(resp.Stdout), "0 ->") {
			t.Fatalf("%q: %s %q %q", pipeline, resp.Status, resp.Message, resp.Stdout)
		}
		if strings.Contains(string(resp.Stdout), filepath.Dir(d.AuditLog)) {
			t.Errorf("a stage holds a descriptor of the audit log's directory or file:\n%s", resp.Stdout)
		}
	}
}
