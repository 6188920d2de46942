package passkey

import (
	"encoding/json"
	"fmt"

	"github.com/agent-sudo/agent-sudo/internal/strictjson"
)

// Credential is an enrolled WebAuthn credential: the id and COSE public key
// the checks use, and every other member of the record written at
// enrolment (the flags; records written before enrolment kept only what
// root checks also the attestation type, transports and authenticator),
// kept as it was written so that rewriting a passkey's file (revoking it)
// loses nothing.
type Credential struct {
	ID        []byte
	PublicKey []byte
	// rest holds the record's other members, undecoded.
	rest map[string]json.RawMessage
}

// CredentialFromJSON returns the credential whose JSON record is b: the
// library's webauthn.Credential, marshalled. It needs an id and a public
// key.
func CredentialFromJSON(b []byte) (Credential, error) {
	var c Credential
	if err := strictjson.Unmarshal(b, &c); err != nil {
		return Credential{}, err
	}
	return c, nil
}

// UnmarshalJSON reads a credential record: "id" and "publicKey" (base64,
// as encoding/json writes bytes) and any other members, kept. It reads as
// strictly as the rest of a passkey file (strictjson.Unmarshal).
func (c *Credential) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := strictjson.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("credential: %w", err)
	}
	if m == nil {
		return fmt.Errorf("credential: null")
	}
	var id, pub []byte
	if err := strictjson.Unmarshal(m["id"], &id); err != nil || len(id) == 0 {
		return fmt.Errorf("credential: no id (%v)", err)
	}
	if err := strictjson.Unmarshal(m["publicKey"], &pub); err != nil || len(pub) == 0 {
		return fmt.Errorf("credential: no public key (%v)", err)
	}
	delete(m, "id")
	delete(m, "publicKey")
	*c = Credential{ID: id, PublicKey: pub, rest: m}
	return nil
}

// MarshalJSON writes the record back: the members it was read with, and
// the id and public key as they are now.
func (c Credential) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(c.rest)+2)
	for k, v := range c.rest {
		m[k] = v
	}
	m["id"] = c.ID
	m["publicKey"] = c.PublicKey
	return json.Marshal(m)
}
