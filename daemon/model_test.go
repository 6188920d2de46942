package daemon

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"pgregory.net/rapid"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestApprovalModel is a model of the approval core: a state-machine
// property test that drives the real Server (rules, plans, the replay cache
// and the freshness check), the real broker (waiting requests, decisions,
// session grants) and the real approver channel with two consoles, through
// random interleavings of requests (fresh, stale, centuries away, replayed),
// decisions from either console (right, wrong and stale hashes, two at once),
// withdrawals, the clock moving (grant expiry, the replay window), reloads
// that change the rules, and restarts. After every step it checks what
// docs/security.md promises against a small reference model:
//
//   - nothing runs without an allow rule, a live session grant for that
//     exact request, or a human's allow bound to that exact request (its id
//     and hash): every pipeline ran exactly as often as the model allowed it;
//   - a decision for one request never applies to another (a decision with
//     another request's hash is refused and the request keeps waiting);
//   - the first decision wins (of two at once exactly one is accepted, and the
//     outcome is the winner's);
//   - a withdrawn request never runs;
//   - a request dated outside max_clock_skew is refused, however far away,
//     and a request id that was accepted once is never accepted again;
//   - every pipeline that ran had its exec record in the audit log before
//     its first stage started.
//
// Options.Exec stands in for the runner, so nothing runs and no root is
// needed. approval_timeout runs on the real clock and is not driven here
// (TestServerRefusals covers a timeout's outcome). make test runs the
// default number of checks (a fifth of it with -short); make model runs it
// longer.
func TestApprovalModel(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		m := newApprovalModel(t, rt)
		defer m.close()
		rt.Repeat(map[string]func(*rapid.T){
			"send":     m.send,
			"replay":   m.replay,
			"decide":   m.decide,
			"race":     m.race,
			"stale":    m.decideResolved,
			"withdraw": m.withdraw,
			"advance":  m.advance,
			"reload":   m.reload,
			"restart":  m.restart,
			"":         m.check,
		})
	})
}

const (
	modelSkew     = 30 * time.Second
	modelGrantTTL = 90*time.Second + 500*time.Millisecond
	// modelMaxWaiting bounds the requests waiting for a human at once; each
	// holds a connection.
	modelMaxWaiting = 6
	// modelWait bounds every wait for an event of the daemon's.
	modelWait = 20 * time.Second
)

// The pipelines the model sends: one a rule allows, one a rule denies, and
// two that ask a human unless a reload added the rule for "echo a".
var modelPipelines = [][]string{{"true"}, {"false"}, {"echo", "a"}, {"echo", "b"}}

// modelRequest is one request line sent, and what the model expects of it.
type modelRequest struct {
	n       int
	id      string
	line    string
	session string
	argv    []string
	reqTime time.Time
	conn    net.Conn
	resp    chan *proto.Response
	// waiting: announced to the consoles and not yet resolved.
	waiting bool
	hash    string
	// accepted: it passed the freshness and replay checks, so its id is
	// used up.
	accepted bool
}

type modelGrant struct {
	session string
	argv    []string
	expires time.Time
}

// approvalModel is the system under test and the reference model.
type approvalModel struct {
	t   *testing.T
	dir string

	// The clock the server and the broker read.
	clockMu sync.Mutex
	clock   time.Time

	// The system under test; replaced by a restart.
	srv      *Server
	log      *audit.Log
	cancel   context.CancelFunc
	served   chan error
	consoles [2]*modelConsole
	logs     *daemontest.Buffer

	// Exec's view: how often each pipeline ran, and any violation it saw.
	mu         sync.Mutex
	ran        map[string]int
	violations []string

	// The reference model.
	echoRule bool
	grants   []modelGrant
	reqs     []*modelRequest
	usedIDs  map[string]bool
	expected map[string]int
}

func newApprovalModel(t *testing.T, rt *rapid.T) *approvalModel {
	dir, err := os.MkdirTemp("", "asdm")
	if err != nil {
		rt.Fatal(err)
	}
	m := &approvalModel{t: t, dir: dir, clock: time.Now().UTC().Truncate(time.Second),
		ran: map[string]int{}, usedIDs: map[string]bool{}, expected: map[string]int{}}
	// One audit log for every daemon of the model: a restart reads it back
	// as a new process would. It is not closed and opened again: its lock
	// could still be held, for an instant, by a process another test of
	// this package forked and that has not exec'd yet.
	m.log, err = audit.Open(filepath.Join(dir, "audit.jsonl"), audit.Options{Now: m.now})
	if err != nil {
		rt.Fatal(err)
	}
	m.start(rt)
	return m
}

