package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// centralJournal writes a journal directory as systemd-journal-remote
// fills it on a central host from two hosts, alpha and beta (beta's host
// name and an agent's session hold terminal escapes), and returns it.
func centralJournal(t *testing.T) string {
	t.Helper()
	testenv.NeedsJournal(t)
	dir := t.TempDir()
	us := auditT0.UnixMicro()
	entry := func(sec int, host, typ, id string, kv ...string) map[string]string {
		m := map[string]string{
			"__REALTIME_TIMESTAMP": strconv.FormatInt(us+int64(sec)*1_000_000, 10),
			"_HOSTNAME":            host, "_MACHINE_ID": strings.Repeat(host[:1], 32),
			"SYSLOG_IDENTIFIER": "agent-sudod", "MESSAGE": "audit: request " + id, "_UID": "0",
			"AGENT_SUDO_AUDIT_TYPE": typ, "AGENT_SUDO_ID": id, "AGENT_SUDO_AUDIT_LOG": "/var/log/agent-sudo/audit.jsonl",
			"AGENT_SUDO_SESSION": "s", "AGENT_SUDO_HOST": "agent-box", "AGENT_SUDO_PEER_UID": "1000", "AGENT_SUDO_PEER_PID": "77",
			"AGENT_SUDO_RECORD_SEQ": strconv.Itoa(sec), "AGENT_SUDO_RECORD_HASH": strings.Repeat(strconv.Itoa(sec%10), 64),
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	ok := func(sec int, host, id, cmd string) []map[string]string {
		p := `[["` + cmd + `","one"]]`
		ref := strings.Repeat("ab", 32)
		return []map[string]string{
			entry(sec, host, "decision", id, "AGENT_SUDO_VERDICT", "allowed", "AGENT_SUDO_DECIDED_BY", "allow "+cmd,
				"AGENT_SUDO_PIPELINE", p, "AGENT_SUDO_REF", ref),
			entry(sec+1, host, "result", id, "AGENT_SUDO_STATUS", "ok", "AGENT_SUDO_EXIT_CODES", "0",
				"AGENT_SUDO_DECIDED_BY", "allow "+cmd, "AGENT_SUDO_PIPELINE", p, "AGENT_SUDO_REF", ref, "AGENT_SUDO_DURATION_NS", "1500000000"),
		}
	}
	alpha := append(ok(10, "alpha", "r-a1", "echo"),
		entry(40, "alpha", "decision", "r-same", "AGENT_SUDO_VERDICT", "denied", "AGENT_SUDO_DECIDED_BY", "no rm",
			"AGENT_SUDO_PIPELINE", `[["rm","x"]]`, "AGENT_SUDO_REF", strings.Repeat("cd", 32)),
		entry(50, "alpha", "opened", ""))
	evil := "beta\x1b[2J"
	beta := append(ok(20, evil, "r-same", "uname"),
		entry(30, evil, "request", "r-b2", "AGENT_SUDO_STATUS", "error", "AGENT_SUDO_REASON", "replay\x1b]0;x\x07",
			"AGENT_SUDO_SESSION", "s\x1b[31mred", "AGENT_SUDO_PEER_UID", "1001", "AGENT_SUDO_PIPELINE", `[["id"]]`))
	testenv.WriteJournal(t, dir, "remote-alpha.journal", alpha)
	testenv.WriteJournal(t, dir, "remote-beta.journal", beta)
	return dir
}

// TestAuditJournalDir: --journal-dir lists the requests of every host that
// sent entries to a central journal, by time, with the DAEMON column the
// host that sent each (its _HOSTNAME), not the agent's host claim; two
// hosts' requests with one id stay two rows; the filters select by
// session, daemon host and uid; what a host or an agent wrote is escaped.
func TestAuditJournalDir(t *testing.T) {
	dir := centralJournal(t)
	ctx := context.Background()
	res := runAuditCLI(ctx, "--journal-dir", dir)
	want := `TIME         DAEMON       ID      SESSION    STATUS  DECIDED BY  EXIT  COMMAND
11-20 09:00  alpha        r-a1    s          ok      allow echo  0     echo one
11-20 09:00  beta\x1b[2J  r-same  s          ok      allow u...  0     uname one
11-20 09:00  beta\x1b[2J  r-b2    s\x1b[...  error   -           -     id
11-20 09:00  alpha        r-same  s          denied  no rm       -     rm x
`
	if res.code != 0 || res.stdout != want || res.stderr != "" {
		t.Errorf("audit --journal-dir: exit %d\n%s\nwant\n%s\nstderr: %s", res.code, res.stdout, want, res.stderr)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--daemon-host", "beta*"}, []string{"r-same", "r-b2"}},
		{[]string{"--daemon-host", "alpha", "--status", "denied"}, []string{"r-same"}},
		{[]string{"--uid", "1001"}, []string{"r-b2"}},
		{[]string{"--host", "beta*"}, nil}, // the agents' claim is agent-box
		{[]string{"--session", "s"}, []string{"r-a1", "r-same", "r-same"}},
	} {
		res := runAuditCLI(ctx, append([]string{"--journal-dir", dir, "--json"}, tc.args...)...)
		if got := jsonIDs(t, res.stdout); res.code != 0 || strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("audit --journal-dir %q: exit %d, ids %q, want %q; stderr %s", tc.args, res.code, got, tc.want, res.stderr)
		}
	}
	res = runAuditCLI(ctx, "--journal-dir", dir, "--json", "--daemon-host", "alpha", "--status", "ok")
	var row map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &row); err != nil {
		t.Fatalf("--json: %v: %s", err, res.stdout)
	}
	if row["daemon_host"] != "alpha" || row["host"] != "agent-box" || row["location"] != "/var/log/agent-sudo/audit.jsonl" || row["ref"] != strings.Repeat("ab", 32) {
		t.Errorf("--json row: %v", row)
	}
}

