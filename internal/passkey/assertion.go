package passkey

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/strictjson"
)

// Authenticator data flags (WebAuthn §6.1).
const (
	flagUserPresent  = 0x01
	flagUserVerified = 0x04
	flagAttested     = 0x40
	flagExtensions   = 0x80
)

// authDataLen is the authenticator data's fixed part: the relying party
// id's SHA-256, the flags and the signature counter.
const authDataLen = 32 + 1 + 4

// clientData is the members of the client data the checks read.
type clientData struct {
	Type         string `json:"type"`
	Challenge    string `json:"challenge"`
	Origin       string `json:"origin"`
	TopOrigin    string `json:"topOrigin"`
	CrossOrigin  bool   `json:"crossOrigin"`
	TokenBinding *struct {
		Status string `json:"status"`
	} `json:"tokenBinding"`
}

// VerifyChallenge checks that one of keys made the assertion a over
// challenge (base64url, as the client data holds it), from one of its
// origins, with the user verified, and returns its approver name. The web
// approver's sign-in is such an assertion over a challenge of its own.
//
// The checks are WebAuthn's "verifying an authentication assertion"
// (§7.2), as github.com/go-webauthn/webauthn's protocol package makes them
// with no cross-origin use, no AppID and user verification required, and
// stricter where noted: the origin must be one of the passkey's exactly as
// a browser writes it (they are written so at enrolment, package web's
// Origin), and authenticator data carrying attested credential data is
// refused (an assertion has none). TestVerifyAgreesWithTheLibrary and
// FuzzVerifyAgreesWithTheLibrary hold it to the library: it never accepts
// what the library refuses.
//
// A challenge that is not unpadded base64url of at least
// approval.MinChallenge bytes is refused before anything else: an empty or
// short challenge names no statement and no sign-in.
func VerifyChallenge(keys []Enrolled, challenge string, a approval.Assertion) (string, error) {
	if c, err := base64.RawURLEncoding.Strict().DecodeString(challenge); err != nil || len(c) < approval.MinChallenge {
		return "", fmt.Errorf("the challenge is not %d or more bytes in base64url; a passkey's signature over it counts for nothing", approval.MinChallenge)
	}
	i := slices.IndexFunc(keys, func(e Enrolled) bool {
		return subtle.ConstantTimeCompare(e.Credential.ID, a.CredentialID) == 1
	})
	if i < 0 || len(a.CredentialID) == 0 {
		return "", errors.New("the passkey that signed is not enrolled (or was revoked)")
	}
	e := keys[i]
	if len(a.UserHandle) > 0 && !bytes.Equal(a.UserHandle, e.UserID) {
		return "", fmt.Errorf("the assertion's user handle is not approver %q's", e.Name)
	}
	if err := checkClientData(a.ClientDataJSON, challenge, e.Origins); err != nil {
		return "", fmt.Errorf("approver %q: the signature does not verify: %w", e.Name, err)
	}
	if err := checkAuthenticatorData(a.AuthenticatorData, e.RPID); err != nil {
		return "", fmt.Errorf("approver %q: the signature does not verify: %w", e.Name, err)
	}
	key, err := webauthncose.ParsePublicKey(e.Credential.PublicKey)
	if err != nil {
		return "", fmt.Errorf("approver %q: the enrolled public key cannot be read: %w", e.Name, err)
	}
	cdh := sha256.Sum256(a.ClientDataJSON)
	signed := slices.Concat(a.AuthenticatorData, cdh[:])
	if ok, err := webauthncose.VerifySignature(key, signed, a.Signature); !ok || err != nil {
		return "", fmt.Errorf("approver %q: the signature does not verify: %v", e.Name, errOr(err, "wrong signature"))
	}
	return e.Name, nil
}

// checkClientData checks the client data (§7.2 steps 10 to 14): a "get"
// ceremony over challenge, from one of origins, not cross-origin.
func checkClientData(raw []byte, challenge string, origins []string) error {
	var c clientData
	if err := strictjson.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("the client data is not a JSON object: %w", err)
	}
	if c.Type != "webauthn.get" {
		return fmt.Errorf("the client data's type is %q, not webauthn.get", c.Type)
	}
	if subtle.ConstantTimeCompare([]byte(c.Challenge), []byte(challenge)) != 1 {
		return errors.New("the client data's challenge is not this statement's")
	}
	if !slices.Contains(origins, c.Origin) {
		return fmt.Errorf("the client data's origin %q is not one of the passkey's (%q)", c.Origin, origins)
	}
	if c.CrossOrigin || c.TopOrigin != "" {
		return errors.New("the client data says it was signed in a cross-origin frame")
	}
	if tb := c.TokenBinding; tb != nil && tb.Status != "present" && tb.Status != "supported" && tb.Status != "not-supported" {
		return fmt.Errorf("the client data's token binding status %q is not one WebAuthn defines", tb.Status)
	}
	return nil
}

// checkAuthenticatorData checks the authenticator data (§7.2 steps 15 to
// 18): for rpID, with the user present and verified, and nothing after
// the fixed part but one CBOR map of extension outputs when the flags say
// so.
func checkAuthenticatorData(ad []byte, rpID string) error {
	if len(ad) < authDataLen {
		return fmt.Errorf("the authenticator data is %d bytes, under %d", len(ad), authDataLen)
	}
	flags := ad[32]
	if flags&flagAttested != 0 {
		return errors.New("the authenticator data carries attested credential data, which an assertion does not")
	}
	rest := ad[authDataLen:]
	switch {
	case flags&flagExtensions == 0 && len(rest) != 0:
		return fmt.Errorf("the authenticator data has %d bytes after its fixed part and no extensions", len(rest))
	case flags&flagExtensions != 0:
		var ext map[string]any
		n, err := webauthncbor.UnmarshalFirst(rest, &ext)
		if err != nil || len(rest) == 0 {
			return fmt.Errorf("the authenticator data's extensions are not a CBOR map: %v", errOr(err, "none"))
		}
		if n != len(rest) {
			return fmt.Errorf("the authenticator data has %d bytes after its extensions", len(rest)-n)
		}
	}
	rp := sha256.Sum256([]byte(rpID))
	if !bytes.Equal(ad[:32], rp[:]) {
		return fmt.Errorf("the authenticator data is for another relying party than %q", rpID)
	}
	if flags&flagUserPresent == 0 || flags&flagUserVerified == 0 {
		return errors.New("the authenticator did not verify the user (fingerprint, face or PIN)")
	}
	return nil
}

// errOr returns err, or an error saying what when err is nil.
func errOr(err error, what string) error {
	if err == nil {
		return errors.New(what)
	}
	return err
}
