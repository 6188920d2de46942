package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Shown is everything a human sees about a pending request. The approver
// channel sends it to consoles, and a decision must carry the hash of the
// Shown it was made on: a decision about anything else is rejected, so what
// was approved is exactly what runs.
type Shown struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	Host    string `json:"host"`
	Reason  string `json:"reason"`
	// Why is the daemon's own text saying why the request needs a human:
	// which stages no rule applies to, which rule asks, which allow rules
	// were passed over and why ("no rule applies to stage 2 of 2:
	// /usr/bin/curl"). It is unbounded (it names every stage), so a
	// summary leaves it out.
	Why      string     `json:"why,omitempty"`
	Time     time.Time  `json:"time"`
	Pipeline [][]string `json:"pipeline"`
	// Programs holds, per stage, the program file that will be executed:
	// its symlink chain, its identity and content hash, and what non-root
	// users could change about it.
	Programs []Program         `json:"programs"`
	Env      map[string]string `json:"env"`
	// Cwd is the working directory, resolved: absolute and symlink-free.
	Cwd string `json:"cwd"`
	// CwdChain is the directory as requested and every hop to Cwd, when
	// symlinks were involved; empty otherwise.
	CwdChain []string `json:"cwd_chain,omitempty"`
	// CwdWritable is set when someone other than root can write Cwd (so
	// the requester may be able to change what the command finds there).
	CwdWritable  []Writable `json:"cwd_writable,omitempty"`
	Privileged   bool       `json:"privileged"`
	RunAs        string     `json:"run_as"`
	ForwardAgent bool       `json:"forward_agent"`
	// Stdin is what the first stage reads (the stdin extension); nil when
	// the request has none, so that such a request hashes as before.
	Stdin *StdinShown `json:"stdin,omitempty"`
	Peer  PeerInfo    `json:"peer"`
	// DaemonHost is the daemon's own host name, beside Host, which the
	// agent claims; empty from a daemon that does not say.
	DaemonHost string `json:"daemon_host,omitempty"`
	// Received is when the daemon accepted the request; Deadline is when it
	// times out if nobody decides.
	Received time.Time `json:"received"`
	Deadline time.Time `json:"deadline"`
	// Approvals is how many different people must allow the request (the
	// two-person rule); absent when one is enough, so that such a request
	// hashes as before.
	Approvals int `json:"approvals,omitempty"`
}

// StdinShown is the input a request feeds to its first stage. Data is the
// full content: the hash of the Shown covers it, so a decision binds exactly
// these bytes, and the daemon feeds exactly the request's bytes.
type StdinShown struct {
	// Size is len(Data).
	Size int `json:"size"`
	// SHA256 is the lower-case hex SHA-256 of Data.
	SHA256 string `json:"sha256"`
	// Data is the content (base64 in JSON).
	Data []byte `json:"data"`
}

// NewStdinShown describes data, or returns nil when data is empty.
func NewStdinShown(data []byte) *StdinShown {
	if len(data) == 0 {
		return nil
	}
	sum := sha256.Sum256(data)
	return &StdinShown{Size: len(data), SHA256: hex.EncodeToString(sum[:]), Data: data}
}

// Program is one stage's program file as the daemon will execute it.
type Program struct {
	// Chain is every path from the name the program was found by to the
	// file that runs, both included: Chain[0] is argv[0] when absolute,
	// else its match in the secure path; each following element is where a
	// symlink led; the last is the absolute, symlink-free path of the file.
	// It is a list so that no file name can forge a hop.
	Chain []string `json:"chain"`
	// Dev, Ino and SHA256 identify the file the daemon opened when it
	// planned the request and will execute: a decision and a session grant
	// cover this file with this content, not whatever the path holds later.
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	SHA256 string `json:"sha256"`
	// Writable lists every directory on the way and the file itself when
	// someone other than root can write it, that is, could replace or
	// rewrite what runs. Non-empty means "allow for this session" is
	// refused for the request.
	Writable []Writable `json:"writable,omitempty"`
}

