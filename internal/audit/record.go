package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/strictjson"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
	"github.com/agent-sudo/agent-sudo/proto"
)

// Type is the kind of a record.
type Type string

// The record types. Each request produces, in this order, one request
// record, at most one decision record, at most one exec record and at most
// one result record. The daemon itself writes a daemon record when it
// starts serving and when it stops.
const (
	// TypeRequest: the daemon received the request. A request it refused
	// before asking anyone has Request.Refused set and no later record.
	TypeRequest Type = "request"
	// TypeDecision: a rule, a human or a timeout decided.
	TypeDecision Type = "decision"
	// TypeExec: the pipeline is about to start; written and synced before
	// the first stage is started.
	TypeExec Type = "exec"
	// TypeResult: what came out of a pipeline that was started, or why
	// starting it failed.
	TypeResult Type = "result"
	// TypeDaemon: the daemon started serving, or stopped, and why. It
	// belongs to no request: its id, session and host are empty.
	TypeDaemon Type = "daemon"
)

// Valid reports whether t is one of the five record types.
func (t Type) Valid() bool {
	switch t {
	case TypeRequest, TypeDecision, TypeExec, TypeResult, TypeDaemon:
		return true
	}
	return false
}

// Record is one line of the audit log. The header fields are present in
// every record; exactly one section, the one named by Type, is set.
//
// Seq and Prev are assigned by [Log.Append] and must be zero when a record
// is appended; they are written last on the line. The log also sets
// DaemonHost on every record it writes, replacing any value the caller
// gave.
type Record struct {
	// Type names the record's kind and its section.
	Type Type `json:"type"`
	// Time is when the daemon wrote the record, in UTC.
	Time time.Time `json:"time"`
	// ID is the request's id; empty only for a request refused before an
	// id could be read from it.
	ID string `json:"id"`
	// Ref is the hash of the request's request record, on every later
	// record of the request. It joins the records of one request even when
	// a client reuses an id.
	Ref string `json:"ref,omitempty"`
	// Session and Host are the request's, as the agent sent them.
	Session string `json:"session"`
	Host    string `json:"host"`
	// DaemonHost is the host name of the machine whose daemon wrote the
	// record (the log's [Options].DaemonHost), unlike Host not the
	// agent's claim; it tells apart the records of logs collected from
	// several machines. Absent in logs written before it existed, and when
	// the daemon could not read its host name.
	DaemonHost string `json:"daemon_host,omitempty"`
	// Peer is the connecting process; nil when the daemon could not read
	// its credentials.
	Peer *Peer `json:"peer,omitempty"`

	Request  *RequestSection  `json:"request,omitempty"`
	Decision *DecisionSection `json:"decision,omitempty"`
	Exec     *ExecSection     `json:"exec,omitempty"`
	Result   *ResultSection   `json:"result,omitempty"`
	Daemon   *DaemonSection   `json:"daemon,omitempty"`

	// Seq numbers the records of the chain from 1, across rotated files.
	Seq uint64 `json:"seq,omitempty"`
	// Prev is the SHA-256, in lower-case hex, of the previous line of the
	// chain without its newline, or [Genesis] for the first record.
	Prev string `json:"prev,omitempty"`
}

// Peer is the process on the other end of the socket, as the kernel
// reported it when it connected.
type Peer struct {
	// UID and PID are from SO_PEERCRED.
	UID uint32 `json:"uid"`
	PID int32  `json:"pid"`
	// Exe is /proc/PID/exe, read when the connection was accepted.
	Exe string `json:"exe,omitempty"`
	// Ancestry is the process and its parents, and Container its
	// namespaces and cgroup when they are not the daemon's, read from /proc
	// when the connection was accepted. Only request records carry them;
	// logs written before they existed have neither.
	Ancestry  *Ancestry  `json:"ancestry,omitempty"`
	Container *Container `json:"container,omitempty"`
}

// Environment value encodings, the value of the env_values fields.
const (
	// EnvSHA256: each value is "sha256:" and the hex SHA-256 of the value.
	EnvSHA256 = "sha256"
	// EnvFull: values are recorded as they are (audit_env_values = true).
	EnvFull = "full"
)

