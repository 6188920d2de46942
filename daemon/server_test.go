package daemon

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
	"golang.org/x/sys/unix"
)

// The in-process tests build a Server with New and serve it on a socket of
// their own, as the test's user: rules, plans, decisions, refusals and
// withdrawal run as in the daemon, and Options.Exec stands in for the
// runner, so nothing runs. They need neither root nor a built daemon.

// testServer is a Server serving on a temporary socket.
type testServer struct {
	t         *testing.T
	srv       *Server
	socket    string
	auditPath string
	// approverSocket is configured, never listened on.
	approverSocket string
	logs           *daemontest.Buffer
	// execs are the pipelines that would have run.
	mu     sync.Mutex
	execs  []runner.Spec
	cancel context.CancelFunc
	served chan error
	once   sync.Once
}

// serverSetup is what a test changes about its server.
type serverSetup struct {
	// toml is added to the configuration: rules and keys. Without
	// allowed_users, the test's own uid is the only one allowed.
	toml string
	// opts are passed to New; Logger and Audit are the harness's, and a
	// nil Exec records the spec and answers "ran".
	opts Options
	// audit, when set, wraps the audit log the server writes to.
	audit func(auditLog) auditLog
	// procDir, when set, is the /proc the server reads peers'
	// ancestry and containers from.
	procDir string
}

// startServer builds a Server for setup and serves it until the test ends.
func startServer(t *testing.T, setup serverSetup) *testServer {
	t.Helper()
	ts := newServer(t, setup)
	ln, err := net.Listen("unix", ts.socket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts.cancel, ts.served = cancel, make(chan error, 1)
	go func() { ts.served <- ts.srv.Serve(ctx, ln) }()
	t.Cleanup(ts.stop)
	return ts
}

// newServer builds a Server for setup, not serving.
func newServer(t *testing.T, setup serverSetup) *testServer {
	t.Helper()
	// Unix socket paths are short; t.TempDir can be long.
	dir, err := os.MkdirTemp("", "asd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ts := &testServer{t: t, socket: filepath.Join(dir, "agent.sock"), auditPath: filepath.Join(dir, "audit", "audit.jsonl"),
		approverSocket: filepath.Join(dir, "approver.sock"), logs: &daemontest.Buffer{}}
	cfg := ts.config(setup.toml)
	alog, err := audit.Open(ts.auditPath, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { alog.Close() })
	opts := setup.opts
	opts.Logger = slog.New(slog.NewTextHandler(ts.logs, nil))
	opts.Audit = alog
	if opts.Exec == nil {
		opts.Exec = ts.fakeExec
	}
	ts.srv, err = New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if setup.audit != nil {
		ts.srv.audit = setup.audit(ts.srv.audit)
	}
	if setup.procDir != "" {
		ts.srv.proc.Dir = setup.procDir
	}
	return ts
}

// config is the server's configuration with toml added: rules and keys.
// Without allowed_users, the test's own uid is the only one allowed.
func (ts *testServer) config(toml string) *config.Config {
	ts.t.Helper()
	text := fmt.Sprintf(`
socket = %q
approver_socket = %q
audit_log = %q
exec = "direct"
cgroup = "best-effort"
`, ts.socket, ts.approverSocket, ts.auditPath)
	for key, value := range map[string]string{
		"allowed_users":    fmt.Sprintf("[\"%d\"]", os.Getuid()),
		"approval_timeout": `"30s"`,
		"shutdown_timeout": `"5s"`,
	} {
		if !strings.Contains(toml, key+" =") {
			text += key + " = " + value + "\n"
		}
	}
	cfg, err := config.Parse([]byte(text + toml))
	if err != nil {
		ts.t.Fatalf("configuration: %v\n%s", err, text+toml)
	}
	return cfg
}

// fakeExec records spec and answers as a pipeline whose every stage exited
// 0 and whose last stage printed "ran".
func (ts *testServer) fakeExec(_ context.Context, spec runner.Spec) (*runner.Result, error) {
	ts.mu.Lock()
	ts.execs = append(ts.execs, spec)
	ts.mu.Unlock()
	now := time.Now()
	res := &runner.Result{Stdout: runner.NewOutput([]byte("ran\n")), StdoutSHA256: sha256.Sum256([]byte("ran\n")), Started: now, Ended: now,
		Stages: make([]runner.StageResult, len(spec.Stages))}
	for i := range res.Stages {
		res.Stages[i].StderrSHA256 = sha256.Sum256(nil)
	}
	return res, nil
}

// stop shuts the server down and waits until Serve has returned: every
// request has then ended and is recorded.
func (ts *testServer) stop() {
	ts.once.Do(func() {
		if ts.cancel == nil {
			return // not serving
		}
		ts.cancel()
		if err := <-ts.served; err != nil {
			ts.t.Errorf("Serve: %v", err)
		}
	})
}

// dial connects to the server and sends line.
func (ts *testServer) dial(line string) net.Conn {
	ts.t.Helper()
	c, err := net.Dial("unix", ts.socket)
	if err != nil {
		ts.t.Fatal(err)
	}
	ts.t.Cleanup(func() { c.Close() })
	if line != "" {
		// A peer the server refuses before reading (unauthorised) may
		// find the connection closed when it writes; its answer is still
		// in the receive buffer, as the client library reads it.
		if _, err := c.Write([]byte(line + "\n")); err != nil && !errors.Is(err, syscall.EPIPE) {
			ts.t.Fatal(err)
		}
	}
	return c
}

// read reads the response on c.
func (ts *testServer) read(c net.Conn) *proto.Response {
	ts.t.Helper()
	resp, err := proto.ReadResponse(bufio.NewReader(c))
	if err != nil {
		ts.t.Fatalf("reading the response: %v\n%s", err, ts.logs)
	}
	return resp
}

// send sends line and returns the response.
func (ts *testServer) send(line string) *proto.Response {
	ts.t.Helper()
	return ts.read(ts.dial(line))
}

// records stops the server and returns every record of its audit log.
func (ts *testServer) records() []*audit.Record {
	ts.t.Helper()
	ts.stop()
	var recs []*audit.Record
	for e, err := range audit.Read(context.Background(), ts.auditPath) {
		if err != nil {
			ts.t.Fatal(err)
		}
		recs = append(recs, e.Record)
	}
	return recs
}

// ran returns the specs that reached Exec.
func (ts *testServer) ran() []runner.Spec {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]runner.Spec(nil), ts.execs...)
}