func (m *approvalModel) now() time.Time {
	m.clockMu.Lock()
	defer m.clockMu.Unlock()
	return m.clock
}

// config is the server's configuration, with the "echo a" rule when the
// model has it.
func (m *approvalModel) config(rt *rapid.T) *config.Config {
	text := fmt.Sprintf(`
socket = %q
approver_socket = %q
audit_log = %q
exec = "direct"
cgroup = "best-effort"
allowed_users = ["%d"]
approval_timeout = "10m"
shutdown_timeout = "5s"
max_clock_skew = %q
session_grant_ttl = %q
max_connections = 64
max_connections_per_user = 32
max_requests_per_minute = 60000

[[rule]]
name = "allow true"
action = "allow"
match = ["true"]

[[rule]]
name = "deny false"
action = "deny"
match = ["false"]
`, filepath.Join(m.dir, "agent.sock"), filepath.Join(m.dir, "approver.sock"), filepath.Join(m.dir, "audit.jsonl"),
		os.Getuid(), modelSkew.String(), modelGrantTTL.String())
	if m.echoRule {
		text += `
[[rule]]
name = "allow echo a"
action = "allow"
match = ["echo", "a"]
`
	}
	cfg, err := config.Parse([]byte(text))
	if err != nil {
		rt.Fatalf("configuration: %v\n%s", err, text)
	}
	return cfg
}

// start builds and serves a daemon: a new Server, broker and replay cache
// over the same audit log, with two consoles connected.
func (m *approvalModel) start(rt *rapid.T) {
	cfg := m.config(rt)
	m.logs = &daemontest.Buffer{}
	logger := slog.New(slog.NewTextHandler(m.logs, nil))
	broker := newBroker(modelGrantTTL, m.now)
	var err error
	m.srv, err = New(cfg, Options{Logger: logger, Audit: m.log, Now: m.now, Approver: broker, Exec: m.exec})
	if err != nil {
		rt.Fatal(err)
	}
	ln, err := net.Listen("unix", cfg.Socket)
	if err != nil {
		rt.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel, m.served = cancel, make(chan error, 1)
	go func() { m.served <- m.srv.Serve(ctx, ln) }()
	channel := &approverChannel{Broker: broker, Version: "model", Log: logger}
	for i := range m.consoles {
		m.consoles[i] = newModelConsole(ctx, channel, i)
	}
}

// stop shuts the daemon down and waits until every request has ended.
func (m *approvalModel) stop(rt *rapid.T) {
	m.cancel()
	err := <-m.served
	m.served = nil
	if err != nil {
		rt.Errorf("Serve: %v", err)
	}
	for _, c := range m.consoles {
		c.close()
	}
}

// close ends the model: the daemon, if one serves, and the audit log.
func (m *approvalModel) close() {
	if m.served != nil {
		m.cancel()
		<-m.served
		for _, c := range m.consoles {
			c.close()
		}
	}
	if m.log != nil {
		m.log.Close()
	}
	for _, r := range m.reqs {
		if r.conn != nil {
			r.conn.Close()
		}
	}
	os.RemoveAll(m.dir)
}

// exec stands in for the runner. It checks that the pipeline's exec record
// is in the audit log already, then answers as a pipeline that exited 0.
func (m *approvalModel) exec(_ context.Context, spec runner.Spec) (*runner.Result, error) {
	key := strings.Join(spec.Stages[0].Args, " ")
	m.mu.Lock()
	m.ran[key]++
	n := m.ran[key]
	m.mu.Unlock()
	if got := execRecords(filepath.Join(m.dir, "audit.jsonl"), key); got < n {
		m.mu.Lock()
		m.violations = append(m.violations, fmt.Sprintf("%q started as run %d with only %d exec records for it in the audit log", key, n, got))
		m.mu.Unlock()
	}
	now := time.Now()
	res := &runner.Result{Stdout: runner.NewOutput([]byte("ran\n")), StdoutSHA256: sha256.Sum256([]byte("ran\n")), Started: now, Ended: now,
		Stages: make([]runner.StageResult, len(spec.Stages))}
	for i := range res.Stages {
		res.Stages[i].StderrSHA256 = sha256.Sum256(nil)
	}
	return res, nil
}

// execRecords counts the exec records in the audit log at path whose
// request's pipeline is the one stage key. Only complete lines are read:
// another request's record may be half written.
func execRecords(path, key string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pipelines := map[string]string{}
	n := 0
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		var rec struct {
			Type    audit.Type `json:"type"`
			ID      string     `json:"id"`
			Request *struct {
				Pipeline [][]string `json:"pipeline"`
			} `json:"request"`
		}
		if json.Unmarshal(data[:i], &rec) == nil {
			switch {
			case rec.Type == audit.TypeRequest && rec.Request != nil && len(rec.Request.Pipeline) == 1:
				pipelines[rec.ID] = strings.Join(rec.Request.Pipeline[0], " ")
			case rec.Type == audit.TypeExec && pipelines[rec.ID] == key:
				n++
			}
		}
		data = data[i+1:]
	}
	return n
}

