package approval

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"
)

// Shown is everything a human sees about a pending request. The approver
// channel sends it to consoles, and a decision must carry the hash of the
// Shown it was made on: a decision about anything else is rejected, so what
// was approved is exactly what runs.
type Shown struct {
	ID       string     `json:"id"`
	Session  string     `json:"session"`
	Host     string     `json:"host"`
	Reason   string     `json:"reason"`
	Time     time.Time  `json:"time"`
	Pipeline [][]string `json:"pipeline"`
	// Programs holds, per stage, the absolute path that will be executed,
	// with the symlink chain when there was one ("/usr/sbin/iptables ->
	// /usr/sbin/xtables-legacy-multi").
	Programs     []string          `json:"programs"`
	Env          map[string]string `json:"env"`
	Cwd          string            `json:"cwd"`
	Privileged   bool              `json:"privileged"`
	RunAs        string            `json:"run_as"`
	ForwardAgent bool              `json:"forward_agent"`
	Peer         PeerInfo          `json:"peer"`
	// Received is when the daemon accepted the request; Deadline is when it
	// times out if nobody decides.
	Received time.Time `json:"received"`
	Deadline time.Time `json:"deadline"`
}

// PeerInfo is the requesting process as the kernel identified it.
type PeerInfo struct {
	UID  uint32 `json:"uid"`
	User string `json:"user"`
	PID  int32  `json:"pid"`
	Exe  string `json:"exe"`
}

// Hash returns the hex SHA-256 of s's canonical JSON encoding (struct fields
// in declaration order, map keys sorted, times in RFC 3339 with
// nanoseconds), which binds a decision to exactly what was shown.
func (s *Shown) Hash() string {
	b, err := json.Marshal(s)
	if err != nil {
		// Marshal cannot fail for these field types; an empty hash matches
		// no decision, so even this impossible path fails closed.
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
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
	EnvKeys    []string  `json:"env_keys"`
	Privileged bool      `json:"privileged"`
	Cwd        string    `json:"cwd"`
	By         string    `json:"by"`
	Created    time.Time `json:"created"`
	Expires    time.Time `json:"expires"`
}

// Message types on the approver channel; see docs/approver-protocol.md.
const (
	MsgHello    = "hello"    // daemon -> console, first line
	MsgPending  = "pending"  // daemon -> console: a request waits
	MsgResolved = "resolved" // daemon -> console: a request no longer waits
	MsgGrants   = "grants"   // daemon -> console: the current session grants
	MsgResult   = "result"   // daemon -> console: answer to decide or revoke
	MsgDecide   = "decide"   // console -> daemon
	MsgRevoke   = "revoke"   // console -> daemon
)

// Message is one line on the approver channel, in either direction. Only
// the fields of its Type are set.
type Message struct {
	Type string `json:"type"`

	// hello
	Version string `json:"version,omitempty"`

	// pending
	Request *Shown `json:"request,omitempty"`

	// pending, resolved, decide, result
	ID   string `json:"id,omitempty"`
	Hash string `json:"hash,omitempty"`

	// decide
	Decision Choice `json:"decision,omitempty"`
	Note     string `json:"note,omitempty"`

	// resolved
	Verdict Verdict `json:"verdict,omitempty"`
	By      string  `json:"by,omitempty"`

	// grants
	Grants []Grant `json:"grants,omitempty"`

	// revoke
	Grant string `json:"grant,omitempty"`

	// result
	OK    bool   `json:"ok,omitempty"`
	Error string `json:"error,omitempty"`
}