// request is a request line: fields over a fresh time and the pipeline
// `true`.
func request(fields map[string]any) string {
	m := map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "pipeline": [][]string{{"true"}}}
	for k, v := range fields {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// allowTrue is a rule that allows `true` (root or not), with an SSH agent.
const allowTrue = `
[[rule]]
name = "true is harmless"
action = "allow"
match = ["true"]
forward_agent = true
`

// askFunc is an approval.Approver made of a function.
type askFunc func(ctx context.Context, p *approval.Pending) (approval.Decision, error)

func (f askFunc) Ask(ctx context.Context, p *approval.Pending) (approval.Decision, error) {
	return f(ctx, p)
}

// failingAudit is an audit log whose writes fail at one step: "request",
// "decision", "exec", "result" or "refusal". finished, when set, is called
// with the context of each result write.
type failingAudit struct {
	auditLog
	step     string
	finished func(ctx context.Context)
}

var errDiskFull = errors.New("write audit.jsonl: no space left on device")

func (a *failingAudit) Refused(ctx context.Context, r audit.Refusal) error {
	if a.step == "refusal" {
		return errDiskFull
	}
	return a.auditLog.Refused(ctx, r)
}

func (a *failingAudit) Received(ctx context.Context, req *proto.Request, peer peercred.Creds) (auditTrail, error) {
	if a.step == "request" {
		return nil, errDiskFull
	}
	t, err := a.auditLog.Received(ctx, req, peer)
	if err != nil {
		return nil, err
	}
	return &failingTrail{auditTrail: t, a: a}, nil
}

type failingTrail struct {
	auditTrail
	a *failingAudit
}

func (t *failingTrail) Decided(ctx context.Context, d approval.Decision) error {
	if t.a.step == "decision" {
		return errDiskFull
	}
	return t.auditTrail.Decided(ctx, d)
}

func (t *failingTrail) Started(ctx context.Context, spec runner.Spec) error {
	if t.a.step == "exec" {
		return errDiskFull
	}
	return t.auditTrail.Started(ctx, spec)
}

func (t *failingTrail) Finished(ctx context.Context, resp *proto.Response, res *runner.Result) error {
	if t.a.finished != nil {
		t.a.finished(ctx)
	}
	if t.a.step == "result" {
		return errDiskFull
	}
	return t.auditTrail.Finished(ctx, resp, res)
}

// outcome is what a test expects of one request.
type outcome struct {
	status  proto.Status
	message string // a substring of the answer's message
	// records are the audit record types, in order, and refused a
	// substring of the refusal's reason.
	records []audit.Type
	refused string
	// verdict and by are the decision record's, when there is one.
	verdict approval.Verdict
	by      string
	// ran: the pipeline reached Exec.
	ran bool
}

// check compares the answer resp, the server's audit log and what ran
// with want.
func (ts *testServer) check(resp *proto.Response, want outcome) {
	ts.t.Helper()
	if resp == nil {
		if want.status != "" {
			ts.t.Errorf("no answer, want %s", want.status)
		}
	} else if resp.Status != want.status || !strings.Contains(resp.Message, want.message) {
		ts.t.Errorf("answer %s %q, want %s containing %q", resp.Status, resp.Message, want.status, want.message)
	} else if resp.Version != Version() {
		// Every answer carries the daemon's version (docs/protocol.md).
		ts.t.Errorf("answer %s %q has version %q, want %q", resp.Status, resp.Message, resp.Version, Version())
	}
	recs := ts.records()
	var types []audit.Type
	for _, r := range recs {
		types = append(types, r.Type)
		switch {
		case r.Request != nil && r.Request.Refused != "" && !strings.Contains(r.Request.Refused, want.refused):
			ts.t.Errorf("refused %q, want it to contain %q", r.Request.Refused, want.refused)
		case r.Decision != nil && (r.Decision.Verdict != string(want.verdict) || r.Decision.By != want.by):
			ts.t.Errorf("decision record %s by %q, want %s by %q", r.Decision.Verdict, r.Decision.By, want.verdict, want.by)
		}
	}
	if fmt.Sprint(types) != fmt.Sprint(want.records) {
		ts.t.Errorf("audit records %v, want %v\n%s", types, want.records, ts.logs)
	}
	if ran := len(ts.ran()) > 0; ran != want.ran {
		ts.t.Errorf("ran = %v, want %v", ran, want.ran)
	}
}

var (
	refusedOnly = []audit.Type{audit.TypeRequest}
	decidedOnly = []audit.Type{audit.TypeRequest, audit.TypeDecision}
	ranAll      = []audit.Type{audit.TypeRequest, audit.TypeDecision, audit.TypeExec, audit.TypeResult}
)

// TestServerRefusals: every way a request is refused or ends without
// running, one server each: the answer, the audit records, and that
// nothing ran.
func TestServerRefusals(t *testing.T) {
	t.Parallel()
	hostile := approval.Approver(askFunc(func(context.Context, *approval.Pending) (approval.Decision, error) {
		return approval.Decision{Verdict: approval.Allow, By: "should not be asked"}, nil
	}))
	tests := []struct {
		name  string
		setup serverSetup
		line  string
		want  outcome
	}{
		{"unauthorised peer", serverSetup{toml: `allowed_users = ["4242424"]`, opts: Options{Approver: hostile}}, request(nil),
			outcome{status: proto.StatusError, message: "may not use agent-sudo", records: refusedOnly, refused: "not allowed"}},
		{"not JSON", serverSetup{opts: Options{Approver: hostile}}, "{nope",
			outcome{status: proto.StatusError, message: "invalid", records: refusedOnly}},
		{"stale time", serverSetup{opts: Options{Approver: hostile, Now: func() time.Time { return time.Now().Add(time.Hour) }}}, request(nil),
			outcome{status: proto.StatusError, message: "older than the daemon's clock", records: refusedOnly, refused: "older than"}},
		{"action stop", serverSetup{opts: Options{Approver: hostile}}, request(map[string]any{"action": "stop", "pipeline": nil}),
			outcome{status: proto.StatusError, message: `action "stop" is refused`, records: refusedOnly, refused: `action "stop"`}},
		{"unknown program", serverSetup{opts: Options{Approver: hostile}}, request(map[string]any{"pipeline": [][]string{{"no-such-program-asudo"}}}),
			outcome{status: proto.StatusError, message: "pipeline[0]: ", records: refusedOnly, refused: "pipeline[0]: "}},
		{"missing cwd", serverSetup{opts: Options{Approver: hostile}}, request(map[string]any{"cwd": "/no/such/dir-asudo"}),
			outcome{status: proto.StatusError, message: `cwd "/no/such/dir-asudo"`, records: refusedOnly, refused: "cwd"}},
		{"forward_agent without an agent", serverSetup{toml: allowTrue, opts: Options{Approver: hostile}}, request(map[string]any{"privileged": false, "forward_agent": true}),
			outcome{status: proto.StatusError, message: "the daemon has no SSH agent to forward", records: refusedOnly, refused: "forward_agent"}},
		{"denied by a rule", serverSetup{toml: `
[[rule]]
name = "no true"
action = "deny"
match = ["true"]
`, opts: Options{Approver: hostile}}, request(nil),
			outcome{status: proto.StatusDenied, message: `denied by rule "no true"`, records: decidedOnly, verdict: approval.Deny, by: "no true"}},
		{"denied by a human", serverSetup{opts: Options{Approver: askFunc(func(context.Context, *approval.Pending) (approval.Decision, error) {
			return approval.Decision{Verdict: approval.Deny, By: "console uid=0 tty=/dev/pts/1 pid=1", Message: "use staging"}, nil
		})}}, request(nil),
			outcome{status: proto.StatusDenied, message: "use staging", records: decidedOnly, verdict: approval.Deny, by: "console uid=0 tty=/dev/pts/1 pid=1"}},
		{"approval timeout", serverSetup{toml: `approval_timeout = "100ms"`}, request(nil),
			outcome{status: proto.StatusTimeout, message: "within approval_timeout (100ms)", records: decidedOnly,
				verdict: approval.Timeout, by: approval.ByApprovalTimeout}},
		{"approver failed", serverSetup{opts: Options{Approver: askFunc(func(context.Context, *approval.Pending) (approval.Decision, error) {
			return approval.Decision{}, errors.New("the broker fell over")
		})}}, request(nil),
			outcome{status: proto.StatusError, message: "approval failed, so the request was not run: the broker fell over", records: decidedOnly,
				verdict: approval.Failed, by: approval.ByApprover}},
		{"request record not durable", serverSetup{toml: allowTrue, audit: failAt("request")}, request(nil),
			outcome{status: proto.StatusError, message: "audit log unavailable: " + errDiskFull.Error() + "; nothing was run"}},
		{"decision record not durable", serverSetup{toml: allowTrue, audit: failAt("decision")}, request(nil),
			outcome{status: proto.StatusError, message: "audit log unavailable: ", records: []audit.Type{audit.TypeRequest, audit.TypeResult}}},
		{"exec record not durable", serverSetup{toml: allowTrue, audit: failAt("exec")}, request(nil),
			outcome{status: proto.StatusError, message: "audit log unavailable: ", records: []audit.Type{audit.TypeRequest, audit.TypeDecision, audit.TypeResult},
				verdict: approval.Allow, by: "true is harmless"}},
		{"refusal not durable", serverSetup{opts: Options{Approver: hostile}, audit: failAt("refusal")}, "{nope",
			outcome{status: proto.StatusError, message: "invalid"}},
		{"exec failed", serverSetup{toml: allowTrue, opts: Options{Exec: func(context.Context, runner.Spec) (*runner.Result, error) {
			return nil, errors.New("fork/exec /usr/bin/true: resource temporarily unavailable")
		}}}, request(nil),
			outcome{status: proto.StatusError, message: "resource temporarily unavailable", records: ranAll, verdict: approval.Allow, by: "true is harmless"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, tt.setup)
			ts.check(ts.send(restamp(t, tt.line)), tt.want)
		})
	}
}