// TestAuditJournalOnlyRootsEntries: any local user can send the journal an
// entry with SYSLOG_IDENTIFIER=agent-sudod and AGENT_SUDO_* fields of its
// choosing (logger --journald, systemd-cat, sd_journal_send), and
// systemd-journal-upload carries users' entries to the central journal with
// the daemon's. Only the entries of root (_UID=0, which journald sets from
// the sender's credentials, not from what it sent) are the daemon's: an
// agent's forged decision on a request that ran, its forged result, and a
// request made up whole are neither listed nor shown.
func TestAuditJournalOnlyRootsEntries(t *testing.T) {
	testenv.NeedsJournal(t)
	dir := t.TempDir()
	us := auditT0.UnixMicro()
	p, ref := `[["echo","one"]]`, strings.Repeat("ab", 32)
	entry := func(sec int, uid, typ, id string, kv ...string) map[string]string {
		m := map[string]string{
			"__REALTIME_TIMESTAMP": strconv.FormatInt(us+int64(sec)*1_000_000, 10),
			"_HOSTNAME":            "alpha", "_MACHINE_ID": strings.Repeat("a", 32), "_UID": uid,
			"SYSLOG_IDENTIFIER": "agent-sudod", "MESSAGE": "audit: request " + id,
			"AGENT_SUDO_AUDIT_TYPE": typ, "AGENT_SUDO_ID": id, "AGENT_SUDO_AUDIT_LOG": "/var/log/agent-sudo/audit.jsonl",
			"AGENT_SUDO_SESSION": "s", "AGENT_SUDO_HOST": "alpha", "AGENT_SUDO_PEER_UID": "1001", "AGENT_SUDO_PEER_PID": "77",
			"AGENT_SUDO_RECORD_SEQ": strconv.Itoa(sec), "AGENT_SUDO_RECORD_HASH": strings.Repeat(strconv.Itoa(sec%10), 64),
			"AGENT_SUDO_PIPELINE": p, "AGENT_SUDO_REF": ref,
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	testenv.WriteJournal(t, dir, "remote-alpha.journal", []map[string]string{
		entry(10, "0", "decision", "r-ran", "AGENT_SUDO_VERDICT", "allowed", "AGENT_SUDO_DECIDED_BY", "allow echo"),
		entry(11, "0", "result", "r-ran", "AGENT_SUDO_STATUS", "ok", "AGENT_SUDO_EXIT_CODES", "0",
			"AGENT_SUDO_DECIDED_BY", "allow echo", "AGENT_SUDO_DURATION_NS", "1500000000"),
		// The agent's (uid 1001): its own story of r-ran, and a request
		// that never was.
		entry(12, "1001", "decision", "r-ran", "AGENT_SUDO_VERDICT", "denied", "AGENT_SUDO_DECIDED_BY", "forged"),
		entry(13, "1001", "result", "r-ran", "AGENT_SUDO_STATUS", "denied", "AGENT_SUDO_DECIDED_BY", "forged"),
		entry(14, "1001", "decision", "r-made-up", "AGENT_SUDO_VERDICT", "denied", "AGENT_SUDO_DECIDED_BY", "forged",
			"AGENT_SUDO_REF", strings.Repeat("cd", 32)),
	})
	ctx := context.Background()
	res := runAuditCLI(ctx, "--journal-dir", dir)
	want := `TIME         DAEMON  ID     SESSION  STATUS  DECIDED BY  EXIT  COMMAND
11-20 09:00  alpha   r-ran  s        ok      allow echo  0     echo one
`
	if res.code != 0 || res.stdout != want {
		t.Errorf("audit --journal-dir: exit %d\n%s\nwant\n%s\nstderr: %s", res.code, res.stdout, want, res.stderr)
	}
	res = runAuditCLI(ctx, "show", "--journal-dir", dir, "r-ran")
	if res.code != 0 || strings.Contains(res.stdout, "forged") || strings.Count(res.stdout, "(journal entry from ") != 2 {
		t.Errorf("show r-ran: exit %d, want root's two entries and no forged one:\n%s", res.code, res.stdout)
	}
	if res := runAuditCLI(ctx, "show", "--journal-dir", dir, "r-made-up"); res.code != exitNotFound {
		t.Errorf("show r-made-up: exit %d, want %d (an agent's entry is no request):\n%s", res.code, exitNotFound, res.stdout)
	}
}

// TestAuditShowJournal: show --journal-dir prints every entry of a
// request from the hosts that sent them, each naming its host, escaped;
// an id two hosts used shows both hosts' entries.
func TestAuditShowJournal(t *testing.T) {
	dir := centralJournal(t)
	ctx := context.Background()
	res := runAuditCLI(ctx, "show", "--journal-dir", dir, "r-b")
	for _, want := range []string{
		"request 2026-11-20T09:00:30Z  (journal entry from beta\\x1b[2J: /var/log/agent-sudo/audit.jsonl, seq 30)",
		showLine("session", `s\x1b[31mred`),
		showLine("daemon host", `beta\x1b[2J`),
		showLine("reason", `replay\x1b]0;x\x07`),
		showLine("command", "id"),
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("show r-b lacks %q:\n%s", want, res.stdout)
		}
	}
	if res.code != 0 || strings.ContainsAny(res.stdout, "\x1b\x07") {
		t.Errorf("show r-b: exit %d, raw escapes in %q", res.code, res.stdout)
	}
	res = runAuditCLI(ctx, "show", "--journal-dir", dir, "r-same")
	if res.code != 0 || strings.Count(res.stdout, "(journal entry from ") != 3 ||
		!strings.Contains(res.stdout, "from alpha:") || !strings.Contains(res.stdout, showLine("by", "no rm")) {
		t.Errorf("show r-same: exit %d:\n%s", res.code, res.stdout)
	}
	res = runAuditCLI(ctx, "show", "--journal-dir", dir, "r-")
	if res.code != exitNotFound || !strings.Contains(res.stderr, "r- is the start of 3 request ids") {
		t.Errorf("show r-: exit %d, stderr %s", res.code, res.stderr)
	}
	res = runAuditCLI(ctx, "show", "--journal-dir", dir, "--json", "r-a1")
	if res.code != 0 || strings.Count(res.stdout, "\n") != 2 || !strings.Contains(res.stdout, `"_HOSTNAME":"alpha"`) {
		t.Errorf("show --json r-a1: exit %d:\n%s", res.code, res.stdout)
	}
}

// TestAuditJournalRefusals: a journal with --log, --config, --follow or
// show --daemon is a usage error; both --journal-dir and --journal-file
// too.
func TestAuditJournalRefusals(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{
		{"--journal-dir", "d", "--log", "x"},
		{"--journal-dir", "d", "--config", "x"},
		{"--journal-dir", "d", "--follow"},
		{"--journal-dir", "d", "--journal-file", "f"},
		{"--uid", "alice", "--journal-dir", "d"},
		{"show", "--journal-dir", "d", "--daemon"},
	} {
		if res := runAuditCLI(ctx, args...); res.code != exitUsage {
			t.Errorf("audit %q: exit %d, want %d: %s", args, res.code, exitUsage, res.stderr)
		}
	}
}

// TestAuditJournalNoJournalctl: without journalctl the listing says so and
// exits 66, as for a log that cannot be read. (It changes PATH, so it does
// not run in parallel.)
func TestAuditJournalNoJournalctl(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	res := runAuditCLI(context.Background(), "--journal-dir", t.TempDir())
	if res.code != exitNoInput || !strings.Contains(res.stderr, "journalctl not found") {
		t.Errorf("exit %d, stderr %q; want %d saying journalctl is not found", res.code, res.stderr, exitNoInput)
	}
}

// showLine is a line of audit show: a field's name and its value.
func showLine(name, value string) string { return fmt.Sprintf("  %-15s %s\n", name+":", value) }