// Writable is a path someone other than root can write, and who.
type Writable struct {
	Path string `json:"path"`
	// Why is the daemon's description from the owner and mode ("the
	// directory is owned by uid 1001").
	Why string `json:"why"`
}

// GrantRefusal says why a session grant cannot be given for s (it needs
// more than one person, or a program someone other than root can replace
// or rewrite), or returns "". The broker refuses allow_session for this
// reason and the console shows it and sends no allow_session: both ask
// here, so they agree.
func (s *Shown) GrantRefusal() string {
	if s.Approvals > 1 {
		return fmt.Sprintf("this request needs %d different people, so it is not granted for the session; allow it once", s.Approvals)
	}
	for i, p := range s.Programs {
		if len(p.Writable) > 0 {
			return fmt.Sprintf("stage %d's program can be changed by someone other than root, so it is not granted for the session; allow it once after checking it", i+1)
		}
	}
	return ""
}

// PeerInfo is the requesting process as the kernel identified it: the
// daemon fills it in once from the connection's socket credentials, so the
// broker and the consoles never see raw credentials nor resolve them again.
type PeerInfo struct {
	UID uint32 `json:"uid"`
	// User is the uid's user name, or the uid in decimal when it has none.
	User string `json:"user"`
	PID  int32  `json:"pid"`
	// Exe is the target of /proc/PID/exe read at accept time, for the
	// record only (a PID can be reused).
	Exe string `json:"exe"`
	// Ancestry is the requesting process and its parents as the daemon
	// read them from /proc at accept time; nil when it was not read.
	Ancestry *Ancestry `json:"ancestry,omitempty"`
	// Container is set when the requester lives in a user, pid or mount
	// namespace other than the daemon's (a socket bind-mounted into a
	// container): which namespaces, its uid inside, its init's cgroup.
	Container *Container `json:"container,omitempty"`
}

// valid returns p with every string made valid UTF-8: names and paths
// come from the system, not the validated request, and the hash must cover
// exactly what a console decodes.
func (p PeerInfo) valid() PeerInfo {
	v := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
	out := PeerInfo{UID: p.UID, User: v(p.User), PID: p.PID, Exe: v(p.Exe)}
	if a := p.Ancestry; a != nil {
		c := &Ancestry{End: v(a.End), Changed: v(a.Changed)}
		for _, h := range a.Hops {
			hop := Hop{PID: h.PID, Exe: v(h.Exe), Comm: v(h.Comm), ArgvCut: h.ArgvCut}
			for _, arg := range h.Argv {
				hop.Argv = append(hop.Argv, v(arg))
			}
			c.Hops = append(c.Hops, hop)
		}
		out.Ancestry = c
	}
	if c := p.Container; c != nil {
		cc := *c
		cc.Cgroup = v(c.Cgroup)
		out.Container = &cc
	}
	return out
}

// Hash returns the hex SHA-256 of s's canonical JSON encoding (struct fields
// in declaration order, map keys sorted, times in RFC 3339 with
// nanoseconds), which binds a decision to exactly what was shown; "" when s
// cannot be encoded (Canonical says why), which matches no decision. The
// daemon and CheckHash use Canonical, which returns the error.
func (s *Shown) Hash() string {
	_, h, err := s.Canonical()
	if err != nil {
		return ""
	}
	return h
}

// Canonical returns the length of s's canonical JSON encoding and its hex
// SHA-256 (Hash), or why s cannot be encoded (a time outside what RFC 3339
// can write, such as an offset of 24 hours or more).
func (s *Shown) Canonical() (size int, hash string, err error) {
	b, err := json.Marshal(s)
	if err != nil {
		return 0, "", fmt.Errorf("the request cannot be encoded to be shown: %w", err)
	}
	sum := sha256.Sum256(b)
	return len(b), hex.EncodeToString(sum[:]), nil
}

// Choice is what a human decides.
type Choice string

// The choices a console can send.
const (
	AllowOnce    Choice = "allow_once"
	AllowSession Choice = "allow_session"
	DenyOnce     Choice = "deny"
)

