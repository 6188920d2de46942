package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
	"github.com/agent-sudo/agent-sudo/proto"
)

// auditT0 is the fixture's first request time; the tests' clock reads
// auditNow.
var (
	auditT0  = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	auditNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
)

func testAuditDeps() auditDeps {
	return auditDeps{now: func() time.Time { return auditNow }, loc: time.UTC, poll: 5 * time.Millisecond}
}

// auditFixture is one request of the fixture log.
type auditFixture struct {
	id, session, host string
	at                time.Time
	pipeline          [][]string
	// outcome: "ok", "fail" (exit 2), "denied", "timeout", "refused",
	// "pending", "withdrawn", "stopped" (by a console while it ran).
	outcome string
}

func auditFixtures() []auditFixture {
	h := func(n int) time.Time { return auditT0.Add(time.Duration(n) * time.Hour) }
	return []auditFixture{
		{"r-ok", "alpha-1", "build-1", h(0), [][]string{{"apt-get", "install", "-y", "nginx"}}, "ok"},
		{"r-denied", "alpha-2", "build-2", h(1), [][]string{{"rm", "-rf", "/var/lib/apt"}}, "denied"},
		{"r-timeout", "beta-1", "build-1", h(2), [][]string{{"systemctl", "restart", "nginx"}}, "timeout"},
		{"r-refused", "beta-2", "build-2", h(3), [][]string{{"nosuchprog"}}, "refused"},
		{"r-fail", "alpha-1", "ci.example", h(24), [][]string{{"dpkg", "-l"}, {"grep", "nginx"}}, "fail"},
		{"r-pending", "gamma", "build-1", h(25), [][]string{{"reboot"}}, "pending"},
		{"r-withdrawn", "gamma", "build-1", h(26), [][]string{{"id"}}, "withdrawn"},
	}
}

// writeAuditLog writes the fixtures (and extra) to a new log and returns
// its path.
func writeAuditLog(t *testing.T, extra ...auditFixture) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "log", "audit.jsonl")
	now := auditT0
	l, err := audit.Open(path, audit.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, f := range append(auditFixtures(), extra...) {
		now = f.at
		appendFixture(t, l, f)
	}
	return path
}

func appendFixture(t *testing.T, l *audit.Log, f auditFixture) {
	t.Helper()
	ctx := context.Background()
	peer := peercred.Creds{UID: 1000, PID: 77, Exe: "/usr/bin/agent"}
	req := &proto.Request{ID: f.id, Session: f.session, Host: f.host, Time: f.at, Pipeline: f.pipeline,
		Env: map[string]string{"TOKEN": "s3cret"}, Reason: "because", Privileged: true}
	if f.outcome == "refused" {
		if err := l.Refused(ctx, audit.Refusal{ID: f.id, Request: req, Peer: &peer, Reason: `pipeline[0]: "nosuchprog" not found in secure_path`}); err != nil {
			t.Fatal(err)
		}
		return
	}
	tr, err := l.Received(ctx, req, peer)
	if err != nil {
		t.Fatal(err)
	}
	decide := func(v approval.Verdict, by, msg string) {
		if err := tr.Decided(ctx, approval.Decision{Verdict: v, By: by, Message: msg}); err != nil {
			t.Fatal(err)
		}
	}
	switch f.outcome {
	case "pending":
		return
	case "denied":
		decide(approval.Deny, "console uid=0 tty=/dev/pts/3 pid=99", "not the apt lists")
		return
	case "timeout":
		decide(approval.Timeout, "approval_timeout", "nobody approved")
		return
	case "withdrawn":
		decide(approval.Withdrawn, "client", "")
		return
	}
	decide(approval.Allow, "apt and dpkg", "")
	stages := make([]runner.Command, len(f.pipeline))
	resp := &proto.Response{ID: f.id, Status: proto.StatusOK, Stdout: []byte("out\n")}
	for i, argv := range f.pipeline {
		stages[i] = runner.Command{Path: "/usr/bin/" + argv[0], Args: argv}
		code := 0
		if f.outcome == "fail" && i == len(f.pipeline)-1 {
			code = 1
		}
		resp.Stages = append(resp.Stages, proto.Stage{ExitCode: code})
	}
	if err := tr.Started(ctx, runner.Spec{Stages: stages, Mode: runner.ModeDirect, Target: runner.Target{Name: "root"}}); err != nil {
		t.Fatal(err)
	}
	res := &runner.Result{Started: f.at, Ended: f.at.Add(1500 * time.Millisecond)}
	if f.outcome == "stopped" {
		resp.Status, resp.Message = proto.StatusTimeout, "stopped by an approver"
		for i := range resp.Stages {
			resp.Stages[i].ExitCode = 143
		}
		tr.Stopped(stopperConsole)
	}
	if err := tr.Finished(ctx, resp, res); err != nil {
		t.Fatal(err)
	}
}

