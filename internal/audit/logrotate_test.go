package audit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// TestLogrotate rotates a log that is being written with the real
// logrotate and the packaged configuration, several times, and checks that
// the chain runs unbroken through every file and that every acknowledged
// record is there exactly once.
func TestLogrotate(t *testing.T) {
	testenv.NeedsRoot(t) // logrotate checks that root owns the configuration
	logrotate, err := exec.LookPath("logrotate")
	if err != nil {
		t.Skip("logrotate not installed")
	}
	conf, err := os.ReadFile(filepath.Join("..", "..", "packaging", "logrotate.d", "agent-sudo"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		// sighup says whether the test calls Reopen after each rotation, as
		// the daemon does on the postrotate's SIGHUP; without it the log
		// notices the rename before its next write.
		sighup bool
	}{{"noticed on the next write", false}, {"Reopen on SIGHUP", true}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "log", "audit.jsonl")
			text := strings.Replace(string(conf), "/var/log/agent-sudo/audit.jsonl", path, 1)
			// The daemon is not running here; the postrotate must not signal
			// a real agent-sudo.service.
			text = regexp.MustCompile(`(?m)^\s*systemctl kill .*$`).ReplaceAllString(text, "\t\ttrue")
			if strings.Count(text, path) != 1 || strings.Contains(text, "systemctl") {
				t.Fatalf("unexpected configuration:\n%s", text)
			}
			confPath := filepath.Join(dir, "agent-sudo.logrotate")
			must(t, os.WriteFile(confPath, []byte(text), 0o600))

			l := openLog(t, path, Options{})
			ctx := context.Background()
			var (
				mu    sync.Mutex
				acked []string
				stop  = make(chan struct{})
				wg    sync.WaitGroup
			)
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					id := fmt.Sprintf("r%d", i)
					if _, err := l.Append(ctx, decisionRecord(id)); err != nil {
						t.Errorf("Append %s: %v", id, err)
						return
					}
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
				}
			})
			count := func() int {
				mu.Lock()
				defer mu.Unlock()
				return len(acked)
			}
			for rot := range 4 {
				for n := count(); count() < n+20; {
					time.Sleep(time.Millisecond)
				}
				out, err := exec.Command(logrotate, "-f", "-s", filepath.Join(dir, "state"), confPath).CombinedOutput()
				if err != nil {
					t.Fatalf("rotation %d: logrotate: %v\n%s", rot+1, err, out)
				}
				if tt.sighup {
					must(t, l.Reopen(ctx))
				}
			}
			for n := count(); count() < n+20; {
				time.Sleep(time.Millisecond)
			}
			close(stop)
			wg.Wait()
			must(t, l.Close())

			files, err := Files(path)
			must(t, err)
			var names []string
			for _, f := range files {
				names = append(names, filepath.Base(f))
			}
			if got := strings.Join(names, " "); got != "audit.jsonl.4.gz audit.jsonl.3.gz audit.jsonl.2.gz audit.jsonl.1 audit.jsonl" {
				t.Errorf("files after 4 rotations: %s", got)
			}
			fi, err := os.Stat(path)
			must(t, err)
			if perm := fi.Mode().Perm(); perm&0o027 != 0 {
				t.Errorf("the new file has mode %04o", perm)
			}
			res, err := Verify(ctx, files...)
			if err != nil {
				t.Fatalf("Verify(%s): %v", strings.Join(names, " "), err)
			}
			seen := map[string]int{}
			for e, err := range Read(ctx, files...) {
				must(t, err)
				seen[e.Record.ID]++
			}
			for _, id := range acked {
				if seen[id] != 1 {
					t.Errorf("acknowledged record %s is in the log %d times", id, seen[id])
				}
			}
			if res.Start != Genesis || res.Records != len(acked) {
				t.Errorf("Verify = %+v; %d records acknowledged", res, len(acked))
			}
			t.Logf("%d records across %s", res.Records, strings.Join(names, " "))
		})
	}
}