// RequestSection is what the agent asked for.
type RequestSection struct {
	// Refused says why the daemon refused the request without asking
	// anyone (invalid, a replay, a program not found, ...). Empty for a
	// request that went on to a decision.
	Refused string `json:"refused,omitempty"`
	// Pipeline holds one argv per stage, as the agent sent it.
	Pipeline [][]string `json:"pipeline,omitempty"`
	// Reason is the agent's explanation.
	Reason string `json:"reason,omitempty"`
	// Privileged and ForwardAgent are the request's flags; nil when the
	// request could not be decoded.
	Privileged   *bool `json:"privileged,omitempty"`
	ForwardAgent *bool `json:"forward_agent,omitempty"`
	// Cwd is the requested working directory; empty means "/".
	Cwd string `json:"cwd,omitempty"`
	// RequestTime is the time the agent put in the request.
	RequestTime time.Time `json:"request_time,omitzero"`
	// Env holds the requested environment, values encoded as EnvValues
	// says.
	Env map[string]string `json:"env,omitzero"`
	// EnvValues is EnvSHA256 or EnvFull; set when Env is.
	EnvValues string `json:"env_values,omitempty"`
	// RawBytes and RawSHA256 are the size and the hex SHA-256 of the
	// request line as read, on a refused request whose line was read.
	RawBytes  int    `json:"raw_bytes,omitempty"`
	RawSHA256 string `json:"raw_sha256,omitempty"`
	// RawPrefix is the first RawPrefixBytes of a refused request line longer
	// than MaxRefusedRequestBytes, whose pipeline, reason and environment
	// are then not recorded.
	RawPrefix string `json:"raw_prefix,omitempty"`
	// StdinBytes and StdinSHA256 (lower-case hex) describe the stdin the
	// request fed to its first stage; absent when it had none.
	StdinBytes  int    `json:"stdin_bytes,omitempty"`
	StdinSHA256 string `json:"stdin_sha256,omitempty"`
	// Stdin is the stdin content itself (standard base64 in the JSON),
	// recorded only when the log's Options.Stdin is set (audit_stdin =
	// true); absent otherwise.
	Stdin []byte `json:"stdin,omitempty"`
}

// DecisionSection is how the request was decided.
type DecisionSection struct {
	// Verdict is an approval.Verdict: "allowed", "denied", "timeout",
	// "withdrawn", or "error" when no decision could be reached (the daemon
	// was stopping, the approver failed).
	Verdict string `json:"verdict"`
	// By names the decider: a rule's name, the console ("console uid=0
	// tty=/dev/pts/1 pid=123"), or one of approval's By constants
	// ("approval_timeout", "client", "daemon shutting down", "approver").
	// Older logs have it empty on an "error".
	By string `json:"by"`
	// Message is the note for the agent (a denial's reason).
	Message string `json:"message,omitempty"`
	// Approver is who was behind the console that decided (login uid,
	// terminal and its owner, SUDO_USER and SUDO_UID from its environment),
	// as the daemon read it; absent for other deciders and in older logs.
	Approver *Person `json:"approver,omitempty"`
	// Signed is the passkey's signature of a decision made on the web
	// approver: the approver's name, the relay that carried it, the
	// statement signed (which names this request's ref) and the WebAuthn
	// assertion (credential id, authenticator data, client data,
	// signature), so that audit verify can check it again offline.
	Signed *SignedBy `json:"signed,omitempty"`
	// Approvals are the earlier allows of a request whose rule asked for
	// two people (approvals = 2): who, as the daemon told them apart, and
	// a passkey's signature; By, Approver and Signed are the last allow.
	Approvals []Approval `json:"approvals,omitempty"`
}

// ExecSection is exactly what is about to run.
type ExecSection struct {
	// Stages are the resolved programs, in pipeline order.
	Stages []ExecStage `json:"stages"`
	// RunAs is the target user.
	RunAs RunAs `json:"run_as"`
	// Mode is "sudo" or "direct".
	Mode string `json:"mode"`
	// SudoPath is the sudo binary, in sudo mode.
	SudoPath string `json:"sudo_path,omitempty"`
	// Dir is the working directory, resolved (symlink-free), which the
	// stages enter through a descriptor opened when the request was
	// planned.
	Dir string `json:"dir"`
	// DirChain is the directory as requested and every symlink hop to
	// Dir; absent when no symlink was involved.
	DirChain []string `json:"dir_chain,omitempty"`
	// DirWritable is set when someone other than root can write Dir.
	DirWritable []Writable `json:"dir_writable,omitempty"`
	// Env is the complete environment the stages get (before what sudo
	// adds), values encoded as EnvValues says.
	Env map[string]string `json:"env"`
	// EnvValues is EnvSHA256 or EnvFull.
	EnvValues string `json:"env_values"`
}