// runAuditCLI runs audit with the test dependencies.
func runAuditCLI(ctx context.Context, args ...string) result {
	var stdout, stderr bytes.Buffer
	inv := &invocation{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
	code := runAudit(ctx, inv, args, testAuditDeps())
	return result{code, stdout.String(), stderr.String()}
}

// jsonIDs returns the ids of --json rows.
func jsonIDs(t *testing.T, out string) []string {
	t.Helper()
	var ids []string
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var row struct{ ID string }
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("not a JSON line: %q: %v", line, err)
		}
		ids = append(ids, row.ID)
	}
	return ids
}

func TestAuditListFilters(t *testing.T) {
	path := writeAuditLog(t)
	all := "r-ok r-denied r-timeout r-refused r-fail r-pending r-withdrawn"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"everything", nil, all},
		{"session glob", []string{"--session", "alpha-*"}, "r-ok r-denied r-fail"},
		{"session exact", []string{"--session", "alpha-1"}, "r-ok r-fail"},
		{"session glob inside", []string{"--session", "*a-*"}, "r-ok r-denied r-timeout r-refused r-fail"},
		{"session no match", []string{"--session", "alpha"}, ""},
		{"host glob", []string{"--host", "build-*"}, "r-ok r-denied r-timeout r-refused r-pending r-withdrawn"},
		{"host suffix", []string{"--host", "*.example"}, "r-fail"},
		{"since duration", []string{"--since", "12h"}, "r-fail r-pending r-withdrawn"},
		{"since days (inclusive)", []string{"--since", "1d2h"}, "r-denied r-timeout r-refused r-fail r-pending r-withdrawn"},
		{"since date", []string{"--since", "2026-11-21"}, "r-fail r-pending r-withdrawn"},
		{"until date", []string{"--until", "2026-11-21"}, "r-ok r-denied r-timeout r-refused"},
		{"since and until RFC 3339 (until exclusive)", []string{"--since", "2026-11-20T10:00:00Z", "--until", "2026-11-20T12:00:00+01:00"}, "r-denied"},
		{"until RFC 3339", []string{"--until", "2026-11-20T11:00:00.000000001Z"}, "r-ok r-denied r-timeout"},
		{"status ok", []string{"--status", "ok"}, "r-ok r-fail"},
		{"status denied", []string{"--status", "denied"}, "r-denied"},
		{"status timeout", []string{"--status", "timeout"}, "r-timeout"},
		{"status error (refused)", []string{"--status", "error"}, "r-refused"},
		{"status list", []string{"--status", "pending,withdrawn"}, "r-pending r-withdrawn"},
		{"combined", []string{"--session", "alpha-*", "--host", "build-*", "--status", "ok,denied"}, "r-ok r-denied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runAuditCLI(context.Background(), append([]string{"--log", path, "--json"}, tt.args...)...)
			if got.code != 0 || got.stderr != "" {
				t.Fatalf("exit %d, stderr %q", got.code, got.stderr)
			}
			if ids := strings.Join(jsonIDs(t, got.stdout), " "); ids != tt.want {
				t.Errorf("ids %q, want %q", ids, tt.want)
			}
		})
	}
}

