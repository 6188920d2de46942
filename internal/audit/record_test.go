package audit

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestRecordEncoding writes each kind of record through the Trail API and
// checks the JSON of its line. Set AUDIT_EXAMPLES=FILE to keep the lines
// (docs/audit.md shows them).
func TestRecordEncoding(t *testing.T) {
	ctx := context.Background()
	full := "sha256:" + hashValue([]byte("C.UTF-8"))
	tests := []struct {
		name      string
		envValues bool
		write     func(t *testing.T, l *Log)
		// want maps a JSON path (dot-separated) to its expected value, in
		// the line's decoded form; nil means "present, any value".
		want map[string]any
		// absent lists paths that must not be there.
		absent []string
		// raw lists texts the line must contain as they are.
		raw []string
	}{
		{
			name: "request, env hashed",
			write: func(t *testing.T, l *Log) {
				if _, err := l.Received(ctx, testRequest("r1"), testPeer); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]any{
				"type": "request", "id": "r1", "session": "s-r1", "host": "build-1", "seq": 1.0, "prev": Genesis,
				"time": "2026-11-20T09:30:01Z", "peer.uid": 1000.0, "peer.pid": 4242.0, "peer.exe": "/usr/bin/agent",
				"request.pipeline": []any{[]any{"apt-get", "install", "-y", "nginx"}, []any{"tee", "/tmp/out"}},
				"request.reason":   "install the web server", "request.privileged": true, "request.forward_agent": false,
				"request.request_time": "2026-11-20T09:30:00Z", "request.env.LANG": full,
				"request.env_values": "sha256",
			},
			absent: []string{"request.refused", "request.cwd", "ref", "decision", "exec", "result"},
		},
		{
			name: "request, env in full", envValues: true,
			write: func(t *testing.T, l *Log) {
				if _, err := l.Received(ctx, testRequest("r2"), testPeer); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]any{"request.env.LANG": "C.UTF-8", "request.env.DEBIAN_FRONTEND": "noninteractive", "request.env_values": "full"},
		},
		{
			name: "refused before decoding",
			write: func(t *testing.T, l *Log) {
				if err := l.Refused(ctx, Refusal{ID: "bad-1", Peer: &testPeer, Reason: "invalid JSON: at byte offset 3"}); err != nil {
					t.Fatal(err)
				}
			},
			want:   map[string]any{"type": "request", "id": "bad-1", "request.refused": "invalid JSON: at byte offset 3", "peer.uid": 1000.0},
			absent: []string{"request.pipeline", "request.privileged", "request.env"},
		},
		{
			name: "refused without peer or id",
			write: func(t *testing.T, l *Log) {
				if err := l.Refused(ctx, Refusal{Reason: "cannot read the peer's credentials"}); err != nil {
					t.Fatal(err)
				}
			},
			want:   map[string]any{"type": "request", "id": "", "request.refused": "cannot read the peer's credentials"},
			absent: []string{"peer"},
		},
		{
			name: "refused after decoding",
			write: func(t *testing.T, l *Log) {
				req := testRequest("r3")
				req.Cwd = "/srv"
				if err := l.Refused(ctx, Refusal{Request: req, Peer: &testPeer, Reason: `pipeline[0]: "apt-get" not found`}); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]any{"id": "r3", "request.refused": `pipeline[0]: "apt-get" not found`,
				"request.cwd": "/srv", "request.privileged": true, "request.env.LANG": full},
		},
		{
			name: "decision",
			write: func(t *testing.T, l *Log) {
				tr, err := l.Received(ctx, testRequest("r4"), testPeer)
				if err != nil {
					t.Fatal(err)
				}
				if err := tr.Decided(ctx, approval.Decision{Verdict: approval.Deny, By: "console uid=0 tty=/dev/pts/1 pid=77", Message: "not today"}); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]any{"type": "decision", "id": "r4", "session": "s-r4", "ref": nil, "seq": 2.0,
				"decision.verdict": "denied", "decision.by": "console uid=0 tty=/dev/pts/1 pid=77", "decision.message": "not today"},
			absent: []string{"request"},
		},
		{
			name: "exec",
			write: func(t *testing.T, l *Log) {
				tr, err := l.Received(ctx, testRequest("r5"), testPeer)
				if err != nil {
					t.Fatal(err)
				}
				if err := tr.Started(ctx, testSpec()); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]any{"type": "exec", "exec.mode": "sudo", "exec.sudo_path": "/usr/bin/sudo", "exec.dir": "/",
				"exec.run_as.user": "root", "exec.run_as.uid": 0.0,
				"exec.stages": []any{
					map[string]any{"path": "/usr/bin/apt-get", "argv": []any{"apt-get", "install", "-y", "nginx"}},
					map[string]any{"path": "/usr/bin/tee", "link": "/bin/tee", "argv": []any{"tee", "/tmp/out"}},
				},
				"exec.env.HOME": "sha256:" + hashValue([]byte("/root")), "exec.env_values": "sha256"},
		},
		{
			name: "result",
			write: func(t *testing.T, l *Log) {
				tr, err := l.Received(ctx, testRequest("r6"), testPeer)
				if err != nil {
					t.Fatal(err)
				}
				resp, res := testResponse("r6")
				resp.StdoutTruncated = true
				if err := tr.Finished(ctx, resp, res); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]any{"type": "result", "result.status": "ok", "result.exit_codes": []any{0.0, 0.0},
				"result.duration_ns": 2.5e9, "result.stdout_bytes": 5.0, "result.stdout_truncated": true,
				"result.stdout_sha256": hashValue([]byte("done\n")), "result.started": "2026-11-20T09:30:10Z",
				"result.stages": []any{
					map[string]any{"exit_code": 0.0, "stderr_bytes": 8.0, "stderr_truncated": false, "stderr_sha256": hashValue([]byte("warning\n"))},
					map[string]any{"exit_code": 0.0, "stderr_bytes": 0.0, "stderr_truncated": false, "stderr_sha256": hashValue(nil)},
				}},
			absent: []string{"result.message"},
		},
		{
			name: "result of a pipeline that did not start",
			write: func(t *testing.T, l *Log) {
				tr, err := l.Received(ctx, testRequest("r7"), testPeer)
				if err != nil {
					t.Fatal(err)
				}
				resp := &proto.Response{ID: "r7", Status: proto.StatusError, Message: "runner: starting stage 0: permission denied"}
				if err := tr.Finished(ctx, resp, nil); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]any{"result.status": "error", "result.message": "runner: starting stage 0: permission denied",
				"result.exit_codes": []any{}, "result.stages": []any{}},
			absent: []string{"result.started", "result.duration_ns"},
		},
		{
			name: "HTML characters and controls",
			write: func(t *testing.T, l *Log) {
				req := testRequest("r8")
				req.Pipeline = [][]string{{"sh", "-c", "a < b && c > d\x1b[2J"}, {"echo", "café \u202etxt.exe 😀"}}
				if _, err := l.Received(ctx, req, testPeer); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]any{"request.pipeline": []any{[]any{"sh", "-c", "a < b && c > d\x1b[2J"}, []any{"echo", "café \u202etxt.exe 😀"}}},
			raw:  []string{`a < b && c > d\u001b[2J`, `caf\u00e9 \u202etxt.exe \ud83d\ude00`},
		},
	}
	examples := os.Getenv("AUDIT_EXAMPLES")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := logPath(t)
			l := openLog(t, path, Options{EnvValues: tt.envValues})
			tt.write(t, l)
			ls := lines(t, path)
			last := ls[len(ls)-1]
			if strings.Contains(string(last), `\u003c`) {
				t.Errorf("line escapes HTML characters: %s", last)
			}
			for _, b := range last {
				if b < 0x20 || b > 0x7e {
					t.Fatalf("line has byte 0x%02x: %s", b, last)
				}
			}
			for _, r := range tt.raw {
				if !strings.Contains(string(last), r) {
					t.Errorf("line lacks %s: %s", r, last)
				}
			}
			var m map[string]any
			if err := json.Unmarshal(last, &m); err != nil {
				t.Fatalf("line is not JSON: %v\n%s", err, last)
			}
			for path, want := range tt.want {
				got, ok := lookup(m, path)
				if !ok {
					t.Errorf("%s missing in %s", path, last)
					continue
				}
				if want != nil && !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v", path, got, want)
				}
			}
			for _, path := range tt.absent {
				if got, ok := lookup(m, path); ok {
					t.Errorf("%s = %#v, want it absent", path, got)
				}
			}
			// Every record has the header.
			for _, k := range []string{"type", "time", "id", "session", "host", "seq", "prev"} {
				if _, ok := m[k]; !ok {
					t.Errorf("header field %s missing", k)
				}
			}
			if examples != "" {
				f, err := os.OpenFile(examples, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
				if err == nil {
					_, _ = f.WriteString("# " + tt.name + "\n" + string(last) + "\n")
					_ = f.Close()
				}
			}
		})
	}
}

