// Package approval is the approver channel's protocol: what a console or
// a web approver and the daemon say to each other (docs/approver-protocol.md).
//
// It holds the wire types ([Message], [Shown] and what they carry), a
// [Client] that speaks the channel from the approver's side, the signed
// decisions a passkey makes ([Statement], [Signed], [Signatures]), the
// public part of the daemon's passkeys ([PublicKey]), the [Approver]
// interface the daemon puts requests to, and the sheet ([NewSheet]): what a
// human judges a waiting request by, which every approver and every other
// surface that shows a request renders. The daemon's side of the channel
// (the broker that holds waiting requests and session grants, the list of
// running commands, the two-person count and the server of the channel)
// is package daemon's own and unexported: an approver needs only this
// package, and an agent only package client.
//
// Rules the human wrote are consulted first; a request that no rule
// allows or denies is put to a human through an [Approver]. The agent's
// socket never reaches an Approver: a decision can only come from the
// root-only approver channel or the daemon's own terminal, so an agent
// cannot approve itself.
//
// # Stability
//
// The approver channel's protocol, as docs/approver-protocol.md specifies
// it, is stable: an approver written against that page keeps working. The
// Go types that carry it ([Message] and the types it holds, the Msg*,
// [Choice], [Verdict] and By* constants, and the Max* bounds) follow the
// protocol and change only as it does, by additions. [Approver], [Nobody],
// [Pending] and [Signatures] are the daemon's side of this package and may
// change with it. The sheet ([Sheet], [Item], [Part]) grows with what
// approvers show: a renderer must show an item or part of a kind it does
// not know, escaped as strictly as it can ([TermPart] does).
package approval

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/agent-sudo/agent-sudo/proto"
)

// Verdict is the outcome of asking for approval. The same values name it in
// the audit log's decision records and in the approver channel's resolved
// messages.
type Verdict string

// The verdicts. Only Allow lets a command run.
const (
	Allow Verdict = "allowed"
	Deny  Verdict = "denied"
	// Timeout: nobody decided within approval_timeout (By is
	// ByApprovalTimeout).
	Timeout Verdict = "timeout"
	// Withdrawn: the requesting client went away before a decision (By is
	// ByClient). Nobody is left to answer.
	Withdrawn Verdict = "withdrawn"
	// Failed: no decision could be reached, because the daemon is shutting
	// down (By is ByShutdown) or the approver failed (ByApprover). The
	// agent is answered with an error.
	Failed Verdict = "error"
)

// The deciders of the verdicts that neither a rule nor a human reached
// (Decision.By).
const (
	ByApprovalTimeout = "approval_timeout"
	ByClient          = "client"
	ByShutdown        = "daemon shutting down"
	ByApprover        = "approver"
	// ByNoApprover denies a non-interactive request (Pending.NonInteractive)
	// that no approver was connected to answer.
	ByNoApprover = "no approver connected (non_interactive)"
)

// Unanswered is the decision for a question whose ctx ended before anyone
// decided, from the cause of ctx's end: Withdrawn when it is ErrWithdrawn,
// Timeout when ctx's deadline passed, else Failed, by ByShutdown (the daemon
// ends a question only on those three). The broker tells consoles this
// decision and the daemon records it, so the two always agree. It has no
// Message: the daemon writes the one for the agent.
func Unanswered(ctx context.Context) Decision {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrWithdrawn):
		return Decision{Verdict: Withdrawn, By: ByClient}
	case errors.Is(cause, context.DeadlineExceeded):
		return Decision{Verdict: Timeout, By: ByApprovalTimeout}
	default:
		return Decision{Verdict: Failed, By: ByShutdown}
	}
}

// Decision is a verdict and who reached it.
type Decision struct {
	Verdict Verdict
	// By names the decider for the audit log: `rule "apt installs"`, or the
	// console's uid and tty.
	By string
	// Message is an optional note for the agent (a denial's reason).
	Message string
	// Approver is who was behind the console that decided, as the daemon
	// read it from /proc; nil for any other decider.
	Approver *Person
	// Signed is the passkey's signature when the decision was signed.
	Signed *SignedBy
	// Approvals are the earlier allows of a request that needed more than
	// one person (the two-person rule); the last allow is By.
	Approvals []Approval
}