// restamp sets the time of a JSON request line to now: a table's lines are
// built before its subtests run, which on a loaded machine can be longer
// ago than max_clock_skew. A line that is not a JSON object is returned as
// it is.
func restamp(t *testing.T, line string) string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return line
	}
	if _, ok := m["time"]; !ok {
		return line
	}
	m["time"] = time.Now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// failAt makes the audit log's writes fail at step.
func failAt(step string) func(auditLog) auditLog {
	return func(a auditLog) auditLog { return &failingAudit{auditLog: a, step: step} }
}

// TestServerReplayRefused: a request id used twice is refused the second
// time, and only the first runs.
func TestServerReplayRefused(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverSetup{toml: allowTrue})
	line := request(map[string]any{"id": "once-only"})
	if resp := ts.send(line); resp.Status != proto.StatusOK {
		t.Fatalf("first: %s %q", resp.Status, resp.Message)
	}
	ts.check(ts.send(line), outcome{status: proto.StatusError, message: `request id "once-only" was already used`,
		records: append(ranAll, audit.TypeRequest), refused: "replay", verdict: approval.Allow, by: "true is harmless", ran: true})
}

// TestServerUnreadablePeer: a connection whose peer's credentials cannot
// be read is refused, and recorded without a peer. When the daemon could
// not read them because it is out of descriptors (EMFILE, ENFILE), the
// agent is told so: the daemon's own limit, not something the agent did
// (issue 32, "also seen").
func TestServerUnreadablePeer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"bad descriptor", errors.New("getsockopt SO_PEERCRED: bad file descriptor"), "cannot read the peer's credentials; refusing"},
		{"EMFILE", fmt.Errorf("peer credentials: user namespace of pid 7: %w", unix.EMFILE), "the daemon is out of file descriptors, so it cannot read the peer's credentials"},
		{"ENFILE", fmt.Errorf("peer credentials: %w", unix.ENFILE), "the daemon is out of file descriptors, so it cannot read the peer's credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, serverSetup{})
			a, b := socketPair(t)
			done := make(chan struct{})
			go func() {
				defer close(done)
				ts.srv.handle(context.Background(), context.Background(), a, peercred.Creds{}, nil, tc.err)
			}()
			resp := ts.read(b)
			<-done
			ts.check(resp, outcome{status: proto.StatusError, message: tc.want, records: refusedOnly, refused: "cannot read"})
			if recs := ts.records(); len(recs) == 1 && recs[0].Peer != nil {
				t.Errorf("the refusal names a peer: %+v", recs[0].Peer)
			}
		})
	}
}