// --- actions ------------------------------------------------------------------

// The request times the model sends, relative to the daemon's clock: within
// the skew, just outside it, and far outside it (where a time.Duration
// between the two saturates).
var modelTimes = []string{"now", "skew-", "-skew+", "skew+", "-skew-", "9999", "0001", "+300y", "-300y"}

func (m *approvalModel) requestTime(kind string) time.Time {
	now := m.now()
	switch kind {
	case "skew-":
		return now.Add(modelSkew - time.Second)
	case "-skew+":
		return now.Add(-modelSkew + time.Second)
	case "skew+":
		return now.Add(modelSkew + time.Second)
	case "-skew-":
		return now.Add(-modelSkew - time.Second)
	case "9999":
		return time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	case "0001":
		return time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC)
	case "+300y":
		return now.AddDate(300, 0, 0)
	case "-300y":
		return now.AddDate(-300, 0, 0)
	}
	return now
}

// fresh reports whether t passes the freshness check now.
func (m *approvalModel) fresh(t time.Time) bool {
	now := m.now()
	return !t.Before(now.Add(-modelSkew)) && !t.After(now.Add(modelSkew))
}

func (m *approvalModel) waiting() []*modelRequest {
	var w []*modelRequest
	for _, r := range m.reqs {
		if r.waiting {
			w = append(w, r)
		}
	}
	return w
}

// send sends a new request.
func (m *approvalModel) send(rt *rapid.T) {
	argv := rapid.SampledFrom(modelPipelines).Draw(rt, "pipeline")
	session := rapid.SampledFrom([]string{"s1", "s2"}).Draw(rt, "session")
	when := rapid.SampledFrom(modelTimes).Draw(rt, "time")
	r := &modelRequest{n: len(m.reqs), id: uuid.NewString(), session: session, argv: argv, reqTime: m.requestTime(when)}
	line, err := json.Marshal(map[string]any{"id": r.id, "time": r.reqTime.Format(time.RFC3339Nano), "session": session,
		"host": "model", "reason": "model", "pipeline": [][]string{argv}})
	if err != nil {
		rt.Fatal(err)
	}
	r.line = string(line)
	m.deliver(rt, r)
}

// replay sends the very line of an earlier request again.
func (m *approvalModel) replay(rt *rapid.T) {
	if len(m.reqs) == 0 {
		rt.Skip("nothing sent yet")
	}
	old := rapid.SampledFrom(m.reqs).Draw(rt, "replayed")
	r := &modelRequest{n: len(m.reqs), id: old.id, line: old.line, session: old.session, argv: old.argv, reqTime: old.reqTime}
	m.deliver(rt, r)
}