// Pending is a request waiting for a human, with everything the human must
// see to decide.
type Pending struct {
	Request *proto.Request
	// Peer is the requesting process, resolved once by the daemon from the
	// kernel's credentials of the connection (never from the request).
	Peer PeerInfo
	// Programs holds each stage's program as it will really be executed.
	Programs []Program
	// Cwd is the resolved working directory, CwdChain its symlink chain
	// (empty when none) and CwdWritable who other than root can write it.
	// An empty Cwd means the request's, or "/".
	Cwd         string
	CwdChain    []string
	CwdWritable []Writable
	// RunAs names the user the pipeline will run as.
	RunAs string
	// Why says why the rules ask a human (Shown.Why).
	Why string
	// Received is when the daemon accepted the request; Deadline is when it
	// times out if nobody decides.
	Received, Deadline time.Time
	// DaemonHost is the daemon's own host name (Shown.DaemonHost).
	DaemonHost string
	// Record is the hash of the request's request record in the audit
	// log, which a signed decision must name (Statement.Record).
	Record string
	// Approvals is how many different people must allow the request (the
	// two-person rule); 0 and 1 mean one.
	Approvals int
	// Waiting, when set, is called once the request waits for a human (no
	// session grant covered it), with the approvers connected, and again,
	// from the same goroutine, each time that count changes while it
	// waits; it must return promptly.
	Waiting func(Approvers)
	// NonInteractive: the client asked not to wait when nobody could
	// answer (sudo -n). When no rule or grant decided and no approver is
	// connected at the moment the request would start waiting, Ask returns
	// ErrNoApprover and nothing is announced.
	NonInteractive bool
}

// Approvers counts the approver connections of the broker: Consoles are
// those that decide with plain decisions (a terminal console), Web those
// that sent signed_only (a web approver relaying passkey-signed
// decisions). Whether a person is signed in at a web approver's page is
// not known to the daemon.
type Approvers struct {
	Consoles, Web int
}

// ErrNoApprover: the request asked not to wait (Pending.NonInteractive)
// and no approver was connected to answer it.
var ErrNoApprover = errors.New("no approver console or web approver is connected to answer it")

// Shown returns what a human is shown of p.
func (p *Pending) Shown() *Shown {
	r := p.Request
	cwd := p.Cwd
	if cwd == "" {
		cwd = r.Cwd
	}
	if cwd == "" {
		cwd = "/"
	}
	s := &Shown{
		ID: r.ID, Session: r.Session, Host: r.Host, Reason: r.Reason, Why: strings.ToValidUTF8(p.Why, "\uFFFD"), Time: r.Time,
		Pipeline: r.Pipeline, Programs: p.Programs, Env: r.Env, Cwd: cwd,
		CwdChain: p.CwdChain, CwdWritable: p.CwdWritable,
		Privileged: r.Privileged, RunAs: strings.ToValidUTF8(p.RunAs, "\uFFFD"), ForwardAgent: r.ForwardAgent,
		Stdin: NewStdinShown(r.Stdin),
		// The peer's name and exe come from the system, not the validated
		// request, and may not be UTF-8; the hash must cover exactly what
		// the console receives, so they are made valid first.
		Peer:     p.Peer.valid(),
		Received: p.Received, Deadline: p.Deadline, DaemonHost: strings.ToValidUTF8(p.DaemonHost, "\uFFFD"),
	}
	if p.Approvals > 1 {
		s.Approvals = p.Approvals
	}
	return s
}

// Approver puts a pending request to a human. Ask blocks until a decision
// is made or ctx is done; on ctx's end it returns ctx's error and the caller
// turns it into a decision with Unanswered. Implementations must fail closed: any
// error or ambiguity is not an Allow.
type Approver interface {
	Ask(ctx context.Context, p *Pending) (Decision, error)
}

// Nobody is the Approver used when no human channel is configured: every
// question waits for its deadline, so an unruled request times out rather
// than running or being denied by a machine.
type Nobody struct{}

var _ Approver = Nobody{}

// Ask waits for ctx to end and returns its error.
func (Nobody) Ask(ctx context.Context, _ *Pending) (Decision, error) {
	<-ctx.Done()
	return Decision{}, ctx.Err()
}

// Approval is one person's allow of a request that needs more than one,
// as the audit log records it.
type Approval struct {
	// By names the console (or the passkey and its relay).
	By string `json:"by"`
	// Person is who was behind a console; nil for a passkey.
	Person *Person `json:"person,omitempty"`
	// Signed is the passkey's signature when it was signed.
	Signed *SignedBy `json:"signed,omitempty"`
	// Identity is the person as the two-person rule told people apart:
	// "uid N" (a console's login uid, or the login user a passkey is
	// named after) or "passkey NAME" (a passkey not named after a user).
	Identity string `json:"identity"`
}