// TestServerIdleConnection: a connection that sends nothing within
// first_byte_timeout is answered and closed, and not recorded.
func TestServerIdleConnection(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverSetup{toml: `first_byte_timeout = "50ms"`})
	ts.check(ts.read(ts.dial("")), outcome{status: proto.StatusError, message: "nothing was sent within first_byte_timeout (50ms)"})
}

// TestServerExecSpec: an allowed request runs exactly its plan (the
// program resolved in secure_path, root for a privileged request, the
// requesting user and the SSH agent of Options.SSHAuthSock for one that
// forwards it), its answer carries the output, and all four records are
// written.
func TestServerExecSpec(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverSetup{toml: allowTrue, opts: Options{SSHAuthSock: "/run/agent-sock-asudo"}})
	for _, fields := range []map[string]any{{"privileged": true}, {"privileged": false, "forward_agent": true}} {
		resp := ts.send(request(fields))
		if resp.Status != proto.StatusOK || string(resp.Stdout) != "ran\n" || len(resp.Stages) != 1 {
			t.Errorf("answer: %+v", resp)
		}
	}
	specs := ts.ran()
	if len(specs) != 2 {
		t.Fatalf("%d pipelines ran, want 2", len(specs))
	}
	for _, spec := range specs {
		if len(spec.Stages) != 1 || filepath.Base(spec.Stages[0].Path) != "true" || !filepath.IsAbs(spec.Stages[0].Path) {
			t.Errorf("stages: %+v", spec.Stages)
		}
	}
	if spec := specs[0]; spec.Target.Name != "root" || spec.Target.UID != 0 || containsPrefix(spec.Env, "SSH_AUTH_SOCK=") {
		t.Errorf("privileged: target %+v, env %q", spec.Target, spec.Env)
	}
	if spec := specs[1]; spec.Target.UID != uint32(os.Getuid()) || !slices.Contains(spec.Env, "SSH_AUTH_SOCK=/run/agent-sock-asudo") {
		t.Errorf("forward_agent: target %+v, env %q (want SSH_AUTH_SOCK of Options.SSHAuthSock)", spec.Target, spec.Env)
	}
	ts.check(nil, outcome{records: append(ranAll, ranAll...), verdict: approval.Allow, by: "true is harmless", ran: true})
}

