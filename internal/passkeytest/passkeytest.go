// Package passkeytest is a software passkey for tests: it enrols like a
// WebAuthn authenticator (an ES256 key, Register) and signs assertions over a
// statement's challenge exactly as a browser's authenticator would, so
// that the daemon's and audit verify's checks can be tested without a
// browser. The browser tests (test/web) use the real thing.
package passkeytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
)

// Key is a software passkey.
type Key struct {
	Name   string
	RPID   string
	Origin string
	ID     []byte
	UserID []byte
	priv   *ecdsa.PrivateKey
	count  uint32
	// NoUV makes its assertions without the user-verified flag.
	NoUV bool
	// Person is who the passkey is for the two-person rule, as enrolment
	// records it (passkey.Enrolled.Person); empty means "passkey NAME",
	// a name that is no login user's.
	Person string
}

// New returns a fresh passkey for the approver name on rpID, signing from
// origin.
func New(name, rpID, origin string) (*Key, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("passkeytest: %w", err)
	}
	id := make([]byte, 16)
	uid := make([]byte, 32)
	_, _ = rand.Read(id)
	_, _ = rand.Read(uid)
	return &Key{Name: name, RPID: rpID, Origin: origin, ID: id, UserID: uid, priv: priv}, nil
}

// coseKey returns k's public key as COSE.
func (k *Key) coseKey() ([]byte, error) {
	pub, err := k.priv.PublicKey.ECDH()
	if err != nil {
		return nil, fmt.Errorf("passkeytest: %w", err)
	}
	raw := pub.Bytes() // 0x04 || X || Y
	cose, err := webauthncbor.Marshal(webauthncose.EC2PublicKeyData{
		PublicKeyData: webauthncose.PublicKeyData{KeyType: int64(webauthncose.EllipticKey), Algorithm: int64(webauthncose.AlgES256)},
		Curve:         int64(webauthncose.P256), XCoord: raw[1:33], YCoord: raw[33:],
	})
	if err != nil {
		return nil, fmt.Errorf("passkeytest: %w", err)
	}
	return cose, nil
}

// Register answers a registration ceremony as a browser's authenticator
// does, with "none" attestation: creation is what the enrolment page's
// begin call returned ({"publicKey": {...}}); it takes the user handle
// from it and returns the body of the page's finish call, signed for
// k.Origin and k.RPID.
func (k *Key) Register(creation []byte) ([]byte, error) {
	var c struct {
		PublicKey struct {
			Challenge string `json:"challenge"`
			User      struct {
				ID string `json:"id"`
			} `json:"user"`
		} `json:"publicKey"`
	}
	if err := json.Unmarshal(creation, &c); err != nil {
		return nil, fmt.Errorf("passkeytest: the creation options: %w", err)
	}
	uid, err := base64.RawURLEncoding.DecodeString(c.PublicKey.User.ID)
	if err != nil {
		return nil, fmt.Errorf("passkeytest: the user handle: %w", err)
	}
	k.UserID = uid
	cd, err := json.Marshal(map[string]any{"type": "webauthn.create", "challenge": c.PublicKey.Challenge, "origin": k.Origin, "crossOrigin": false})
	if err != nil {
		return nil, fmt.Errorf("passkeytest: %w", err)
	}
	cose, err := k.coseKey()
	if err != nil {
		return nil, err
	}
	rp := sha256.Sum256([]byte(k.RPID))
	flags := byte(0x01 | 0x04 | 0x40) // user present, user verified, attested credential data
	if k.NoUV {
		flags = 0x01 | 0x40
	}
	ad := append(rp[:], flags)
	ad = binary.BigEndian.AppendUint32(ad, k.count)
	ad = append(ad, make([]byte, 16)...) // AAGUID: none
	ad = binary.BigEndian.AppendUint16(ad, uint16(len(k.ID)))
	ad = append(ad, k.ID...)
	ad = append(ad, cose...)
	att, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": ad})
	if err != nil {
		return nil, fmt.Errorf("passkeytest: %w", err)
	}
	return json.Marshal(map[string]any{
		"id": b64(k.ID), "rawId": b64(k.ID), "type": "public-key",
		"response":               map[string]any{"clientDataJSON": b64(cd), "attestationObject": b64(att), "transports": []string{"internal"}},
		"clientExtensionResults": map[string]any{},
	})
}

// Enrolled returns k as the passkey store keeps it.
func (k *Key) Enrolled() (passkey.Enrolled, error) {
	cose, err := k.coseKey()
	if err != nil {
		return passkey.Enrolled{}, err
	}
	person := k.Person
	if person == "" {
		person = "passkey " + k.Name
	}
	return passkey.Enrolled{Name: k.Name, RPID: k.RPID, Origins: []string{k.Origin}, UserID: k.UserID,
		Credential: passkey.Credential{ID: k.ID, PublicKey: cose}, Created: time.Now().UTC(), Person: person}, nil
}

// Sign returns k's assertion over st's challenge.
func (k *Key) Sign(st approval.Statement) (approval.Signed, error) {
	challenge, err := st.ChallengeString()
	if err != nil {
		return approval.Signed{}, err
	}
	return k.SignChallenge(st, challenge)
}

// SignChallenge returns k's assertion over challenge (base64url), with st
// as the statement it claims to be for: a test makes one for another
// statement than it claims.
func (k *Key) SignChallenge(st approval.Statement, challenge string) (approval.Signed, error) {
	cd, err := json.Marshal(map[string]any{"type": "webauthn.get", "challenge": challenge, "origin": k.Origin, "crossOrigin": false})
	if err != nil {
		return approval.Signed{}, fmt.Errorf("passkeytest: %w", err)
	}
	rp := sha256.Sum256([]byte(k.RPID))
	k.count++
	flags := byte(0x01 | 0x04) // user present, user verified
	if k.NoUV {
		flags = 0x01
	}
	ad := append(rp[:], flags)
	ad = binary.BigEndian.AppendUint32(ad, k.count)
	sig, err := k.SignRaw(ad, cd)
	if err != nil {
		return approval.Signed{}, err
	}
	return approval.Signed{Statement: st, Assertion: approval.Assertion{
		CredentialID: k.ID, AuthenticatorData: ad, ClientDataJSON: cd, Signature: sig, UserHandle: k.UserID,
	}}, nil
}

// SignRaw returns k's signature over authenticator data ad and client
// data cd as an authenticator makes it, whatever they hold: a test builds
// malformed ones that are validly signed.
func (k *Key) SignRaw(ad, cd []byte) ([]byte, error) {
	cdh := sha256.Sum256(cd)
	digest := sha256.Sum256(append(append([]byte{}, ad...), cdh[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, k.priv, digest[:])
	if err != nil {
		return nil, fmt.Errorf("passkeytest: %w", err)
	}
	return sig, nil
}

// Nonce returns a fresh nonce for a statement.
func Nonce() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return b64(b)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