// lookup finds a dot-separated path in decoded JSON.
func lookup(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func TestAppendRefusesBadRecords(t *testing.T) {
	l := openLog(t, logPath(t), Options{})
	ctx := context.Background()
	tests := []struct {
		name string
		rec  Record
		want string
	}{
		{"unknown type", Record{Type: "ping"}, `unknown record type "ping"`},
		{"missing section", Record{Type: TypeDecision}, "decision record has no decision section"},
		{"extra section", Record{Type: TypeDecision, Decision: &DecisionSection{}, Result: &ResultSection{}}, "decision record has a result section"},
		{"seq set", Record{Type: TypeDecision, Decision: &DecisionSection{}, Seq: 3}, "seq and prev are assigned by Append"},
		{"prev set", Record{Type: TypeDecision, Decision: &DecisionSection{}, Prev: Genesis}, "seq and prev are assigned by Append"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := l.Append(ctx, &tt.rec)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Append = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if got := lines(t, l.Path()); len(got) != 0 {
		t.Errorf("refused records were written: %q", got)
	}
}

func TestAppendAfterCloseAndCancel(t *testing.T) {
	l := openLog(t, logPath(t), Options{})
	rec := func() *Record {
		return &Record{Type: TypeDecision, ID: "x", Decision: &DecisionSection{Verdict: "allowed"}}
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	// A cancelled context may lose the race against a free writer; it must
	// never report success without a receipt.
	if rc, err := l.Append(cancelled, rec()); err == nil && rc.Seq == 0 {
		t.Errorf("Append with a cancelled context succeeded without a receipt")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), rec()); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
	if err := l.Reopen(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Reopen after Close = %v, want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}