func containsPrefix(ss []string, prefix string) bool {
	return slices.ContainsFunc(ss, func(s string) bool { return strings.HasPrefix(s, prefix) })
}

// TestServerWithdrawal: a client that hangs up while its request waits
// withdraws it: it never runs, consoles are told it was withdrawn by the
// client, and the audit log says the same.
func TestServerWithdrawal(t *testing.T) {
	t.Parallel()
	broker := newBroker(time.Hour, nil)
	_, events, unsubscribe := broker.Subscribe()
	defer unsubscribe()
	ts := startServer(t, serverSetup{opts: Options{Approver: broker}})
	c := ts.dial(request(map[string]any{"id": "gone-1"}))
	if m := <-events; m.Type != approval.MsgPending || m.ID != "gone-1" {
		t.Fatalf("first event %+v, want gone-1 pending", m)
	}
	c.Close()
	m := <-events
	if m.Type != approval.MsgResolved || m.Verdict != approval.Withdrawn || m.By != approval.ByClient {
		t.Errorf("consoles were told %+v, want withdrawn by %q", m, approval.ByClient)
	}
	ts.check(nil, outcome{records: decidedOnly, verdict: m.Verdict, by: m.By})
}

// TestServerShutdownEndsWaitingRequests: a request waiting for approval
// when the server shuts down is answered with an error and never runs;
// consoles and the audit log both record the same verdict, an error by
// "daemon shutting down".
func TestServerShutdownEndsWaitingRequests(t *testing.T) {
	t.Parallel()
	broker := newBroker(time.Hour, nil)
	_, events, unsubscribe := broker.Subscribe()
	defer unsubscribe()
	ts := startServer(t, serverSetup{opts: Options{Approver: broker}})
	c := ts.dial(request(map[string]any{"id": "late-1"}))
	if m := <-events; m.Type != approval.MsgPending {
		t.Fatalf("first event %+v, want pending", m)
	}
	ts.cancel()
	resp := ts.read(c)
	m := <-events
	if m.Type != approval.MsgResolved || m.Verdict != approval.Failed || m.By != approval.ByShutdown {
		t.Errorf("consoles were told %+v, want %s by %q", m, approval.Failed, approval.ByShutdown)
	}
	ts.check(resp, outcome{status: proto.StatusError, message: "agent-sudod is shutting down (it was stopped or restarted); the request was not run",
		records: decidedOnly, verdict: m.Verdict, by: m.By})
}