// Grant is an "allow for this session" decision: the same pipeline, env,
// cwd and privilege from the same session and requesting uid are allowed
// without asking until Expires.
type Grant struct {
	ID       string     `json:"id"`
	Session  string     `json:"session"`
	UID      uint32     `json:"uid"`
	Pipeline [][]string `json:"pipeline"`
	// EnvKeys lists the names of the env entries the grant covers; the
	// values are matched exactly but kept out of listings.
	EnvKeys []string `json:"env_keys"`
	// Elided is set, and Pipeline empty, in a listing when the pipeline
	// was too long to list (see MaxGrantPipeline).
	Elided     *Elided `json:"elided,omitempty"`
	Privileged bool    `json:"privileged"`
	Cwd        string  `json:"cwd"`
	// StdinSHA256 is the hex SHA-256 of the stdin the grant covers (exactly
	// that content); empty when it covers only requests without stdin.
	StdinSHA256 string    `json:"stdin_sha256,omitempty"`
	By          string    `json:"by"`
	Created     time.Time `json:"created"`
	// Expires is Created plus the grant's lifetime, on the daemon's wall
	// clock when the grant was made. The daemon ends the grant on elapsed
	// time, which a clock step (NTP, a resumed VM) does not move: after a
	// step, or on an approver whose clock differs, Expires no longer says
	// when the grant ends. ExpiresInMS does.
	Expires time.Time `json:"expires"`
	// ExpiresInMS is the grant's time left, in milliseconds, as the
	// message is sent, on the elapsed-time clock that ends it: an
	// approver shows its expiry counted from when it received the
	// message, on its own elapsed-time clock. Absent (0) from daemons
	// older than this field, and for a grant ending within a millisecond.
	ExpiresInMS int64 `json:"expires_in_ms,omitempty"`
}

// Message types on the approver channel; see docs/approver-protocol.md.
const (
	MsgHello    = "hello"    // daemon -> console, first line
	MsgPending  = "pending"  // daemon -> console: a request waits
	MsgResolved = "resolved" // daemon -> console: a request no longer waits
	MsgGrants   = "grants"   // daemon -> console: the current session grants
	MsgResult   = "result"   // daemon -> console: answer to decide, revoke or detail
	MsgDecide   = "decide"   // console -> daemon
	MsgRevoke   = "revoke"   // console -> daemon
	// MsgDetail, console -> daemon: send the full text of a summarised
	// request; daemon -> console: that full text.
	MsgDetail = "detail"
	// MsgWatch, console -> daemon: send the running commands now and
	// whenever they change. A console that never sends it never gets
	// MsgRunning.
	MsgWatch = "watch"
	// MsgRunning, daemon -> console: the commands running now (after
	// MsgWatch).
	MsgRunning = "running"
	// MsgFinished, daemon -> web approver: how the request ID a passkey
	// allowed ended once it ran: Status (the agent's answer's status: ok,
	// error, timeout) and ExitCodes (each stage's). Sent only on a
	// connection that sent MsgSignedOnly, so that a console written before
	// it never sees it; the web approver's receipts say it.
	MsgFinished = "finished"
	// MsgStop, console -> daemon: stop the running command Run.
	MsgStop = "stop"
	// MsgOutput, console -> daemon: send the end of the output of the
	// running command Run; daemon -> console: that output.
	MsgOutput = "output"
	// MsgApproved, daemon -> console: the waiting request ID (Hash) that
	// needs more than one person (Shown.Approvals) was allowed by the
	// people ApprovedBy names, and waits for the rest. Sent after each
	// such allow, and on connect after the request's pending. A console
	// that does not know it ignores it.
	MsgApproved = "approved"
)