// deliver sends r's line on a connection of its own and checks what the
// daemon does with it against the model: refused, decided by a rule or a
// grant, or announced to the consoles.
func (m *approvalModel) deliver(rt *rapid.T, r *modelRequest) {
	if len(m.waiting()) >= modelMaxWaiting {
		rt.Skip("enough requests waiting")
	}
	m.reqs = append(m.reqs, r)
	conn, err := net.Dial("unix", filepath.Join(m.dir, "agent.sock"))
	if err != nil {
		rt.Fatal(err)
	}
	r.conn, r.resp = conn, make(chan *proto.Response, 1)
	if _, err := conn.Write([]byte(r.line + "\n")); err != nil {
		rt.Fatal(err)
	}
	go func() {
		resp, err := proto.ReadResponse(bufio.NewReader(conn))
		if err != nil {
			resp = nil
		}
		r.resp <- resp
	}()

	key := strings.Join(r.argv, " ")
	switch {
	case !m.fresh(r.reqTime):
		m.expectAnswer(rt, r, proto.StatusError, "a request dated "+r.reqTime.Format(time.RFC3339)+" is outside the skew")
		return
	case m.usedIDs[r.id]:
		m.expectAnswer(rt, r, proto.StatusError, "a replayed id")
		return
	}
	r.accepted = true
	m.usedIDs[r.id] = true
	switch {
	case key == "true" || (key == "echo a" && m.echoRule):
		m.expected[key]++
		m.expectAnswer(rt, r, proto.StatusOK, "allowed by a rule")
	case key == "false":
		m.expectAnswer(rt, r, proto.StatusDenied, "denied by a rule")
	case m.liveGrant(r.session, r.argv):
		m.expected[key]++
		m.expectAnswer(rt, r, proto.StatusOK, "a live session grant")
	default:
		// It waits for a human: the consoles are told, and it is not
		// answered (an answer ends the wait at once).
		announced := make(chan approval.Message, 1)
		go func() {
			if msg, ok := m.consoles[0].wait(func(msg approval.Message) bool { return msg.Type == approval.MsgPending && msg.ID == r.id }, 0); ok {
				announced <- msg
			}
		}()
		select {
		case msg := <-announced:
			r.hash, r.waiting = msg.Hash, true
		case resp := <-r.resp:
			rt.Fatalf("request %d (%s) was answered %+v, want it to wait for a human", r.n, key, resp)
		case <-time.After(modelWait):
			rt.Fatalf("request %d (%s): neither answered nor announced to the consoles within %s", r.n, key, modelWait)
		}
		select {
		case resp := <-r.resp:
			rt.Fatalf("request %d (%s) was answered %+v while it waits for a human", r.n, key, resp)
		default:
		}
	}
}

func (m *approvalModel) liveGrant(session string, argv []string) bool {
	now := m.now()
	return slices.ContainsFunc(m.grants, func(g modelGrant) bool {
		return g.session == session && slices.Equal(g.argv, argv) && now.Before(g.expires)
	})
}

// expectAnswer waits for r's answer and checks its status.
func (m *approvalModel) expectAnswer(rt *rapid.T, r *modelRequest, want proto.Status, why string) {
	select {
	case resp := <-r.resp:
		if resp == nil {
			rt.Fatalf("request %d (%s, time %s): no answer, want %s (%s)\n%s", r.n, r.argv, r.reqTime.Format(time.RFC3339), want, why, m.logs)
		}
		if resp.Status != want {
			rt.Fatalf("request %d (%s, time %s): answered %s %q, want %s (%s)", r.n, r.argv, r.reqTime.Format(time.RFC3339), resp.Status, resp.Message, want, why)
		}
	case <-time.After(modelWait):
		rt.Fatalf("request %d (%s): no answer within %s, want %s (%s)", r.n, r.argv, modelWait, want, why)
	}
	r.conn.Close()
	r.conn = nil
}

// decide sends one console's decision on a waiting request, with its own
// hash, another waiting request's, or a made-up one.
func (m *approvalModel) decide(rt *rapid.T) {
	waiting := m.waiting()
	if len(waiting) == 0 {
		rt.Skip("nothing waiting")
	}
	r := rapid.SampledFrom(waiting).Draw(rt, "request")
	c := m.consoles[rapid.IntRange(0, 1).Draw(rt, "console")]
	choice := rapid.SampledFrom([]approval.Choice{approval.AllowOnce, approval.AllowSession, approval.DenyOnce}).Draw(rt, "choice")
	hash := r.hash
	switch rapid.SampledFrom([]string{"own", "other", "made-up"}).Draw(rt, "hash") {
	case "other":
		for _, o := range waiting {
			if o.hash != r.hash {
				hash = o.hash
			}
		}
	case "made-up":
		hash = strings.Repeat("0", 64)
	}
	res := c.decide(rt, r.id, hash, choice)
	if hash != r.hash {
		if res.OK || !strings.Contains(res.Error, "hash mismatch") {
			rt.Fatalf("a decision with another hash on request %d was answered %+v, want a hash mismatch", r.n, res)
		}
		select {
		case resp := <-r.resp:
			rt.Fatalf("request %d was answered %v after a decision with another hash", r.n, resp)
		default:
		}
		return
	}
	if !res.OK {
		rt.Fatalf("a decision on waiting request %d was refused: %s", r.n, res.Error)
	}
	m.decided(rt, r, choice)
}