// TestServerShutdownStopsRunningCommands: at shutdown a running command is
// given shutdown_timeout to finish, then stopped, and its client is told so,
// naming the shutdown_timeout the shutdown waited even if a reload changed
// it meanwhile.
func TestServerShutdownStopsRunningCommands(t *testing.T) {
	t.Parallel()
	var ts *testServer
	running := make(chan struct{})
	exec := func(ctx context.Context, spec runner.Spec) (*runner.Result, error) {
		close(running)
		<-ctx.Done() // the runner stops the pipeline when its context ends
		// A reload that lands during the shutdown does not change what
		// this shutdown waited.
		if _, err := ts.srv.Reload(ts.config(`shutdown_timeout = "7h"` + allowTrue)); err != nil {
			t.Error(err)
		}
		now := time.Now()
		return &runner.Result{TimedOut: true, Started: now, Ended: now, Stages: make([]runner.StageResult, len(spec.Stages))}, nil
	}
	ts = startServer(t, serverSetup{toml: `shutdown_timeout = "10ms"` + allowTrue, opts: Options{Exec: exec}})
	c := ts.dial(request(nil))
	<-running
	ts.cancel()
	resp := ts.read(c)
	want := "the daemon is shutting down: the command was still running after shutdown_timeout (10ms), so it was sent SIGTERM"
	if resp.Status != proto.StatusTimeout || !strings.Contains(resp.Message, want) {
		t.Errorf("answer %s %q, want %s %q", resp.Status, resp.Message, proto.StatusTimeout, want)
	}
}