// Size bounds of the approver channel; see docs/approver-protocol.md.
const (
	// MaxLine bounds every line the daemon sends a console. A console must
	// accept lines of this length; the daemon never sends a longer one (a
	// detail that would be longer is answered with an error instead).
	MaxLine = 16 << 20
	// MaxInlineRequest bounds the canonical JSON of a request that a
	// pending message carries in full. A larger request is announced with
	// a Summary, and a console fetches its full text with a detail message
	// before it may be allowed.
	MaxInlineRequest = 32 << 10
	// MaxGrantPipeline bounds the JSON of a grant's pipeline in a grants
	// listing; a longer one is replaced by its size and SHA-256.
	MaxGrantPipeline = 2 << 10
	// MaxGrantsListed bounds the grants in one grants message; the rest
	// are counted in Message.GrantsOmitted.
	MaxGrantsListed = 256
	// MaxRunningListed bounds the commands in one running message; the
	// rest are counted in Message.RunningOmitted. A running command's
	// pipeline is bounded like a grant's (MaxGrantPipeline).
	MaxRunningListed = 256
	// MaxOutputLines and MaxOutputBytes bound each stream of an output
	// message: its last MaxOutputLines lines, and of those at most the
	// last MaxOutputBytes bytes.
	MaxOutputLines = 20
	MaxOutputBytes = 4 << 10
)

// Running is a command the daemon is running, as consoles list it.
type Running struct {
	// ID names the run for a stop or output message. The daemon assigns
	// it ("run1", "run2", ...); it is never reused while the daemon runs,
	// and means nothing to another daemon.
	ID string `json:"id"`
	// Request, Session and Host are the request's id, session and host,
	// as the agent sent them.
	Request string `json:"request"`
	Session string `json:"session"`
	Host    string `json:"host"`
	// Peer is the requesting process as the kernel identified it.
	Peer PeerInfo `json:"peer"`
	// Pipeline is the argv of each stage; nil, with Elided set, when it
	// is longer than MaxGrantPipeline.
	Pipeline   [][]string `json:"pipeline"`
	Elided     *Elided    `json:"elided,omitempty"`
	RunAs      string     `json:"run_as"`
	Privileged bool       `json:"privileged"`
	// By is who allowed it: a rule, a console, or a session grant.
	By string `json:"by"`
	// Started is when the daemon started it; a console shows the time
	// since.
	Started time.Time `json:"started"`
	// StoppedBy names the console that stopped it, once one did; the
	// command is then being killed and leaves the list when it is gone.
	StoppedBy string `json:"stopped_by,omitempty"`
}

// Output is the end of what a running command has written so far.
type Output struct {
	// Stdout is the end of the last stage's stdout; Stderr the end of each
	// stage's stderr: each at most MaxOutputLines lines and MaxOutputBytes
	// bytes, as raw bytes (base64 in JSON). They are untrusted: a console
	// escapes them before showing them.
	Stdout []byte   `json:"stdout"`
	Stderr [][]byte `json:"stderr"`
	// StdoutBytes and StderrBytes count every byte each stream has carried
	// so far; more than shown means the beginning was left out.
	StdoutBytes int64   `json:"stdout_bytes"`
	StderrBytes []int64 `json:"stderr_bytes"`
	// At is when the daemon read it.
	At time.Time `json:"at"`
}

// LastLines returns the end of b: its last MaxOutputLines lines (a final
// line without a newline counts), and of those at most the last
// MaxOutputBytes bytes.
func LastLines(b []byte) []byte {
	if len(b) > MaxOutputBytes {
		b = b[len(b)-MaxOutputBytes:]
	}
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	lines := 0
	for i := end - 1; i >= 0; i-- {
		if b[i] == '\n' {
			lines++
			if lines == MaxOutputLines {
				return b[i+1:]
			}
		}
	}
	return b
}

// Summary stands in for a request too large to announce in full: its
// Shown is sent without pipeline, programs and env, and these numbers say
// how much was left out. The full text comes with a detail message.
type Summary struct {
	// Bytes is the length of the full request's canonical JSON, the text
	// whose SHA-256 is the pending message's hash.
	Bytes int `json:"bytes"`
	// Stages and Args count the pipeline's stages and arguments (argv[0]
	// included); EnvVars counts its environment variables.
	Stages  int `json:"stages"`
	Args    int `json:"args"`
	EnvVars int `json:"env_vars"`
	// StdinBytes is the size of the request's stdin; zero when it has none.
	StdinBytes int `json:"stdin_bytes,omitempty"`
}