// ExecStage is one stage as it is executed.
type ExecStage struct {
	// Path is the absolute, symlink-free path of the executed file.
	Path string `json:"path"`
	// Link is the path the program was found at in the secure path, when
	// it differs from Path (a symlink).
	Link string `json:"link,omitempty"`
	// Chain is every hop from the name the program was found by to Path,
	// both included, as a list (never joined, so no file name can forge a
	// hop).
	Chain []string `json:"chain,omitempty"`
	// Dev, Ino and SHA256 identify the file the daemon opened when it
	// planned the request and executes (SHA256 in lower-case hex).
	Dev    uint64 `json:"dev,omitempty"`
	Ino    uint64 `json:"ino,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Writable lists the directories on the way and the file itself when
	// someone other than root can write them.
	Writable []Writable `json:"writable,omitempty"`
	// Argv is the argument vector; Argv[0] as the agent gave it.
	Argv []string `json:"argv"`
}

// RunAs is the user a pipeline runs as.
type RunAs struct {
	User   string   `json:"user"`
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// ResultSection is what came out of a pipeline.
type ResultSection struct {
	// Status is the status the daemon answered.
	Status proto.Status `json:"status"`
	// Message is the answer's message (why it timed out, or failed to
	// start).
	Message string `json:"message,omitempty"`
	// StoppedBy names the console that stopped the pipeline before it
	// ended by itself ("console uid=0 tty=/dev/pts/1 pid=123"); absent
	// when none did.
	StoppedBy string `json:"stopped_by,omitempty"`
	// ExitCodes has one exit status per stage (128+N for signal N); empty
	// when the pipeline could not be started.
	ExitCodes []int `json:"exit_codes"`
	// Started and Ended bound the run; zero when it never started.
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
	// DurationNS is Ended - Started in nanoseconds.
	DurationNS int64 `json:"duration_ns,omitempty"`
	// StdoutBytes is the number of stdout bytes captured (and returned),
	// at most proto.MaxOutputBytes; StdoutTruncated says whether more was
	// discarded. StdoutSHA256 is the hex SHA-256 of the captured bytes.
	StdoutBytes     int    `json:"stdout_bytes"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StdoutSHA256    string `json:"stdout_sha256"`
	// Stages describes each stage's stderr.
	Stages []ResultStage `json:"stages"`
	// Survivors are the processes found alive in the pipeline's cgroup
	// after every stage had exited; they were killed. At most
	// MaxSurvivors are listed; SurvivorsCount is how many there were.
	Survivors      []Survivor `json:"survivors,omitempty"`
	SurvivorsCount int        `json:"survivors_count,omitempty"`
	// CgroupError says what went wrong emptying or removing the
	// pipeline's cgroup, when something did.
	CgroupError string `json:"cgroup_error,omitempty"`
}

// MaxSurvivors bounds the survivors one result record lists.
const MaxSurvivors = 64

// Survivor is a process a pipeline left behind.
type Survivor struct {
	PID int `json:"pid"`
	// Exe is its executable's path as the kernel gave it (JSON escapes
	// any control byte).
	Exe string `json:"exe"`
}

// ResultStage is one stage's outcome.
type ResultStage struct {
	ExitCode        int    `json:"exit_code"`
	StderrBytes     int    `json:"stderr_bytes"`
	StderrTruncated bool   `json:"stderr_truncated"`
	StderrSHA256    string `json:"stderr_sha256"`
}

// The events of a daemon record.
const (
	// DaemonStarted: the daemon is listening and about to serve.
	DaemonStarted = "started"
	// DaemonStopped: the daemon stopped serving; it answers no more
	// requests.
	DaemonStopped = "stopped"
)

// MaxDaemonReasonBytes bounds the reason a daemon record keeps.
const MaxDaemonReasonBytes = 2048

// DaemonSection is a start or a stop of the daemon, so that the log shows
// each run of the daemon and why it ended.
type DaemonSection struct {
	// Event is DaemonStarted or DaemonStopped.
	Event string `json:"event"`
	// Reason says why the daemon stopped (on DaemonStopped only): the
	// signal that stopped it ("terminated signal received" for SIGTERM,
	// "interrupt signal received" for SIGINT), the console of
	// agent-sudod --tty quit, its terminal hung up, or the error that
	// ended it. At most MaxDaemonReasonBytes.
	Reason string `json:"reason,omitempty"`
	// Version is the daemon's version.
	Version string `json:"version"`
	// PID is the daemon's process id.
	PID int `json:"pid"`
	// Config is the configuration file the daemon loaded; empty when it
	// runs on the built-in defaults.
	Config string `json:"config,omitempty"`
	// Instance names this run of the daemon, as consoles are told it
	// (the approver protocol's hello); the start and the stop of one run
	// carry the same.
	Instance string `json:"instance,omitempty"`
}