// TestServerAuditFailureRecordsWithinShutdown: when a record cannot be
// written, the best-effort result record is written with the server's
// context, which a shutdown ends, not with one that never ends.
func TestServerAuditFailureRecordsWithinShutdown(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var endless []string
	ts := startServer(t, serverSetup{toml: allowTrue, audit: func(a auditLog) auditLog {
		return &failingAudit{auditLog: a, step: "decision", finished: func(ctx context.Context) {
			if ctx.Done() == nil {
				mu.Lock()
				endless = append(endless, "result record")
				mu.Unlock()
			}
		}}
	}})
	ts.check(ts.send(request(nil)), outcome{status: proto.StatusError, message: "audit log unavailable: ",
		records: []audit.Type{audit.TypeRequest, audit.TypeResult}})
	if len(endless) > 0 {
		t.Errorf("written with a context that never ends: %v", endless)
	}
}

// TestServeReturnsOnAcceptError: Serve returns the error of a listener
// that fails to accept with an error that does not pass with time (here
// EINVAL, as from a socket that is not listening), while ctx is still live,
// and leaves no goroutine behind. Not parallel: it looks at every
// goroutine.
func TestServeReturnsOnAcceptError(t *testing.T) {
	for _, err := range []error{
		&net.OpError{Op: "accept", Net: "unix", Err: os.NewSyscallError("accept4", syscall.EINVAL)},
		fmt.Errorf("accept: %w", net.ErrClosed),
	} {
		ts := newServer(t, serverSetup{})
		ln := &brokenListener{err: err}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if got := ts.srv.Serve(ctx, ln); got == nil || !errors.Is(got, err) {
			t.Fatalf("Serve = %v, want the accept error %v", got, err)
		}
		if !ln.closed {
			t.Error("Serve did not close the listener")
		}
		// A goroutine that has signalled its end may still be on its way
		// out for a moment; one that leaked (the old watcher waited for
		// ctx, which nothing cancels here) is still there after 10 s.
		deadline := time.Now().Add(10 * time.Second)
		for {
			left := serveGoroutine()
			if left == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a goroutine of Serve outlived it:\n%s", left)
			}
			runtime.Gosched()
			time.Sleep(time.Millisecond) // polling the goroutine list: there is no event to wait for
		}
	}
}

// TestServeRetriesTemporaryAcceptErrors: accept errors that pass with time
// (out of descriptors: EMFILE, ENFILE; an aborted connection) do not stop
// Serve: it logs them, pauses, and serves the next connection.
func TestServeRetriesTemporaryAcceptErrors(t *testing.T) {
	t.Parallel()
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED} {
		ts := newServer(t, serverSetup{toml: allowTrue})
		real, err := net.Listen("unix", ts.socket)
		if err != nil {
			t.Fatal(err)
		}
		ln := &failingListener{Listener: real, fails: 3,
			err: &net.OpError{Op: "accept", Net: "unix", Err: os.NewSyscallError("accept4", errno)}}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- ts.srv.Serve(ctx, ln) }()
		resp := ts.send(request(nil))
		if resp.Status != proto.StatusOK {
			t.Errorf("%v: after %d failed accepts the request got %s %q, want it served", errno, 3, resp.Status, resp.Message)
		}
		select {
		case err := <-served:
			t.Fatalf("%v: Serve returned %v on a temporary accept error", errno, err)
		default:
		}
		cancel()
		if err := <-served; err != nil {
			t.Errorf("%v: Serve = %v after cancel, want nil", errno, err)
		}
		if !strings.Contains(ts.logs.String(), "accept failed; retrying") {
			t.Errorf("%v: the accept errors were not logged:\n%s", errno, ts.logs.String())
		}
	}
}