func TestAuditJSONFields(t *testing.T) {
	path := writeAuditLog(t)
	got := runAuditCLI(context.Background(), "--log", path, "--json", "--status", "ok", "--host", "ci.*")
	if got.code != 0 {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	var row map[string]any
	if err := json.Unmarshal([]byte(got.stdout), &row); err != nil {
		t.Fatalf("%v: %q", err, got.stdout)
	}
	want := map[string]any{
		"id": "r-fail", "session": "alpha-1", "host": "ci.example", "status": "ok",
		"time": "2026-11-21T09:00:00Z", "decided_by": "apt and dpkg", "verdict": "allowed",
		"exit_codes": []any{0.0, 1.0}, "duration_ns": 1.5e9,
		"pipeline": []any{[]any{"dpkg", "-l"}, []any{"grep", "nginx"}}, "reason": "because", "privileged": true,
	}
	for k, v := range want {
		if g, ok := row[k]; !ok || !jsonEqual(g, v) {
			t.Errorf("%s = %#v, want %#v", k, row[k], v)
		}
	}
	if loc, _ := row["location"].(string); loc != path+":10" {
		t.Errorf("location = %q", loc)
	}
	// Requests without an outcome still have every key.
	got = runAuditCLI(context.Background(), "--log", path, "--json", "--status", "pending")
	for _, k := range []string{`"id":"r-pending"`, `"status":"pending"`, `"decided_by":""`, `"exit_codes":[]`, `"pipeline":[["reboot"]]`} {
		if !strings.Contains(got.stdout, k) {
			t.Errorf("pending row %s lacks %s", got.stdout, k)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestAuditTable: the table fits 80 columns, cutting long cells with an
// ellipsis; --wide prints every column in full.
func TestAuditTable(t *testing.T) {
	path := writeAuditLog(t)
	got := runAuditCLI(context.Background(), "--log", path, "--session", "alpha-*")
	want := `TIME         ID        SESSION  STATUS  DECIDED BY  EXIT  COMMAND
11-20 09:00  r-ok      alpha-1  ok      apt and...  0     apt-get install -y ...
11-20 10:00  r-denied  alpha-2  denied  console...  -     rm -rf /var/lib/apt
11-21 09:00  r-fail    alpha-1  ok      apt and...  0,1   dpkg -l | grep nginx
`
	if got.code != 0 || got.stdout != want || got.stderr != "" {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", got.code, got.stderr, got.stdout, want)
	}
	got = runAuditCLI(context.Background(), "--log", path, "--session", "alpha-*", "--wide")
	want = `TIME                 ID        UID   SESSION  HOST        STATUS  DECIDED BY                           EXIT  DURATION  COMMAND
2026-11-20 09:00:00  r-ok      1000  alpha-1  build-1     ok      apt and dpkg                         0     1.5s      apt-get install -y nginx
2026-11-20 10:00:00  r-denied  1000  alpha-2  build-2     denied  console uid=0 tty=/dev/pts/3 pid=99  -     -         rm -rf /var/lib/apt
2026-11-21 09:00:00  r-fail    1000  alpha-1  ci.example  ok      apt and dpkg                         0,1   1.5s      dpkg -l | grep nginx
`
	if got.code != 0 || got.stdout != want || got.stderr != "" {
		t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant:\n%s", got.code, got.stderr, got.stdout, want)
	}
	// Long ids: the shortest prefix of at least 8 characters that tells
	// them apart; a long command is cut to what is left of 80 columns.
	long := []auditFixture{
		{"7d3c2a9e-0b1f-4c55-9a41-5e2f8c7b6d10", "s", "h", auditT0.Add(40 * time.Hour), [][]string{{"echo", strings.Repeat("x", 200)}}, "ok"},
		{"7d3c2a9e-1b1f-4c55-9a41-000000000000", "s", "h", auditT0.Add(41 * time.Hour), [][]string{{"id"}}, "denied"},
		{"0a1b2c3d-0000-4000-8000-000000000000", "s", "h", auditT0.Add(42 * time.Hour), [][]string{{"id"}}, "denied"},
	}
	got = runAuditCLI(context.Background(), "--log", writeAuditLog(t, long...), "--session", "s")
	want = `TIME         ID          SESSION  STATUS  DECIDED BY  EXIT  COMMAND
11-22 01:00  7d3c2a9e-0  s        ok      apt and...  0     echo xxxxxxxxxxxx...
11-22 02:00  7d3c2a9e-1  s        denied  console...  -     id
11-22 03:00  0a1b2c3d-0  s        denied  console...  -     id
`
	if got.code != 0 || got.stdout != want {
		t.Errorf("long ids: exit %d, stderr %q, stdout:\n%s\nwant:\n%s", got.code, got.stderr, got.stdout, want)
	}
	for _, l := range strings.Split(strings.TrimSuffix(got.stdout, "\n"), "\n") {
		if w := termtext.Width(l); w > tableWidth {
			t.Errorf("line %d columns wide: %q", w, l)
		}
	}
	got = runAuditCLI(context.Background(), "--log", path, "--session", "nobody")
	if got.code != 0 || got.stdout != "" || !strings.Contains(got.stderr, "no request in "+path+" matches") {
		t.Errorf("no match: exit %d, stdout %q, stderr %q", got.code, got.stdout, got.stderr)
	}
}

// TestAuditEscaping: everything an agent wrote is escaped in the table,
// in show, and is ASCII in JSON.
func TestAuditEscaping(t *testing.T) {
	hostile := auditFixture{
		id: "r-evil", session: "evil\x1b[2J\rok", host: "h\u202eexe.txt", at: auditT0.Add(30 * time.Hour),
		pipeline: [][]string{{"rm", "-rf", "/\x1b]0;pwned\x07", "\u200bx"}, {"日本語"}}, outcome: "ok",
	}
	path := writeAuditLog(t, hostile)
	raw := regexp.MustCompile("[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
	for _, args := range [][]string{
		{"--log", path},
		{"--log", path, "--wide"},
		{"--log", path, "show", "r-evil"},
		{"--log", path, "--json"},
		{"--log", path, "show", "--json", "r-evil"},
	} {
		got := runAuditCLI(context.Background(), args...)
		if got.code != 0 {
			t.Fatalf("%q: exit %d: %s", args, got.code, got.stderr)
		}
		if m := raw.FindString(got.stdout); m != "" {
			t.Errorf("%q: raw control or format character %q in output:\n%s", args, m, got.stdout)
		}
		if slices.Contains(args, "--json") {
			for _, r := range got.stdout {
				if r > 0x7e {
					t.Fatalf("%q: non-ASCII %q in JSON output", args, r)
				}
			}
		}
	}
	table := runAuditCLI(context.Background(), "--log", path, "--session", "evil*", "--wide").stdout
	for _, want := range []string{`evil\x1b[2J\rok`, `h\u202eexe.txt`, `rm -rf $'/\x1b]0;pwned\x07' $'\u200bx' | $'\u65e5\u672c\u8a9e'`} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %s:\n%s", want, table)
		}
	}
	// Columns stay aligned: COMMAND starts at the same column on every line.
	lines := strings.Split(strings.TrimSuffix(runAuditCLI(context.Background(), "--log", path).stdout, "\n"), "\n")
	col := strings.Index(lines[0], "COMMAND")
	for _, l := range lines[1:] {
		cmdStart := strings.LastIndex(l, "  ") + 2
		if termtext.Width(l[:cmdStart]) != col {
			t.Errorf("line not aligned (COMMAND at %d, want %d): %q", termtext.Width(l[:cmdStart]), col, l)
		}
	}
	var decoded struct{ Session string }
	js := runAuditCLI(context.Background(), "--log", path, "--json", "--host", "h*exe.txt").stdout
	if err := json.Unmarshal([]byte(js), &decoded); err != nil || decoded.Session != hostile.session {
		t.Errorf("JSON does not round-trip the session: %q, %v", decoded.Session, err)
	}
}

func TestAuditShow(t *testing.T) {
	path := writeAuditLog(t)
	got := runAuditCLI(context.Background(), "--log", path, "show", "r-ok")
	for _, want := range []string{
		"request 2026-11-20T09:00:00Z  (" + path + ":1, seq 1)\n",
		"  command:        apt-get install -y nginx\n",
		"  env (sha256):   TOKEN=sha256:",
		"  peer:           uid 1000, pid 77, /usr/bin/agent\n",
		"decision 2026-11-20T09:00:00Z  (" + path + ":2, seq 2)\n",
		"  verdict:        allowed\n  by:             apt and dpkg\n",
		"exec 2026-11-20T09:00:00Z",
		"  stage 1:        /usr/bin/apt-get\n    argv:         apt-get install -y nginx\n",
		"  run as:         root (uid 0, gid 0)\n",
		"result 2026-11-20T09:00:00Z",
		"  status:         ok\n  exit codes:     0\n  duration:       1.5s\n",
		"  stdout:         4 bytes, sha256 ",
	} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, got.stdout)
		}
	}
	if strings.Contains(got.stdout, "s3cret") {
		t.Error("show prints an environment value that was recorded hashed")
	}
	got = runAuditCLI(context.Background(), "--log", path, "show", "--json", "r-denied")
	if got.code != 0 || strings.Count(got.stdout, "\n") != 2 || !strings.Contains(got.stdout, `"verdict":"denied"`) {
		t.Errorf("show --json: exit %d:\n%s", got.code, got.stdout)
	}
	got = runAuditCLI(context.Background(), "--log", path, "show", "nope\x1b")
	if got.code != exitNotFound || !strings.Contains(got.stderr, `no request nope\x1b in `) {
		t.Errorf("show of a missing id: exit %d, stderr %q", got.code, got.stderr)
	}
}

