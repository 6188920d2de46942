package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// escapingPipeline returns a stage whose sleep leaves the process group
// (setsid -f, or a double fork into a new session) and keeps running, and a
// marker that finds the sleep in /proc. The stage waits until the sleeper
// runs; then, when thenSleep, it sleeps itself until command_timeout.
func escapingPipeline(kind string, thenSleep bool) (argv []string, marker string) {
	marker = fmt.Sprintf("%d.%06d", 800+rand.IntN(99), rand.IntN(1000000))
	wait := `while ! pgrep -f "^sleep ` + marker + `$" >/dev/null; do :; done`
	script := `setsid -f sleep ` + marker + `; ` + wait
	if kind == "double fork" {
		script = `setsid sh -c 'sleep ` + marker + ` & exit 0' & ` + wait
	}
	if thenSleep {
		script += "; exec sleep 1000"
	}
	return []string{"sh", "-c", script}, marker
}

// liveWithArg lists live (not zombie) processes having arg as an argument.
func liveWithArg(t *testing.T, arg string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		for a := range bytes.SplitSeq(b, []byte{0}) {
			if string(a) == arg {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// checkNothingSurvived fails, and cleans up, when a process with marker is
// alive.
func checkNothingSurvived(t *testing.T, marker string) {
	t.Helper()
	if pids := liveWithArg(t, marker); len(pids) > 0 {
		t.Errorf("processes outlived their request: pids %v", pids)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// resultRecord returns the result record of request id from the audit log.
func resultRecord(t *testing.T, logPath, id string) *audit.ResultSection {
	t.Helper()
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if r.ID == id && r.Result != nil {
			return r.Result
		}
	}
	t.Fatalf("no result record for %s in %s", id, logPath)
	return nil
}

// TestCgroupEscapeesOverTheWire: over the real socket, in both exec modes,
// a process that left the pipeline's process group (setsid -f, a double
// fork) is killed when the pipeline exits normally, and reported in the
// response and the audit record; at command_timeout it is killed too.
// Afterwards /proc has no such process.
func TestCgroupEscapeesOverTheWire(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	daemontest.RequireCgroups(t)
	for _, mode := range []string{"direct", "sudo"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			if mode == "sudo" {
				if _, err := os.Stat("/usr/bin/sudo"); err != nil {
					t.Skip("sudo not installed")
				}
			}
			d := daemontest.Start(t, daemontest.Config{Exec: mode, Rules: daemontest.AllowAll, CommandTimeout: "3s"})
			for _, kind := range []string{"setsid -f", "double fork"} {
				t.Run(kind+"/exit", func(t *testing.T) {
					argv, marker := escapingPipeline(kind, false)
					id := fmt.Sprintf("cg-exit-%d", rand.Int64())
					resp := d.Run(&proto.Request{ID: id, Pipeline: [][]string{argv}, Privileged: true})
					checkNothingSurvived(t, marker)
					if resp.Status != proto.StatusOK || len(resp.Stages) != 1 || resp.Stages[0].ExitCode != 0 {
						t.Fatalf("response %+v; want ok, exit 0", resp)
					}
					// The double fork's middle shell may not have exited yet
					// when the stage does; it is then a survivor too.
					if !contains(resp.Message, "process(es) running in its cgroup", "they were killed", `"/usr/bin/sleep"`) {
						t.Errorf("message %q; want the escaped sleep reported", resp.Message)
					}
					rec := resultRecord(t, d.AuditLog, id)
					if rec.SurvivorsCount < 1 || rec.SurvivorsCount != len(rec.Survivors) ||
						!slices.ContainsFunc(rec.Survivors, func(s audit.Survivor) bool { return s.Exe == "/usr/bin/sleep" && s.PID > 0 }) {
						t.Errorf("audit result: survivors %+v (count %d); want the sleep", rec.Survivors, rec.SurvivorsCount)
					}
				})
				t.Run(kind+"/timeout", func(t *testing.T) {
					argv, marker := escapingPipeline(kind, true)
					resp := d.Run(&proto.Request{Pipeline: [][]string{argv}, Privileged: true})
					checkNothingSurvived(t, marker)
					if resp.Status != proto.StatusTimeout {
						t.Errorf("status %q (%s); want timeout", resp.Status, resp.Message)
					}
				})
			}
			if logs := d.Logs.String(); !strings.Contains(logs, "each request runs in a cgroup of its own") {
				t.Errorf("daemon log does not say it uses cgroups:\n%s", logs)
			}
		})
	}
}

// TestCgroupRequiredRefusesToStart: with cgroup = "required" and no cgroup
// v2 hierarchy visible, the daemon does not start and says why.
func TestCgroupRequiredRefusesToStart(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	daemontest.RequireCgroups(t)
	// A private mount namespace in which no cgroup2 file system is mounted:
	// unshare -m, then unmount every cgroup2 mount inside it only.
	if _, err := os.Stat("/usr/bin/unshare"); err != nil {
		t.Skip("unshare not installed")
	}
	daemonBin, _ := daemontest.Binaries(t)
	d := daemontest.Configure(t, daemontest.Config{Cgroup: "required"})
	script := `for m in $(awk '$9 == "cgroup2" {print $5}' /proc/self/mountinfo | sort -r); do umount -l "$m" || exit 9; done; exec "$0" --config "$1"`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "unshare", "-m", "--propagation", "private", "sh", "-c", script, daemonBin, d.ConfigPath).CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("the daemon started without cgroups (err %v):\n%s", err, out)
	}
	if !contains(string(out), `cgroup = "required"`, "no cgroup v2 hierarchy", `cgroup = "best-effort"`) {
		t.Errorf("daemon output %q; want it to say why it refused to start", out)
	}

	// best-effort starts there, and warns what it gives up.
	d = daemontest.Configure(t, daemontest.Config{Cgroup: "best-effort"})
	cmd := exec.CommandContext(ctx, "unshare", "-m", "--propagation", "private", "sh", "-c", script, daemonBin, d.ConfigPath)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(pr)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if strings.Contains(sc.Text(), "no per-request cgroups") {
			return
		}
		if strings.Contains(sc.Text(), "listening") {
			break
		}
	}
	t.Errorf("with cgroup = \"best-effort\" and no cgroup v2, the daemon did not warn before listening:\n%s", strings.Join(seen, "\n"))
}