// decided applies the accepted decision choice on r to the model and checks
// r's answer.
func (m *approvalModel) decided(rt *rapid.T, r *modelRequest, choice approval.Choice) {
	r.waiting = false
	key := strings.Join(r.argv, " ")
	switch choice {
	case approval.DenyOnce:
		m.expectAnswer(rt, r, proto.StatusDenied, "denied by a console")
	case approval.AllowSession:
		m.grants = append(m.grants, modelGrant{session: r.session, argv: r.argv, expires: m.now().Add(modelGrantTTL)})
		fallthrough
	default:
		m.expected[key]++
		m.expectAnswer(rt, r, proto.StatusOK, "allowed by a console")
	}
}

// race sends two decisions on one waiting request from both consoles at
// once: exactly one is accepted, and the outcome is its.
func (m *approvalModel) race(rt *rapid.T) {
	waiting := m.waiting()
	if len(waiting) == 0 {
		rt.Skip("nothing waiting")
	}
	r := rapid.SampledFrom(waiting).Draw(rt, "request")
	choices := []approval.Choice{approval.AllowOnce, approval.AllowSession, approval.DenyOnce}
	var pick [2]approval.Choice
	for i := range pick {
		pick[i] = rapid.SampledFrom(choices).Draw(rt, fmt.Sprintf("choice %d", i))
	}
	var results [2]approval.Message
	var wg sync.WaitGroup
	for i := range pick {
		wg.Go(func() { results[i] = m.consoles[i].decideNoWait(r.id, r.hash, pick[i]) })
	}
	wg.Wait()
	var winner []int
	for i, res := range results {
		if res.Type == "" {
			rt.Fatalf("console %d got no result for its decision on request %d", i, r.n)
		}
		if res.OK {
			winner = append(winner, i)
		} else if !strings.Contains(res.Error, "no longer waiting") {
			rt.Fatalf("console %d's losing decision on request %d was refused with %q, want 'no longer waiting'", i, r.n, res.Error)
		}
	}
	if len(winner) != 1 {
		rt.Fatalf("two consoles decided request %d at once: %d decisions accepted, want exactly 1", r.n, len(winner))
	}
	m.decided(rt, r, pick[winner[0]])
}

// decideResolved decides a request that no longer waits: refused, nothing
// happens.
func (m *approvalModel) decideResolved(rt *rapid.T) {
	var done []*modelRequest
	for _, r := range m.reqs {
		if r.hash != "" && !r.waiting {
			done = append(done, r)
		}
	}
	if len(done) == 0 {
		rt.Skip("nothing resolved")
	}
	r := rapid.SampledFrom(done).Draw(rt, "request")
	c := m.consoles[rapid.IntRange(0, 1).Draw(rt, "console")]
	if res := c.decide(rt, r.id, r.hash, approval.AllowOnce); res.OK {
		rt.Fatalf("an allow for request %d, which no longer waits, was accepted", r.n)
	}
}

// withdraw closes a waiting request's connection: the consoles are told it
// was withdrawn, and it never runs.
func (m *approvalModel) withdraw(rt *rapid.T) {
	waiting := m.waiting()
	if len(waiting) == 0 {
		rt.Skip("nothing waiting")
	}
	r := rapid.SampledFrom(waiting).Draw(rt, "request")
	r.conn.Close()
	r.conn, r.waiting = nil, false
	msg := m.consoles[0].await(rt, func(msg approval.Message) bool { return msg.Type == approval.MsgResolved && msg.ID == r.id },
		"the resolved message of withdrawn request "+r.id)
	if msg.Verdict != approval.Withdrawn {
		rt.Fatalf("withdrawn request %d was resolved %s by %s", r.n, msg.Verdict, msg.By)
	}
}

// advance moves the daemon's clock forward.
func (m *approvalModel) advance(rt *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{time.Second, 10 * time.Second, 31 * time.Second, 10 * time.Minute}).Draw(rt, "advance")
	m.clockMu.Lock()
	m.clock = m.clock.Add(d)
	m.clockMu.Unlock()
}

// reload adds or removes the rule that allows "echo a".
func (m *approvalModel) reload(rt *rapid.T) {
	m.echoRule = !m.echoRule
	if _, err := m.srv.Reload(m.config(rt)); err != nil {
		rt.Fatalf("reload: %v", err)
	}
}