// TestAuditShowPrefix: show takes the start of an id when it names one
// request; an id that is whole wins over the longer ids it starts; an
// ambiguous start is refused, saying how many ids it starts and naming a
// few of them.
func TestAuditShowPrefix(t *testing.T) {
	path := writeAuditLog(t, auditFixture{"r-ok2", "alpha-9", "build-9", auditT0.Add(30 * time.Hour), [][]string{{"true"}}, "ok"})
	ids := func(out string) []string {
		var got []string
		for _, l := range strings.Split(out, "\n") {
			if id, ok := strings.CutPrefix(l, "  id:             "); ok && !slices.Contains(got, id) {
				got = append(got, id)
			}
		}
		return got
	}
	for _, tt := range []struct {
		arg  string
		code int
		ids  []string // the requests whose records are shown
		err  string
	}{
		{"r-withd", 0, []string{"r-withdrawn"}, ""},
		{"r-withdrawn", 0, []string{"r-withdrawn"}, ""},
		{"r-ok", 0, []string{"r-ok"}, ""},
		{"r-ok2", 0, []string{"r-ok2"}, ""},
		{"r-o", exitNotFound, nil, "agent-sudo: audit show: r-o is the start of 2 request ids (r-ok, r-ok2); give more of the id\n"},
		{"r-", exitNotFound, nil, "agent-sudo: audit show: r- is the start of 8 request ids (r-ok, r-denied, r-timeout, r-refused, r-fail, ...); give more of the id\n"},
		{"x-", exitNotFound, nil, "agent-sudo: audit show: no request x- in " + path + "\n"},
		{"", exitUsage, nil, "agent-sudo: audit show: the request id is empty; give the id, or its start, as the listing shows it\n"},
	} {
		got := runAuditCLI(context.Background(), "--log", path, "show", tt.arg)
		if got.code != tt.code || !slices.Equal(ids(got.stdout), tt.ids) || got.stderr != tt.err {
			t.Errorf("show %q: exit %d, requests %q, stderr %q; want exit %d, requests %q, stderr %q",
				tt.arg, got.code, ids(got.stdout), got.stderr, tt.code, tt.ids, tt.err)
		}
	}
}