// Elided replaces a grant's pipeline in a listing when it is too long to
// list.
type Elided struct {
	// Bytes is the length of the pipeline's JSON; SHA256 is its hex
	// SHA-256.
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Stages and Args count the pipeline's stages and arguments.
	Stages int `json:"stages"`
	Args   int `json:"args"`
}

// Message is one line on the approver channel, in either direction. Only
// the fields of its Type are set.
type Message struct {
	Type string `json:"type"`

	// hello
	Version string `json:"version,omitempty"`
	// hello: the daemon's own host name (os.Hostname), so that a console
	// connected to several daemons says which one a request is from
	// without trusting the agent's claim; empty when the daemon could not
	// read it or is older. signed_only: the host the web approver runs on
	// (os.Hostname), which the daemon names its decisions by (`passkey
	// "NAME" on the web approver of HOST`); a name of letters, digits,
	// '.', '-' and '_', at most 253 bytes, or it is left out.
	DaemonHost string `json:"host,omitempty"`
	// hello: an identifier the daemon draws at start and keeps until it
	// exits. A console never sends a decision to a different instance than
	// the one that announced the request.
	Instance string `json:"instance,omitempty"`

	// pending, detail (daemon -> console)
	Request *Shown `json:"request,omitempty"`
	// pending: set when Request is a summary (no pipeline, programs or
	// env); the request cannot be allowed until its detail is loaded.
	Summary *Summary `json:"summary,omitempty"`

	// pending, resolved, decide, result, detail
	ID   string `json:"id,omitempty"`
	Hash string `json:"hash,omitempty"`
	// pending: the hash of the request's request record in the audit log,
	// which a signed decision's statement names; empty from an older
	// daemon.
	Record string `json:"record,omitempty"`

	// decide; Note also on a result: an allow that counted while the
	// request waits for another person (the two-person rule).
	Decision Choice `json:"decision,omitempty"`
	Note     string `json:"note,omitempty"`
	// decide: a passkey's signature over the decision (signed.go).
	Signed *Signed `json:"signed,omitempty"`

	// approved: who allowed so far, each as the decision's by names
	// them (untrusted: a passkey's name, a console's description).
	ApprovedBy []string `json:"approved_by,omitempty"`
	// approved: each of them as the two-person rule tells people apart
	// (Approval.Identity), in the same order; a relay compares them with
	// its passkey's PublicKey.Identity.
	ApprovedIdentities []string `json:"approved_identities,omitempty"`

	// resolved
	Verdict Verdict `json:"verdict,omitempty"`
	By      string  `json:"by,omitempty"`

	// grants
	Grants []Grant `json:"grants,omitempty"`
	// GrantsOmitted counts the grants left out of a listing that would
	// have been longer than MaxGrantsListed.
	GrantsOmitted int `json:"grants_omitted,omitempty"`

	// revoke
	Grant string `json:"grant,omitempty"`

	// running: the commands running now.
	Running []Running `json:"running,omitempty"`
	// RunningOmitted counts the commands left out of a running message
	// that would have been longer than MaxRunningListed.
	RunningOmitted int `json:"running_omitted,omitempty"`
	// stop, output, result: the run the message is about.
	Run string `json:"run,omitempty"`
	// output (daemon -> console)
	Output *Output `json:"output,omitempty"`
	// finished: the status of the agent's answer and each stage's exit
	// code (none when the command did not start).
	Status    string `json:"status,omitempty"`
	ExitCodes []int  `json:"exit_codes,omitempty"`
	// passkeys (daemon -> console): the daemon's valid passkeys, public
	// part only; none, with Error set, when it cannot read them.
	Passkeys []PublicKey `json:"passkeys,omitempty"`

	// result; also passkeys
	OK    bool   `json:"ok,omitempty"`
	Error string `json:"error,omitempty"`
}
