package approval

import (
	"time"
)

// MsgPasskeys, daemon -> console: the public part of the passkeys the
// daemon checks signed decisions against (Message.Passkeys), sent on a
// connection that sent signed_only, at once and again whenever they change,
// so that a web approver checks its sign-ins against them without reading
// the daemon's passkeys directory (docs/approver-protocol.md#signed-decisions).
const MsgPasskeys = "passkeys"

// PublicKey is the public part of an enrolled passkey: what a relay needs
// to check a WebAuthn assertion, and nothing secret.
type PublicKey struct {
	// Name is the approver's name.
	Name string `json:"name"`
	// RPID is the relying party id and Origins the page origins the
	// passkey may sign from.
	RPID    string   `json:"rp_id"`
	Origins []string `json:"origins"`
	// UserID is the WebAuthn user handle drawn at enrolment.
	UserID []byte `json:"user_id"`
	// CredentialID and PublicKey (COSE) are the credential's.
	CredentialID []byte `json:"credential_id"`
	PublicKey    []byte `json:"public_key"`
	// Identity is the person the passkey is for the two-person rule, as
	// the daemon tells people apart ("uid N" or "passkey NAME", see
	// Approval.Identity), as root recorded it at enrolment (Signer.Person);
	// empty for a passkey enrolled before that, which cannot count as one
	// of two people. A relay uses it to tell that the passkey signed in
	// already allowed a request.
	Identity string `json:"identity,omitempty"`
}

// KeySource is a Verifier that can list the public part of its passkeys
// (internal/passkey's Store). A Channel whose Signatures.Verifier is one
// sends MsgPasskeys on signed-only connections.
type KeySource interface {
	Verifier
	// PublicKeys returns the valid passkeys' public part.
	PublicKeys() ([]PublicKey, error)
	// KeysStamp returns, cheaply (a stat), a value that differs whenever
	// the passkeys may have changed, and when they last changed: a stamp
	// taken less than keysSettle after that is not trusted, since a file
	// system's clock may not tell two changes in one tick apart.
	KeysStamp() (stamp string, changed time.Time, err error)
}