// stopperConsole is the console that stops the "stopped" fixture, with an
// escape sequence in it that must not reach the terminal.
const stopperConsole = "console uid=0 tty=/dev/pts/3\x1b[2J pid=99"

// TestAuditShowStopped: the result of a command a console stopped records
// which console, "audit show" prints it escaped, and the log verifies.
func TestAuditShowStopped(t *testing.T) {
	path := writeAuditLog(t, auditFixture{"r-stopped", "delta", "build-1", auditT0.Add(30 * time.Hour), [][]string{{"sleep", "600"}}, "stopped"})
	got := runAuditCLI(context.Background(), "--log", path, "show", "r-stopped")
	want := "  status:         timeout\n  stopped by:     console uid=0 tty=/dev/pts/3\\x1b[2J pid=99\n"
	if got.code != 0 || !strings.Contains(got.stdout, want) {
		t.Errorf("show: exit %d, lacks %q:\n%s", got.code, want, got.stdout)
	}
	if strings.Contains(got.stdout, "\x1b") {
		t.Error("show printed the console's escape sequence raw")
	}
	got = runAuditCLI(context.Background(), "--log", path, "show", "--json", "r-stopped")
	if !strings.Contains(got.stdout, `"stopped_by":"console uid=0 tty=/dev/pts/3\u001b[2J pid=99"`) {
		t.Errorf("show --json lacks stopped_by:\n%s", got.stdout)
	}
	if got := runAuditCLI(context.Background(), "--log", path, "verify"); got.code != 0 {
		t.Errorf("verify: exit %d\n%s%s", got.code, got.stdout, got.stderr)
	}
}

