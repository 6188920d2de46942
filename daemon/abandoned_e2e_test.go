package daemon_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/client"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2EKilledDaemonsCommandsDoNotOutliveIt: an approved command, one of
// its processes in a session of its own (setsid), is running when the
// daemon is killed with SIGKILL (issue 32, fault 2). Both processes
// survive the daemon, in its request cgroup; the next daemon started on
// the same state kills them before it serves, removes the cgroup, writes
// the request's result record (status error, the processes it killed),
// so that the audit log no longer shows the request running, and says so
// in its log. The daemon runs in a cgroup of the test's own, so that no
// other test's daemon reaps its cgroups first.
func TestE2EKilledDaemonsCommandsDoNotOutliveIt(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll, CommandTimeout: "5s", CgroupDir: daemontest.Cgroup(t)})
	marker := fmt.Sprintf("%d.%06d", 700+rand.IntN(99), rand.IntN(1000000))
	t.Cleanup(func() { checkNothingSurvived(t, marker) })
	id := fmt.Sprintf("abandoned-%d", rand.Int64())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	answered := make(chan error, 1)
	go func() {
		_, err := client.New(d.Socket).Run(ctx, &proto.Request{ID: id, Time: time.Now(), Privileged: true,
			Pipeline: [][]string{{"sh", "-c", "setsid sleep " + marker + " & exec sleep " + marker}}})
		answered <- err
	}()
	waitFor(t, "both sleeps running", func() bool { return len(liveWithArg(t, marker)) == 2 })

	killedPid := d.Cmd.Process.Pid
	d.Kill()
	if err := <-answered; err == nil {
		t.Fatal("the request was answered although the daemon was killed while it ran")
	}
	if got := liveWithArg(t, marker); len(got) != 2 {
		t.Fatalf("after the daemon was killed, live sleeps %v; want both still running (the fault this test is about)", got)
	}

	d.StartAgain()
	if got := liveWithArg(t, marker); len(got) != 0 {
		t.Errorf("the restarted daemon serves while the killed daemon's command still runs: pids %v", got)
	}
	rec := resultRecord(t, d.AuditLog, id)
	if rec.Status != proto.StatusError || !contains(rec.Message, fmt.Sprintf("abandoned: agent-sudod (pid %d) stopped while the command ran", killedPid), "killed the 2 process(es)") {
		t.Errorf("result record: status %q, message %q; want error, abandoned by pid %d, 2 processes killed", rec.Status, rec.Message, killedPid)
	}
	if rec.SurvivorsCount != 2 || len(rec.Survivors) != 2 {
		t.Errorf("result record lists %d of %d killed processes %+v; want both sleeps", len(rec.Survivors), rec.SurvivorsCount, rec.Survivors)
	}
	for _, s := range rec.Survivors {
		if s.Exe != "/usr/bin/sleep" || s.PID <= 0 {
			t.Errorf("killed process %+v; want a sleep", s)
		}
	}
	j := audit.NewJoiner()
	var status string
	for e, err := range audit.Read(ctx, d.AuditLog) {
		if err != nil {
			t.Fatal(err)
		}
		if s, _, _ := j.Add(e); s != nil && s.ID == id {
			status = s.Status
		}
	}
	if status != string(proto.StatusError) {
		t.Errorf("the audit log shows request %s as %q; want error", id, status)
	}
	logs := d.Logs.String()
	for _, want := range []string{"killed what a stopped daemon's request left running in its cgroup", "recorded a request a stopped daemon left unfinished"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the daemon's log does not say %q:\n%s", want, logs)
		}
	}
	// The restarted daemon serves as before.
	if resp := d.Run(&proto.Request{Pipeline: [][]string{{"true"}}, Privileged: true}); resp.Status != proto.StatusOK {
		t.Errorf("after the restart: %+v; want ok", resp)
	}
}

// waitFor waits, up to 30 s, until cond holds, failing the test with what
// it waited for otherwise.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
