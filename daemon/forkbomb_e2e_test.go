package daemon_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2EForkBombDoesNotTakeTheDaemon: a fork bomb in an approved stage,
// under a pids budget the daemon shares with its requests (as systemd's
// TasksMax shares the service's), takes only its own cgroup's
// request_pids_max (issue 32, fault 3). Before, it took every pid of the
// budget: the Go runtime could not start a thread and the daemon aborted
// (fatal error: newosproc), or could not fork the next request's stage.
// The test puts the daemon in a cgroup of its own with pids.max = 400 (in
// systemd's hybrid layout, where the pids controller is cgroup v1's, in
// that cgroup's v1 pids twin: the daemon then forks each stage from a
// thread moved into its request's v1 cgroup, and the test checks that no
// daemon thread stays there); the
// bomb (bash forking up to 2,000 sleeps, which goes on past failed forks
// and ends by itself) runs until command_timeout, and meanwhile another
// request is answered ok; then the bomb's request is answered timeout and
// the daemon still runs.
func TestE2EForkBombDoesNotTakeTheDaemon(t *testing.T) {
	t.Parallel()
	dir := daemontest.Cgroup(t)
	if err := daemontest.PidsEnabled(); err != nil {
		t.Skipf("no pids controller for the test's cgroup, so no pids budget to exhaust: %v", err)
	}
	pidsDir := daemontest.PidsDir(dir) // dir, or its cgroup v1 twin in systemd's hybrid layout
	if err := os.WriteFile(filepath.Join(pidsDir, "pids.max"), []byte("400"), 0); err != nil {
		t.Fatal(err)
	}
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll, CommandTimeout: "5s", CgroupDir: dir,
		Extra: "request_pids_max = 64"})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type answer struct {
		resp *proto.Response
		err  error
	}
	bomb := make(chan answer, 1)
	go func() {
		resp, err := client.New(d.Socket).Run(ctx, &proto.Request{Time: time.Now(), Privileged: true,
			Pipeline: [][]string{{"bash", "-c", "for i in {1..2000}; do sleep 60 & done 2>/dev/null; wait"}}})
		bomb <- answer{resp, err}
	}()
	// The bomb has hit a pids limit once a fork failed in the test's
	// cgroup or in its request's.
	waitFor(t, "the bomb to hit a pids limit", func() bool {
		return pidsEventsMax(t, pidsDir) > 0
	})
	// Where the limit is cgroup v1's, each stage was forked from a daemon
	// thread moved into its request's cgroup for the fork: none is left
	// there (nor anywhere but the daemon's own cgroup).
	checkThreadsIn(t, d.Cmd.Process.Pid, pidsDir)

	resp, err := client.New(d.Socket).Run(ctx, &proto.Request{Time: time.Now(), Privileged: true, Pipeline: [][]string{{"true"}}})
	select {
	case a := <-bomb:
		t.Fatalf("the bomb's request ended (%+v, %v) before the other one was answered: the test proves nothing", a.resp, a.err)
	default:
	}
	if err != nil || resp.Status != proto.StatusOK {
		t.Errorf("during the bomb, another request got %+v, %v; want ok", resp, err)
	}
	a := <-bomb
	if a.err != nil || a.resp.Status != proto.StatusTimeout {
		t.Errorf("the bomb's request: %+v, %v; want timeout", a.resp, a.err)
	}
	select {
	case err := <-d.Done:
		t.Fatalf("the daemon died: %v", err)
	default:
	}
	if err := d.Ping(); err != nil {
		t.Errorf("after the bomb the daemon does not answer: %v", err)
	}
	if logs := d.Logs.String(); strings.Contains(logs, "fatal error") {
		t.Errorf("the daemon's log has a fatal error:\n%s", logs)
	}
}

// pidsEventsMax is how many forks failed on a pids limit in dir or the
// cgroups just below it: the "max" counts of their pids.events (which
// count in the cgroup that forked before Linux 6.12 and hierarchically
// since).
func pidsEventsMax(t *testing.T, dir string) int {
	t.Helper()
	dirs := []string{dir}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(dir, e.Name()))
		}
	}
	total := 0
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "pids.events"))
		if err != nil {
			continue // a request cgroup removed meanwhile
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "max "); ok {
				n, _ := strconv.Atoi(v)
				total += n
			}
		}
	}
	return total
}

// checkThreadsIn fails the test unless every thread of process pid is in
// the cgroup v1 pids directory dir, where the pids controller is v1's; it
// checks nothing where it is v2's, whose cgroups hold whole processes.
func checkThreadsIn(t *testing.T, pid int, dir string) {
	t.Helper()
	if !strings.HasPrefix(dir, "/sys/fs/cgroup/pids/") {
		return
	}
	want := strings.TrimPrefix(dir, "/sys/fs/cgroup/pids")
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/cgroup")
		if err != nil {
			continue // ended meanwhile
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			if f := strings.SplitN(line, ":", 3); len(f) == 3 && f[1] == "pids" && f[2] != want {
				t.Errorf("daemon thread %s is in pids cgroup %s, not the daemon's %s", task.Name(), f[2], want)
			}
		}
	}
}