// check reports what is wrong with a record about to be appended.
func (r *Record) check() error {
	if !r.Type.Valid() {
		return fmt.Errorf("unknown record type %q", r.Type)
	}
	sections := map[Type]bool{
		TypeRequest: r.Request != nil, TypeDecision: r.Decision != nil,
		TypeExec: r.Exec != nil, TypeResult: r.Result != nil, TypeDaemon: r.Daemon != nil,
	}
	for t, set := range sections {
		if set != (t == r.Type) {
			if set {
				return fmt.Errorf("%s record has a %s section", r.Type, t)
			}
			return fmt.Errorf("%s record has no %s section", r.Type, t)
		}
	}
	if r.Seq != 0 || r.Prev != "" {
		return errors.New("seq and prev are assigned by Append and must be empty")
	}
	if d := r.Daemon; d != nil {
		switch {
		case d.Event != DaemonStarted && d.Event != DaemonStopped:
			return fmt.Errorf("daemon record: event %q is neither %q nor %q", d.Event, DaemonStarted, DaemonStopped)
		case d.Event == DaemonStopped && d.Reason == "":
			return errors.New("daemon record: a stop has no reason")
		case d.Event == DaemonStarted && d.Reason != "":
			return errors.New("daemon record: a start has a reason")
		case r.ID != "" || r.Ref != "" || r.Session != "" || r.Host != "" || r.Peer != nil:
			return errors.New("daemon record: has a request's id, ref, session, host or peer")
		}
	}
	return nil
}

// marshalBody encodes r without seq and prev: a JSON object whose closing
// brace the writer replaces with the chain fields. The line is ASCII: every
// non-ASCII character is written as a \u escape, and so is DEL
// ([termtext.ASCIIJSON]), so that printing the file on a terminal (cat,
// tail -f, grep) cannot reorder or hide text with bidi controls or invisible
// characters; encoding/json already escapes the other control characters. HTML characters are not escaped, so that "<" in an
// argument reads as "<".
func marshalBody(r *Record) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("encode %s record: %w", r.Type, err)
	}
	body := termtext.ASCIIJSON(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	if len(body) < 2 || body[0] != '{' || body[len(body)-1] != '}' {
		return nil, fmt.Errorf("encode %s record: not a JSON object", r.Type)
	}
	return body, nil
}

// JoinExitCodes returns codes in decimal, separated by sep: "0,1" for
// JoinExitCodes([]int{0, 1}, ","), "" for none.
func JoinExitCodes(codes []int, sep string) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, sep)
}

// LineHash returns the chain hash of one line (without its newline): the
// lower-case hex SHA-256 that the next record's prev holds.
func LineHash(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}

// hashValue is how an environment value or an output is recorded when its
// content is not.
func hashValue(s []byte) string {
	sum := sha256.Sum256(s)
	return hex.EncodeToString(sum[:])
}

// encodeEnv returns env with its values encoded for the log.
func encodeEnv(env map[string]string, full bool) (map[string]string, string) {
	out := make(map[string]string, len(env))
	for k, v := range env {
		if full {
			out[k] = v
		} else {
			out[k] = "sha256:" + hashValue([]byte(v))
		}
	}
	if full {
		return out, EnvFull
	}
	return out, EnvSHA256
}

// parseRecord decodes one line into a Record and checks what every record
// must have. It reads the line strictly (strictjson.Unmarshal: no key
// twice at any depth, keys matched exactly, times as RFC 3339 says), as
// the daemon reads its own JSON, so that a record has one reading only.
func parseRecord(line []byte) (*Record, error) {
	var r Record
	if err := strictjson.Unmarshal(line, &r); err != nil {
		return nil, fmt.Errorf("not a JSON record: %w", err)
	}
	if r.Type == "" {
		return nil, errors.New(`no "type"`)
	}
	if r.Seq == 0 {
		return nil, errors.New(`no "seq"`)
	}
	if !isHash(r.Prev) {
		return nil, fmt.Errorf(`"prev" is %q, not a SHA-256 in lower-case hex`, r.Prev)
	}
	return &r, nil
}

// isHash reports whether s is 64 lower-case hex digits.
func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
