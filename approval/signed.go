package approval

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Signed decisions (docs/approver-protocol.md#signed-decisions): a decide
// message may carry a WebAuthn assertion of a passkey over a Statement
// naming the request as audited, the decision, its scope and validity and a
// fresh nonce. The daemon checks the statement against the request waiting
// and the signature against the enrolled passkeys (a Verifier), so that a
// process that relays such decisions (the web approver) cannot decide by
// itself: see docs/security.md#the-web-approver.

// MsgSignedOnly, console -> daemon: from now on this connection decides
// only with signed decisions; its unsigned decide, revoke, stop and output
// are refused. The web approver sends it before it serves any page, so
// that its connection, once the process is compromised, can only relay what
// a human signed.
const MsgSignedOnly = "signed_only"

// ScopeOnce is the only scope a signed decision has today: it decides this
// one request (allow_once or deny); no session grant is made from a
// signature.
const ScopeOnce = "once"

// StatementVersion prefixes what a challenge hashes, so that a signature
// made for anything else never reads as a decision.
const StatementVersion = "agent-sudo decision v1\n"

// MaxSignedValidity bounds how long after the daemon reads it a signed
// decision may claim to be valid (Statement.Expires).
const MaxSignedValidity = 10 * time.Minute

// Statement is what a signed decision commits to; its Challenge is the
// WebAuthn challenge the passkey signs.
type Statement struct {
	// Record is the hash of the request's request record in the audit log
	// (the audit records' ref), announced in the pending message.
	Record string `json:"record"`
	// ID and Hash name the request and what was shown of it, as the
	// pending message announced them.
	ID   string `json:"id"`
	Hash string `json:"hash"`
	// Decision is allow_once or deny.
	Decision Choice `json:"decision"`
	// Scope is ScopeOnce.
	Scope string `json:"scope"`
	// Expires is when the signed decision stops being valid.
	Expires time.Time `json:"expires"`
	// Nonce is at least 16 random bytes, base64url without padding; a
	// daemon takes each nonce once.
	Nonce string `json:"nonce"`
}

// Challenge returns the WebAuthn challenge for s: the SHA-256 of
// StatementVersion followed by s's JSON encoding. It fails, and there is no
// challenge, when s cannot be encoded (an expiry whose offset is outside
// ±23:59 or whose year is outside 0 to 9999 has no RFC 3339 form) or is
// not a statement at all (an empty id, hash or nonce, or no expiry): a
// caller never signs or verifies over anything but a full statement's hash.
func (s Statement) Challenge() ([]byte, error) {
	switch {
	case s.ID == "" || s.Hash == "" || s.Nonce == "":
		return nil, errors.New("the statement has no id, hash or nonce, so it has no challenge")
	case s.Expires.IsZero():
		return nil, errors.New("the statement has no expiry, so it has no challenge")
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("the statement cannot be encoded, so it has no challenge: %w", err)
	}
	sum := sha256.Sum256(append([]byte(StatementVersion), b...))
	return sum[:], nil
}

// ChallengeString is Challenge as the client data's challenge holds it:
// base64url without padding (43 characters); it fails when Challenge does.
func (s Statement) ChallengeString() (string, error) {
	c, err := s.Challenge()
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(c), nil
}

// MinChallenge is the fewest bytes a challenge a passkey signs may have, for
// a decision (a SHA-256, Statement.Challenge) or a sign-in alike: a
// verifier refuses a shorter one, so that no assertion over an empty or
// guessable challenge counts for anything.
const MinChallenge = sha256.Size

// Assertion is a WebAuthn assertion as the browser returned it (each field
// raw bytes, base64 in JSON).
type Assertion struct {
	CredentialID      []byte `json:"credential_id"`
	AuthenticatorData []byte `json:"authenticator_data"`
	ClientDataJSON    []byte `json:"client_data"`
	Signature         []byte `json:"signature"`
	UserHandle        []byte `json:"user_handle,omitempty"`
}

// Signed is a decision's statement and the assertion over it.
type Signed struct {
	Statement Statement `json:"statement"`
	Assertion Assertion `json:"assertion"`
}

// SignedBy is a signed decision as the daemon accepted it: who signed it,
// with what, and the signature itself, as the audit log records it so that
// it can be checked again offline (agent-sudo audit verify).
type SignedBy struct {
	// Approver is the name the passkey was enrolled under.
	Approver string `json:"approver"`
	// Person is who the passkey is for the two-person rule, as root
	// resolved it at enrolment (Signer.Person); empty for a passkey
	// enrolled before it was recorded.
	Person string `json:"person,omitempty"`
	// Relay names the console connection that carried it.
	Relay string `json:"relay"`
	Signed
}

// Verifier checks an assertion against the enrolled passkeys and returns
// the passkey that made it. The daemon's is internal/passkey's Store.
type Verifier interface {
	Verify(s Signed) (Signer, error)
}

// Signer is the passkey that made a signature.
type Signer struct {
	// Name is the approver's name the passkey was enrolled under.
	Name string
	// Person is who the passkey is for the two-person rule, as root
	// resolved the name through the system's name service at enrolment:
	// "uid N" for a login user, "passkey NAME" for a name that is no
	// user's; empty when the passkey was enrolled before this was recorded,
	// and then it cannot count as one of two people.
	Person string
}

// ErrUnsigned: a signed-only connection sent something other than a
// signed decision.
var ErrUnsigned = errors.New("this connection decides only with signed decisions (it sent signed_only)")

// Signatures is what a Channel needs to take signed decisions: the
// Verifier of the enrolled passkeys and the nonces already taken. Its zero
// value refuses every signed decision.
type Signatures struct {
	// Verifier checks the signatures. When it is also a KeySource, a
	// signed-only connection is sent the passkeys' public part
	// (MsgPasskeys) and their changes.
	Verifier Verifier
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// KeysPoll is how often a signed-only connection's passkeys are
	// checked for a change; zero means every second.
	KeysPoll time.Duration

	mu   sync.Mutex
	used map[string]time.Time // nonce -> its statement's expiry
}

// KeySource returns the Verifier as a KeySource, if it is one.
func (g *Signatures) KeySource() (KeySource, bool) {
	if g == nil || g.Verifier == nil {
		return nil, false
	}
	ks, ok := g.Verifier.(KeySource)
	return ks, ok
}

// maxNonces bounds the nonces remembered: at most this many signed
// decisions can be valid at once.
const maxNonces = 4096

// check verifies a signed decision on the request id announced with hash
// and the choice: the statement must say exactly that, be valid now and
// not for longer than MaxSignedValidity, carry a nonce never taken, and be
// signed by an enrolled passkey. The record is checked by the broker,
// which knows the request's. It returns who signed.
func (g *Signatures) Check(id, hash string, choice Choice, s *Signed, relay string) (*SignedBy, error) {
	if g == nil || g.Verifier == nil {
		return nil, errors.New("signed decision refused: this daemon has no passkeys to check it against")
	}
	st := s.Statement
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	t := now()
	switch {
	case st.ID != id || st.Hash != hash || st.Decision != choice:
		return nil, errors.New("signed decision refused: the statement signed is for another request or decision than this message's")
	case choice != AllowOnce && choice != DenyOnce:
		return nil, fmt.Errorf("signed decision refused: a signature decides %q or %q only", AllowOnce, DenyOnce)
	case st.Scope != ScopeOnce:
		return nil, fmt.Errorf("signed decision refused: scope %q; a signature decides this request once (%q)", st.Scope, ScopeOnce)
	case !t.Before(st.Expires):
		return nil, errors.New("signed decision refused: it has expired")
	case st.Expires.After(t.Add(MaxSignedValidity)):
		return nil, fmt.Errorf("signed decision refused: it claims to be valid for more than %s", MaxSignedValidity)
	}
	if n, err := base64.RawURLEncoding.Strict().DecodeString(st.Nonce); err != nil || len(n) < 16 {
		return nil, errors.New("signed decision refused: the nonce is not 16 or more bytes in base64url")
	}
	if _, err := st.Challenge(); err != nil {
		return nil, fmt.Errorf("signed decision refused: %w", err)
	}
	signer, err := g.Verifier.Verify(*s)
	if err != nil {
		return nil, fmt.Errorf("signed decision refused: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.used == nil {
		g.used = make(map[string]time.Time)
	}
	for n, exp := range g.used {
		if !t.Before(exp) {
			delete(g.used, n)
		}
	}
	if _, ok := g.used[st.Nonce]; ok {
		return nil, errors.New("signed decision refused: it was used before (a replay)")
	}
	if len(g.used) >= maxNonces {
		return nil, errors.New("signed decision refused: too many signed decisions are valid at once; try again in a few minutes")
	}
	g.used[st.Nonce] = st.Expires
	return &SignedBy{Approver: signer.Name, Person: signer.Person, Relay: relay, Signed: *s}, nil
}
