package approval

import (
	"bytes"
	"context"
	"encoding/json"
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

// keysPoll is how often a signed-only connection's passkeys are checked
// for a change, and keysSettle how old a change must be before a stamp is
// trusted to show the next one.
const (
	keysPoll   = time.Second
	keysSettle = 2 * time.Second
)

// watchKeys sends the passkeys of ks through send at once, then checks
// them every poll (keysPoll when zero) and sends them again when they
// changed, until ctx ends or send fails. A stamp that did not change is
// not read further, so the work is a stat per poll. When the passkeys
// cannot be read, the message carries no key and the reason in Error: the
// connection's relay then signs nobody in.
func watchKeys(ctx context.Context, ks KeySource, poll time.Duration, send func(Message) bool) {
	if poll <= 0 {
		poll = keysPoll
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	var last string
	var sent []byte
	settled := false
	for {
		stamp, changed, err := ks.KeysStamp()
		if err != nil || stamp != last || !settled {
			m := Message{Type: MsgPasskeys}
			keys, kerr := ks.PublicKeys()
			switch {
			case err != nil:
				m.Error = "the daemon cannot read its passkeys: " + err.Error()
			case kerr != nil:
				m.Error = "the daemon cannot read its passkeys: " + kerr.Error()
			default:
				m.Passkeys = append(m.Passkeys, keys...)
			}
			b, merr := json.Marshal(m)
			if merr != nil {
				// The keys cannot be listed: the relay signs nobody in,
				// and is told why.
				m = Message{Type: MsgPasskeys, Error: "the daemon cannot encode its passkeys: " + merr.Error()}
				b, merr = json.Marshal(m)
			}
			if merr == nil && !bytes.Equal(b, sent) {
				if !send(m) {
					return
				}
				sent = b
			}
			last, settled = stamp, err == nil && time.Since(changed) > keysSettle
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