func TestAuditVerify(t *testing.T) {
	path := writeAuditLog(t)
	got := runAuditCLI(context.Background(), "--log", path, "verify")
	if got.code != 0 || !strings.HasPrefix(got.stdout, "ok: 16 records in 1 file\nlast record: seq 16, hash ") {
		t.Errorf("verify: exit %d, stdout %q, stderr %q", got.code, got.stdout, got.stderr)
	}
	head := regexp.MustCompile(`hash ([0-9a-f]{64})`).FindStringSubmatch(got.stdout)
	if head == nil {
		t.Fatal("no hash printed")
	}
	if got := runAuditCLI(context.Background(), "verify", "--anchor", head[1], path); got.code != 0 {
		t.Errorf("verify FILE --anchor HEAD: exit %d, %s", got.code, got.stderr)
	}

	// Tamper with line 8, the timeout's decision.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.SplitAfter(string(data), "\n")
	ls[7] = strings.Replace(ls[7], "nobody approved", "nobody approvee", 1)
	if err := os.WriteFile(path, []byte(strings.Join(ls, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	got = runAuditCLI(context.Background(), "verify", path)
	if got.code != exitDataErr || got.stdout != "" || !strings.Contains(got.stderr, path+":8: altered") {
		t.Errorf("verify of a tampered log: exit %d, stdout %q, stderr %q", got.code, got.stdout, got.stderr)
	}
	// The tail cut off: only an anchor notices.
	if err := os.WriteFile(path, []byte(strings.Join(ls[:5], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := runAuditCLI(context.Background(), "verify", path); got.code != 0 || !strings.HasPrefix(got.stdout, "ok: 5 records in 1 file\n") {
		t.Errorf("verify of a truncated log: exit %d, %q", got.code, got.stdout)
	}
	got = runAuditCLI(context.Background(), "verify", "--anchor", head[1], path)
	if got.code != exitDataErr || !strings.Contains(got.stderr, "anchor "+head[1]+" is not the hash of any record") {
		t.Errorf("verify --anchor of a truncated log: exit %d, %q", got.code, got.stderr)
	}
	got = runAuditCLI(context.Background(), "verify", filepath.Join(filepath.Dir(path), "missing"))
	if got.code != exitNoInput || !strings.Contains(got.stderr, "cannot read the audit log") {
		t.Errorf("verify of a missing file: exit %d, %q", got.code, got.stderr)
	}
}

func TestAuditCorruptLine(t *testing.T) {
	path := writeAuditLog(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.SplitAfter(string(data), "\n")
	ls[2] = "\x1b[31mgarbage\n"
	if err := os.WriteFile(path, []byte(strings.Join(ls, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	got := runAuditCLI(context.Background(), "--log", path, "--json")
	if got.code != exitDataErr || !strings.Contains(got.stderr, path+`:3: not a JSON record`) || strings.Contains(got.stderr, "\x1b") {
		t.Errorf("exit %d, stderr %q", got.code, got.stderr)
	}
	if n := len(jsonIDs(t, got.stdout)); n != 7 {
		t.Errorf("%d rows printed around the corrupt line, want 7", n)
	}
	got = runAuditCLI(context.Background(), "--log", path, "verify")
	if got.code != exitDataErr || !strings.Contains(got.stderr, path+":3:") {
		t.Errorf("verify: exit %d, stderr %q", got.code, got.stderr)
	}
}

func TestAuditConfig(t *testing.T) {
	path := writeAuditLog(t)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte("audit_log = \""+path+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := runAuditCLI(context.Background(), "--config", cfg, "--json", "--status", "denied"); got.code != 0 || strings.Join(jsonIDs(t, got.stdout), " ") != "r-denied" {
		t.Errorf("--config: exit %d, %q, %q", got.code, got.stdout, got.stderr)
	}
	got := runAuditCLI(context.Background(), "--config", filepath.Join(t.TempDir(), "none.toml"))
	if got.code != exitConfig || !strings.Contains(got.stderr, "pass --log FILE") {
		t.Errorf("missing --config: exit %d, %q", got.code, got.stderr)
	}
	got = runAuditCLI(context.Background(), "--log", filepath.Join(t.TempDir(), "none.jsonl"))
	if got.code != exitNoInput || !strings.Contains(got.stderr, "cannot read the audit log") {
		t.Errorf("missing --log: exit %d, %q", got.code, got.stderr)
	}
}

func TestAuditUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--since", "yesterday"}, `--since: "yesterday" is not a duration ago`},
		{[]string{"--until", "-2h"}, `--until: "-2h" is not a duration ago`},
		{[]string{"--since", "2h", "--until", "3h"}, "is not before --until"},
		{[]string{"--status", "fine"}, `--status "fine": want one of ok, denied, timeout, error, withdrawn, pending, running`},
		{[]string{"--session", `a\b`}, `--session: pattern "a\\b" has "\\b" at byte 1; a backslash may only escape`},
		{[]string{"--nope"}, "flag provided but not defined: -nope"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"show"}, "want exactly one request id, got 0 arguments"},
		{[]string{"show", "a", "b"}, "got 2 arguments"},
		{[]string{"show", "--status", "ok", "a"}, "audit show: flag provided but not defined: -status; see 'agent-sudo help audit show'"},
		{[]string{"verify", "--follow"}, "audit verify: flag provided but not defined: -follow"},
		{[]string{"verify", "--json"}, "audit verify: flag provided but not defined: -json"},
		{[]string{"--anchor", strings.Repeat("a", 64)}, "audit: flag provided but not defined: -anchor; see 'agent-sudo help audit'"},
		{[]string{"--json", "show", "a"}, "audit: only --log and --config may come before show"},
		{[]string{"--session", "x", "verify"}, "audit: only --log and --config may come before verify"},
		{[]string{"--log", "/x", "show"}, "audit show: want exactly one request id, got 0 arguments"},
		{[]string{"verify", "--anchor", "abc"}, `--anchor "abc" is not a SHA-256`},
		{[]string{"verify", "--log", "/x", "file"}, "either files or --log/--config"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got := runAuditCLI(context.Background(), tt.args...)
			if got.code != exitUsage || !strings.Contains(got.stderr, tt.want) || strings.Count(got.stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want 2 and one line containing %q", got.code, got.stderr, tt.want)
			}
		})
	}
	got := runAuditCLI(context.Background(), "-h")
	if got.code != 0 || !strings.Contains(got.stdout, "usage: agent-sudo audit [flags]") || !strings.Contains(got.stdout, "65   a line of the log is corrupt") {
		t.Errorf("audit -h: exit %d, %q", got.code, got.stdout)
	}
}

func TestAuditFollow(t *testing.T) {
	path := writeAuditLog(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr daemontest.Buffer
	inv := &invocation{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}
	code := make(chan int, 1)
	go func() {
		code <- runAudit(ctx, inv, []string{"--log", path, "--follow", "--json", "--session", "alpha-*"}, testAuditDeps())
	}()

	waitFor := func(want string) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		if out, err := stdout.Wait(wctx, want); err != nil {
			t.Fatalf("no %q in the output after 10s:\n%s\nstderr: %s", want, out, stderr.String())
		}
	}
	waitFor(`"id":"r-fail"`)
	if ids := strings.Join(jsonIDs(t, stdout.String()), " "); ids != "r-ok r-denied r-fail" {
		t.Errorf("backlog %q", ids)
	}
	now := auditT0.Add(48 * time.Hour)
	l, err := audit.Open(path, audit.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	appendFixture(t, l, auditFixture{"r-new", "gamma", "build-1", now, [][]string{{"true"}}, "ok"}) // filtered out
	appendFixture(t, l, auditFixture{"r-new2", "alpha-9", "build-1", now, [][]string{{"true"}}, "denied"})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(`"id":"r-new2"`)
	cancel()
	select {
	case c := <-code:
		if c != exitInterrupted {
			t.Errorf("exit %d after cancel, want %d", c, exitInterrupted)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("--follow did not stop when its context was cancelled")
	}
	if ids := strings.Join(jsonIDs(t, stdout.String()), " "); ids != "r-ok r-denied r-fail r-new2" {
		t.Errorf("rows %q", ids)
	}
}

// TestAuditThroughMain: the command is in the table, with its help.
func TestAuditThroughMain(t *testing.T) {
	path := writeAuditLog(t)
	got := runCLI(context.Background(), nil, "help")
	if !strings.Contains(got.stdout, "  audit    list and verify the audit log") {
		t.Errorf("help does not list audit:\n%s", got.stdout)
	}
	got = runCLI(context.Background(), nil, "help", "audit")
	if got.code != 0 || !strings.HasPrefix(got.stdout, "usage: agent-sudo audit [flags]") {
		t.Errorf("help audit: exit %d, %q", got.code, got.stdout)
	}
	got = runCLI(context.Background(), nil, "audit", "--log", path, "verify")
	if got.code != 0 || !strings.HasPrefix(got.stdout, "ok: 16 records in 1 file\n") {
		t.Errorf("audit verify: exit %d, %q, %q", got.code, got.stdout, got.stderr)
	}
}