// failingListener fails its first fails Accepts with err, then accepts
// from Listener.
type failingListener struct {
	net.Listener
	mu    sync.Mutex
	fails int
	err   error
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.fails > 0 {
		l.fails--
		l.mu.Unlock()
		return nil, l.err
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// serveGoroutine returns the stack of a goroutine running in Server.Serve,
// or "" when there is none.
func serveGoroutine() string {
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for _, g := range strings.Split(stacks, "\n\n") {
		if strings.Contains(g, "(*Server).Serve") {
			return g
		}
	}
	return ""
}

// brokenListener fails every Accept with err.
type brokenListener struct {
	err    error
	closed bool
}

func (l *brokenListener) Accept() (net.Conn, error) { return nil, l.err }
func (l *brokenListener) Close() error              { l.closed = true; return nil }
func (l *brokenListener) Addr() net.Addr            { return &net.UnixAddr{Name: "broken", Net: "unix"} }

// socketPair returns the two ends of a connected Unix stream socket.
func socketPair(t *testing.T) (a, b *net.UnixConn) {
	t.Helper()
	dir, err := os.MkdirTemp("", "asp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "s"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	b, err = net.DialUnix("unix", nil, ln.Addr().(*net.UnixAddr))
	if err != nil {
		t.Fatal(err)
	}
	a, err = ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// TestEveryAnswerCarriesTheVersion: every answer to a pipeline, whatever
// its status, and a connection refused before it is read, carry the
// daemon's version (docs/protocol.md; sudo-proxy 1.1 clients read it).
func TestEveryAnswerCarriesTheVersion(t *testing.T) {
	t.Parallel()
	denyFalse := `
[[rule]]
name = "no false"
action = "deny"
match = ["false"]
`
	for _, tt := range []struct {
		name  string
		setup serverSetup
		// line makes the request line when the subtest runs: a
		// parallel subtest may start minutes after the table is made.
		line func() string
		want proto.Status
	}{
		{"ok", serverSetup{toml: allowTrue}, func() string { return request(nil) }, proto.StatusOK},
		{"denied", serverSetup{toml: denyFalse}, func() string { return request(map[string]any{"pipeline": [][]string{{"false"}}}) }, proto.StatusDenied},
		{"timeout", serverSetup{toml: `approval_timeout = "100ms"`}, func() string { return request(nil) }, proto.StatusTimeout},
		{"error", serverSetup{}, func() string { return "{nope" }, proto.StatusError},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, tt.setup)
			resp := ts.send(tt.line())
			if resp.Status != tt.want || resp.Version == "" || resp.Version != Version() {
				t.Errorf("answer %s %q with version %q, want %s with version %q", resp.Status, resp.Message, resp.Version, tt.want, Version())
			}
		})
	}
	// A connection refused before it is read (busy, rate limited).
	t.Run("refused connection", func(t *testing.T) {
		t.Parallel()
		ts := newServer(t, serverSetup{})
		ln, err := net.Listen("unix", ts.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		c, err := net.Dial("unix", ts.socket)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		server, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		ts.srv.refuseConn(server.(*net.UnixConn), 1000, "rate", "rate limited: a test")
		resp := ts.read(c)
		if resp.Status != proto.StatusError || resp.Version != Version() {
			t.Errorf("answer %s %q with version %q, want error with version %q", resp.Status, resp.Message, resp.Version, Version())
		}
	})
}
