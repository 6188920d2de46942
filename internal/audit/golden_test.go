package audit

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/procinfo"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.jsonl from what this version writes")

// goldenLog is a log this version's record types wrote once, with every
// section and every optional part set (a refused request, a request with
// its peer's ancestry and container and stdin, a two-person decision with
// a console's person and a passkey's signature, an exec with symlink
// chains and writable directories, a result with survivors, the daemon's
// start and stop). It is the audit format as documented: a change to how
// a record is encoded shows as a change of this file.
const goldenLog = "testdata/golden.jsonl"

// writeGolden writes the golden log's records through the log's API.
func writeGolden(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	l := openLog(t, path, Options{DaemonHost: "daemon-1", Stdin: true})
	if _, err := l.Daemon(ctx, DaemonSection{Event: DaemonStarted, Version: "1.2.3", PID: 99, Config: "/etc/agent-sudo/config.toml", Instance: "i-1"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Refused(ctx, Refusal{ID: "bad-1", Peer: &testPeer, Reason: "invalid JSON: at byte offset 3", Raw: []byte(`{"id":"bad-1",`)}); err != nil {
		t.Fatal(err)
	}
	uid, owner := uint32(1000), uint32(1000)
	inner := uint32(0)
	peer := testPeer
	peer.Ancestry = &procinfo.Ancestry{
		Hops: []procinfo.Hop{{PID: 4242, Exe: "/usr/bin/agent", Comm: "agent", Argv: []string{"agent", "--yes"}},
			{PID: 4000, Exe: "/usr/bin/bash", Comm: "bash", Argv: []string{"-bash"}, ArgvCut: true}},
		End: approval.EndLoginShell, Changed: "exe changed",
	}
	peer.Container = &procinfo.Container{NS: map[string]uint64{"pid": 4026531836, "user": 4026531837}, InnerUID: &inner, InnerPID: 7, InitPID: 4100,
		Cgroup: "0::/machine.slice/c1", Controller: &owner}
	req := testRequest("r1")
	req.Cwd, req.ForwardAgent, req.Privileged = "/srv/www", true, false
	req.Stdin = []byte("hello\n")
	tr, err := l.Received(ctx, req, peer)
	if err != nil {
		t.Fatal(err)
	}
	signed := &approval.SignedBy{Approver: "alice", Person: "uid 1001", Relay: "web", Signed: approval.Signed{
		Statement: approval.Statement{Record: tr.hdr.Ref, ID: "r1", Hash: strings.Repeat("cd", 32),
			Decision: approval.AllowOnce, Scope: approval.ScopeOnce, Expires: t0.Add(time.Minute), Nonce: "bm9uY2Vub25jZW5vbmNl"},
		Assertion: approval.Assertion{CredentialID: []byte{1, 2}, AuthenticatorData: []byte{3}, ClientDataJSON: []byte(`{"type":"webauthn.get"}`),
			Signature: []byte{4, 5, 6}, UserHandle: []byte{7}},
	}}
	person := &approval.Person{LoginUID: &uid, TTY: "/dev/pts/3", TTYOwner: &owner, SudoUser: "bob", SudoUID: "1000"}
	if err := tr.Decided(ctx, approval.Decision{Verdict: approval.Allow, By: `passkey "alice" (via web)`, Message: "ok",
		Approver: person, Signed: signed,
		Approvals: []approval.Approval{{By: "console uid=0 tty=/dev/pts/3", Person: person, Identity: "uid 1000"},
			{By: `passkey "carol"`, Signed: signed, Identity: "passkey carol"}}}); err != nil {
		t.Fatal(err)
	}
	spec := testSpec()
	spec.Dir, spec.DirChain = "/srv/www", []string{"/srv/web", "/srv/www"}
	spec.DirUntrusted = []runner.Writable{{Path: "/srv/www", Why: "the directory is owned by uid 1001"}}
	spec.Stages[0].Program = &runner.File{Dev: 2049, Ino: 1234, SHA256: [32]byte{0xaa, 0xbb}}
	spec.Stages[1].Chain = []string{"/bin/tee", "/usr/bin/tee"}
	spec.Stages[1].Untrusted = []runner.Writable{{Path: "/usr/bin", Why: "the directory is writable by group 1001"}}
	spec.Target.Groups = []uint32{0, 4}
	if err := tr.Started(ctx, spec); err != nil {
		t.Fatal(err)
	}
	tr.Stopped("console uid=0 tty=/dev/pts/1 pid=77")
	resp := &proto.Response{ID: "r1", Status: proto.StatusOK, Stdout: []byte("out\n"),
		Stages: []proto.Stage{{ExitCode: 0, Stderr: []byte("e")}, {ExitCode: 143, StderrTruncated: true}}}
	res := &runner.Result{Started: t0.Add(time.Hour), Ended: t0.Add(time.Hour + 1500*time.Millisecond),
		Survivors: []runner.Survivor{{PID: 5000, Exe: "/usr/bin/sleep"}}, CgroupError: "rmdir: busy"}
	if err := tr.Finished(ctx, resp, res); err != nil {
		t.Fatal(err)
	}
	tr2, err := l.Received(ctx, testRequest("r2"), testPeer)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr2.Decided(ctx, approval.Decision{Verdict: approval.Deny, By: "console uid=0 tty=/dev/pts/1 pid=77", Message: "not today", Approver: person}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Daemon(ctx, DaemonSection{Event: DaemonStopped, Reason: "terminated signal received", Version: "1.2.3", PID: 99, Instance: "i-1"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestGoldenLog checks that the audit format stays as recorded: what
// this version writes is byte for byte the golden log, each of its records
// reads back and encodes again to the same line, and audit verify, with
// its signature check, still verifies it.
func TestGoldenLog(t *testing.T) {
	path := logPath(t)
	writeGolden(t, path)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(goldenLog, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenLog)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the log written differs from %s (go test -run TestGoldenLog -update to accept a deliberate change):\ngot:\n%s\nwant:\n%s", goldenLog, got, want)
	}

	// Every line reads back into a Record and encodes to the same bytes.
	sc := bufio.NewScanner(bytes.NewReader(want))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		r, err := parseRecord(line)
		if err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		seq, prev := r.Seq, r.Prev
		r.Seq, r.Prev = 0, ""
		body, err := marshalBody(r)
		if err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		again := string(body[:len(body)-1]) + `,"seq":` + strconv.FormatUint(seq, 10) + `,"prev":"` + prev + `"}`
		if again != string(line) {
			t.Errorf("line %d does not encode back to itself:\nread:  %s\nagain: %s", n, line, again)
		}
	}
	if n != 9 {
		t.Errorf("%s has %d lines, want 9", goldenLog, n)
	}

	// audit verify still verifies it, and hands the signature check each
	// signed decision as recorded.
	var checked []string
	res, err := VerifyWith(context.Background(), VerifyOptions{Signed: func(s *SignedBy) error {
		checked = append(checked, s.Approver+" "+s.Person+" "+s.Relay+" "+string(s.Statement.Decision)+" "+s.Statement.Nonce+" "+string(s.Assertion.Signature))
		return nil
	}}, filepath.Clean(goldenLog))
	if err != nil {
		t.Fatalf("verify %s: %v", goldenLog, err)
	}
	if res.Records != 9 {
		t.Errorf("verify %s: %d records, want 9", goldenLog, res.Records)
	}
	wantChecked := "alice uid 1001 web allow_once bm9uY2Vub25jZW5vbmNl \x04\x05\x06"
	if len(checked) == 0 || checked[0] != wantChecked {
		t.Errorf("signature checks got %q, want %q first", checked, wantChecked)
	}
}
