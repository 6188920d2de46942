package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// TestRulesTestPidSeesKernelGroups (issue 21): after gpasswd -d removes a
// user from a group, the user's running processes keep it, and the daemon
// decides by them. rules test --user reads the user database and says so;
// --pid decides as the running process, with the kernel's groups, and says
// where they came from.
func TestRulesTestPidSeesKernelGroups(t *testing.T) {
	daemontest.RequireRoot(t)
	group, gid := daemontest.AddGroup(t, "rtp")
	u := daemontest.AddUser(t, "rtpu", group)
	cfg := writeRulesConfig(t, fmt.Sprintf("[[rule]]\nname = \"group may id\"\naction = \"allow\"\nmatch = [\"id\"]\ngroup = %q\n", group))

	// A process of u's started while it is in the group.
	cmd := u.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if out, err := exec.Command("gpasswd", "-d", u.Name, group).CombinedOutput(); err != nil {
		t.Fatalf("gpasswd -d: %v: %s", err, out)
	}
	pid := strconv.Itoa(cmd.Process.Pid)

	r := runCLI(context.Background(), nil, "rules", "test", "--config", cfg, "--user", u.Name, "--", "id")
	if r.code != exitRulesAsk || !strings.Contains(r.stdout, "groups from the user database (/etc/group), not from a process") ||
		!strings.Contains(r.stdout, "use --pid") {
		t.Errorf("--user after gpasswd -d: exit %d, want %d (the database no longer has the group), saying where the groups came from:\n%s%s",
			r.code, exitRulesAsk, r.stdout, r.stderr)
	}
	r = runCLI(context.Background(), nil, "rules", "test", "--config", cfg, "--pid", pid, "--", "id")
	wantPeer := fmt.Sprintf("peer: uid %d (%s), groups %d,", u.UID, u.Name, u.GID)
	if r.code != 0 || !strings.Contains(r.stdout, `rule "group may id": allow`) || !strings.Contains(r.stdout, wantPeer) ||
		!strings.Contains(r.stdout, strconv.FormatUint(uint64(gid), 10)) ||
		!strings.Contains(r.stdout, "uid and groups from the kernel: /proc/"+pid+"/status") {
		t.Errorf("--pid %s (the process still in the group): exit %d, want 0 by the group rule, with %q and the kernel as the source:\n%s%s",
			pid, r.code, wantPeer, r.stdout, r.stderr)
	}
}

// TestRulesTestPidErrors: --pid refuses a bad or absent process, and
// --user with it, saying what was wrong.
func TestRulesTestPidErrors(t *testing.T) {
	cfg := writeRulesConfig(t, rulesTestConfig)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"not a pid", []string{"--pid", "0"}, "rules test: --pid: 0 is not a process id"},
		{"no such process", []string{"--pid", "2147483646"}, "rules test: --pid: process 2147483646: "},
		{"not a number", []string{"--pid", "x"}, `invalid value "x" for flag -pid`},
		{"with --user", []string{"--pid", strconv.Itoa(os.Getpid()), "--user", "root"}, "--user and --pid cannot both be given"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(context.Background(), nil, append(append([]string{"rules", "test", "--config", cfg}, tt.args...), "--", "id")...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d containing %q", r.code, r.stderr, exitUsage, tt.want)
			}
		})
	}
	// This process by --pid is what the daemon would see of it.
	r := runCLI(context.Background(), nil, "rules", "test", "--config", cfg, "--pid", strconv.Itoa(os.Getpid()), "--", "id")
	if want := fmt.Sprintf("peer: uid %d", os.Geteuid()); !strings.Contains(r.stdout, want) {
		t.Errorf("--pid of this process: stdout lacks %q:\n%s%s", want, r.stdout, r.stderr)
	}
}

// TestParseStatusCreds: the effective ids and the groups of a
// /proc/PID/status; a missing, repeated or malformed field is refused,
// naming it and its line.
func TestParseStatusCreds(t *testing.T) {
	const good = "Name:\tsleep\nUid:\t1000\t1001\t1000\t1001\nGid:\t100\t101\t100\t101\nGroups:\t27 1000 \n"
	p, err := parseStatusCreds(good)
	if err != nil || p.UID != 1001 || fmt.Sprint(p.GIDs) != "[101 27 1000]" {
		t.Errorf("parseStatusCreds(good) = %+v, %v; want uid 1001 (effective), groups [101 27 1000]", p, err)
	}
	if p, err := parseStatusCreds("Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\n"); err != nil || fmt.Sprint(p.GIDs) != "[0]" {
		t.Errorf("no supplementary groups: %+v, %v", p, err)
	}
	for _, tt := range []struct{ name, status, want string }{
		{"no Uid", "Gid:\t1\t1\t1\t1\nGroups:\t\n", "no Uid line"},
		{"no Groups", "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\n", "no Groups line"},
		{"short Uid", "Uid:\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t\n", "line 1: Uid: 2 fields, want 4"},
		{"bad effective gid", "Uid:\t1\t1\t1\t1\nGid:\t1\t-1\t1\t1\nGroups:\t\n", `line 2: Gid: field 2 (effective): "-1" is not a numeric id`},
		{"bad group", "Uid:\t1\t1\t1\t1\nGid:\t1\t1\t1\t1\nGroups:\t27 x\n", `line 3: Groups: field 2: "x" is not a numeric id`},
		{"Uid twice", "Uid:\t1\t1\t1\t1\nUid:\t0\t0\t0\t0\nGid:\t1\t1\t1\t1\nGroups:\t\n", "line 2: Uid given twice"},
	} {
		if _, err := parseStatusCreds(tt.status); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v; want %q", tt.name, err, tt.want)
		}
	}
}

// FuzzParseStatusCreds: any text is parsed without a panic, and what is
// accepted has a Uid, a Gid and a Groups line, the gid first among the
// groups.
func FuzzParseStatusCreds(f *testing.F) {
	f.Add("Name:\tsleep\nUid:\t1000\t1001\t1000\t1001\nGid:\t100\t101\t100\t101\nGroups:\t27 1000 \n")
	f.Add("Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t\n")
	f.Add("Uid:\t1\nGid:\nGroups:x")
	f.Fuzz(func(t *testing.T, status string) {
		p, err := parseStatusCreds(status)
		if err != nil {
			return
		}
		if len(p.GIDs) == 0 || !strings.Contains(status, "Uid:") || !strings.Contains(status, "Gid:") || !strings.Contains(status, "Groups:") {
			t.Errorf("accepted %q as %+v", status, p)
		}
	})
}
