package proto

import "time"

// Limits of the wire format. They are part of the protocol: a client may rely
// on them and the daemon enforces them.
const (
	// MaxRequestBytes is the largest request line, including its '\n'.
	MaxRequestBytes = 1 << 20
	// MaxOutputBytes caps the final stage's stdout and each stage's stderr.
	MaxOutputBytes = 16 << 20
	// MaxStages bounds the number of stages in a pipeline. Each stage is a
	// process and a 16 MiB stderr buffer, so the bound keeps one request's
	// memory and process count predictable.
	MaxStages = 32
	// MaxIDLen bounds a client-chosen request id. A UUID is 36 bytes.
	MaxIDLen = 128
	// MaxHostLen bounds host; 255 is the DNS limit for a full name.
	MaxHostLen = 255
	// MaxSessionLen bounds the session name.
	MaxSessionLen = 256
	// MaxReasonLen bounds the free-text reason shown to the approver.
	MaxReasonLen = 4096
	// MaxEnvVars bounds the number of variables in env. It is a limit of
	// this daemon (the reference protocol sets none): a request has no use
	// for more, and each refused variable costs the daemon work and words.
	MaxEnvVars = 64
	// MaxEnvNameLen bounds the length of one variable name in env.
	MaxEnvNameLen = 256
	// MaxEnvBytes bounds the bytes of env's names and values together, as
	// decoded (the JSON escapes do not count).
	MaxEnvBytes = 32 << 10
	// MaxCwdLen bounds the cwd extension field (PATH_MAX on Linux).
	MaxCwdLen = 4096
	// MaxStdinBytes bounds the decoded stdin extension field. Base64 makes
	// 3 bytes 4, so this is the most that fits in a MaxRequestBytes line
	// with room left for a pipeline, env and reason; the request line cap
	// still applies to the whole request.
	MaxStdinBytes = 3 * (MaxRequestBytes - 64<<10) / 4
	// DefaultMaxClockSkew is how far a request's time may lie from the
	// daemon's clock, in either direction, unless configured otherwise.
	DefaultMaxClockSkew = 60 * time.Second
)

// Status is the outcome of a request.
type Status string

// The statuses a response can carry. No others exist; a client must treat any
// other value as a protocol violation.
const (
	StatusOK      Status = "ok"
	StatusDenied  Status = "denied"
	StatusTimeout Status = "timeout"
	StatusError   Status = "error"
)

// Valid reports whether s is one of the four protocol statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusOK, StatusDenied, StatusTimeout, StatusError:
		return true
	}
	return false
}

// Actions a request can ask for. The reference protocol has only execution;
// ping and stop are the 1.1 extensions documented in docs/protocol.md.
const (
	// ActionExecute runs the pipeline. It is what an absent action means.
	ActionExecute = "execute"
	// ActionExec is the name the protocol's origin (sudo-proxy 1.1) uses
	// for ActionExecute; the decoder accepts it and reports ActionExecute.
	ActionExec = "exec"
	// ActionPing asks whether the daemon is up and the peer may use it.
	ActionPing = "ping"
	// ActionStop asks the daemon to shut down. The decoder accepts it so
	// that the daemon can refuse it with a clear message: a root system
	// service is not stopped by its clients.
	ActionStop = "stop"
)

// NotAllowedPrefix starts the message of an error answer to a peer that may
// not use the daemon at all (see allowed_users and allowed_groups in
// docs/config.md); clients tell that refusal from others by it.
const NotAllowedPrefix = "not allowed:"

// PingMessage is the message of an ok answer to ping: exactly what a
// sudo-proxy 1.1 daemon answers, so its clients accept agent-sudod. Whether
// the caller may use the daemon is in [Response.Access].
const PingMessage = "pong"

// Request is one decoded, defaulted and validated request.
//
// A Request built by hand (by a client) is encoded with [Request.MarshalJSON];
// one read from the wire comes from [ReadRequest] or [DecodeRequest] and has
// every default applied.
type Request struct {
	// ID identifies the request in the response and the audit log.
	ID string
	// Action is ActionExecute or ActionPing; empty on the wire means execute.
	Action string
	// Host is the agent's host name, for the approver and the audit log.
	Host string
	// Session names the agent session the request belongs to.
	Session string
	// Time is when the agent made the request; the daemon refuses stale or
	// future times so that a captured request cannot be replayed later.
	Time time.Time
	// Pipeline holds one argv per stage; stage i's stdout feeds stage i+1.
	Pipeline [][]string
	// Env holds extra environment variables for every stage.
	Env map[string]string
	// Reason is the agent's explanation, shown to the approving human.
	Reason string
	// Privileged runs the pipeline as root. It defaults to true so that a
	// client that forgets the field still goes through approval and sudo.
	Privileged bool
	// ForwardAgent gives the commands the approver's SSH agent. Only valid
	// when Privileged is false.
	ForwardAgent bool
	// Cwd is the working directory (extension); empty means "/".
	Cwd string
	// Stdin is fed to the first stage's standard input (extension, base64
	// on the wire). nil when absent or empty: the first stage then reads
	// /dev/null, exactly as without the extension.
	Stdin []byte
	// Progress asks the daemon for progress lines before the response
	// (extension; see [Progress]). A client that does not set it never
	// gets one.
	Progress bool
	// NonInteractive asks the daemon not to wait for a human when none
	// could answer (extension; sudo -n): a request that no rule or grant
	// decides, sent while no approver is connected, is denied at once with
	// a message starting with NoApproverPrefix instead of waiting for
	// approval_timeout. A daemon that predates it ignores it and waits.
	NonInteractive bool
}

// NoApproverPrefix starts the message of the denied answer to a
// NonInteractive request that nobody could approve; clients tell that
// refusal from others by it.
const NoApproverPrefix = "no approver could answer:"

// Stage is the result of one pipeline stage.
type Stage struct {
	// ExitCode is the stage's exit status; 128+N when killed by signal N.
	ExitCode int
	// Stderr is what the stage wrote to stderr, at most MaxOutputBytes.
	Stderr []byte
	// StderrTruncated is set when the daemon discarded stderr past the cap.
	StderrTruncated bool
}

// Response is the daemon's answer to one request.
type Response struct {
	// ID echoes the request's id, or is empty when the request was so
	// malformed that no id could be read from it.
	ID string
	// Status is the outcome.
	Status Status
	// Message explains an error, denial or timeout for a human.
	Message string
	// Stages has one entry per pipeline stage. The encoder writes the stages
	// and stdout fields exactly when Stages is non-nil: always for an
	// executed request (ok), and for a timeout once the command had started.
	Stages []Stage
	// Stdout is the final stage's stdout, at most MaxOutputBytes.
	Stdout []byte
	// StdoutTruncated is set when the daemon discarded stdout past the cap.
	StdoutTruncated bool
	// Version is the daemon's version, in every answer agent-sudod
	// writes (extension).
	Version string
	// Access says, in an answer to ping, whether and why the caller may use
	// the daemon (extension; Message is then "pong", as sudo-proxy 1.1
	// clients expect).
	Access string
}