// restart stops the daemon, which fails every waiting request, and starts a
// new one over the same audit log: grants are gone.
func (m *approvalModel) restart(rt *rapid.T) {
	waiting := m.waiting()
	m.stop(rt)
	for _, r := range waiting {
		r.waiting = false
		m.expectAnswer(rt, r, proto.StatusError, "the daemon stopped while it waited")
	}
	m.grants = nil
	m.start(rt)
}

// check compares what ran with the model, and reports what Exec saw.
func (m *approvalModel) check(rt *rapid.T) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.violations) > 0 {
		rt.Fatalf("%s", strings.Join(m.violations, "\n"))
	}
	for _, argv := range modelPipelines {
		key := strings.Join(argv, " ")
		if m.ran[key] != m.expected[key] {
			rt.Fatalf("%q ran %d times, the model allowed %d", key, m.ran[key], m.expected[key])
		}
	}
}

// --- consoles -------------------------------------------------------------------

// modelConsole is one console on the approver channel: the channel's real
// Serve on one end of a pipe, the model on the other.
type modelConsole struct {
	n    int
	conn net.Conn
	enc  *json.Encoder
	done chan struct{}

	mu      sync.Mutex
	msgs    []approval.Message
	changed chan struct{}
	// taken counts the result messages already consumed, per id.
	taken map[string]int
}

func newModelConsole(ctx context.Context, channel *approverChannel, n int) *modelConsole {
	server, client := net.Pipe()
	c := &modelConsole{n: n, conn: client, enc: json.NewEncoder(client), done: make(chan struct{}),
		changed: make(chan struct{}, 1), taken: map[string]int{}}
	go func() {
		defer server.Close()
		channel.Serve(ctx, server, approverConsole{By: fmt.Sprintf("model console %d", n)})
	}()
	go func() {
		defer close(c.done)
		rd := bufio.NewReaderSize(client, 1<<16)
		for {
			line, err := rd.ReadBytes('\n')
			if err != nil {
				return
			}
			var msg approval.Message
			if json.Unmarshal(line, &msg) != nil {
				continue
			}
			c.mu.Lock()
			c.msgs = append(c.msgs, msg)
			c.mu.Unlock()
			select {
			case c.changed <- struct{}{}:
			default:
			}
		}
	}()
	return c
}

func (c *modelConsole) close() {
	c.conn.Close()
	<-c.done
}

// find returns the first message that match accepts, skipping skip of them.
func (c *modelConsole) find(match func(approval.Message) bool, skip int) (approval.Message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, msg := range c.msgs {
		if match(msg) {
			if skip == 0 {
				return msg, true
			}
			skip--
		}
	}
	return approval.Message{}, false
}

// wait waits up to modelWait for the (skip+1)th message match accepts.
func (c *modelConsole) wait(match func(approval.Message) bool, skip int) (approval.Message, bool) {
	deadline := time.NewTimer(modelWait)
	defer deadline.Stop()
	for {
		if msg, ok := c.find(match, skip); ok {
			return msg, true
		}
		select {
		case <-c.changed:
		case <-c.done:
			return c.find(match, skip)
		case <-deadline.C:
			return approval.Message{}, false
		}
	}
}

func (c *modelConsole) await(rt *rapid.T, match func(approval.Message) bool, what string) approval.Message {
	msg, ok := c.wait(match, 0)
	if !ok {
		rt.Fatalf("console %d: no %s within %s", c.n, what, modelWait)
	}
	return msg
}

// decideNoWait sends a decision and returns its result, or a zero message
// when none came.
func (c *modelConsole) decideNoWait(id, hash string, choice approval.Choice) approval.Message {
	c.mu.Lock()
	skip := c.taken[id]
	c.taken[id]++
	c.mu.Unlock()
	if err := c.enc.Encode(approval.Message{Type: approval.MsgDecide, ID: id, Hash: hash, Decision: choice}); err != nil && !errors.Is(err, net.ErrClosed) {
		return approval.Message{}
	}
	msg, _ := c.wait(func(msg approval.Message) bool { return msg.Type == approval.MsgResult && msg.ID == id }, skip)
	return msg
}

func (c *modelConsole) decide(rt *rapid.T, id, hash string, choice approval.Choice) approval.Message {
	msg := c.decideNoWait(id, hash, choice)
	if msg.Type == "" {
		rt.Fatalf("console %d: no result for its decision on %s within %s", c.n, id, modelWait)
	}
	return msg
}
