package passkey_test

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
	"github.com/agent-sudo/agent-sudo/internal/strictjson"
)

// libraryVerify is passkey.VerifyChallenge as it was written on
// github.com/go-webauthn/webauthn's protocol package, before the daemon
// stopped linking it: the reference the checks are held to.
func libraryVerify(keys []passkey.Enrolled, challenge string, a approval.Assertion) (string, error) {
	i := slices.IndexFunc(keys, func(e passkey.Enrolled) bool {
		return subtle.ConstantTimeCompare(e.Credential.ID, a.CredentialID) == 1
	})
	if i < 0 {
		return "", errors.New("not enrolled")
	}
	e := keys[i]
	if len(a.UserHandle) > 0 && !bytes.Equal(a.UserHandle, e.UserID) {
		return "", errors.New("user handle")
	}
	car := protocol.CredentialAssertionResponse{
		PublicKeyCredential: protocol.PublicKeyCredential{
			Credential: protocol.Credential{ID: protocol.URLEncodedBase64(a.CredentialID).String(), Type: string(protocol.PublicKeyCredentialType)},
			RawID:      a.CredentialID,
		},
		AssertionResponse: protocol.AuthenticatorAssertionResponse{
			AuthenticatorResponse: protocol.AuthenticatorResponse{ClientDataJSON: a.ClientDataJSON},
			AuthenticatorData:     a.AuthenticatorData,
			Signature:             a.Signature,
			UserHandle:            a.UserHandle,
		},
	}
	parsed, err := car.Parse()
	if err != nil {
		return "", err
	}
	err = parsed.Verify(challenge, e.RPID, "", e.Origins, nil, nil,
		protocol.TopOriginExplicitVerificationMode, false, true, true, e.Credential.PublicKey, protocol.SignaturePolicy{})
	if err != nil {
		return "", err
	}
	return e.Name, nil
}

const (
	testRPID   = "localhost"
	testOrigin = "https://localhost:8443"
)

// assertionCase is an assertion built from its parts and signed with the
// passkey, so that only the checks of its parts decide.
type assertionCase struct {
	clientData []byte
	flags      byte
	ext        []byte
	rpID       string
}

func (c assertionCase) sign(t testing.TB, k *passkeytest.Key) approval.Assertion {
	rp := sha256.Sum256([]byte(c.rpID))
	ad := append(rp[:], c.flags)
	ad = binary.BigEndian.AppendUint32(ad, 7)
	ad = append(ad, c.ext...)
	sig, err := k.SignRaw(ad, c.clientData)
	if err != nil {
		t.Fatal(err)
	}
	return approval.Assertion{CredentialID: k.ID, AuthenticatorData: ad, ClientDataJSON: c.clientData, Signature: sig, UserHandle: k.UserID}
}

func clientDataJSON(t testing.TB, members map[string]any) []byte {
	b, err := json.Marshal(members)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVerifyAgreesWithTheLibrary: for each way an assertion's client data
// and authenticator data can be wrong, every part validly signed by the
// enrolled passkey, VerifyChallenge gives the answer the case states, and
// the library's verification gives the same, except in the two places
// where VerifyChallenge is stricter on purpose (an origin not written as
// the browser writes it, attested credential data in an assertion); and a
// wrong signature, or one over other data, is refused by both.
func TestVerifyAgreesWithTheLibrary(t *testing.T) {
	k, err := passkeytest.New("alice", testRPID, testOrigin)
	if err != nil {
		t.Fatal(err)
	}
	en, err := k.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	keys := []passkey.Enrolled{en}
	const challenge = "LdAL134CIs7YgmZUganB2fkHMJ0W4F7QB6HqY5KEd6k"
	cd := func(edit func(m map[string]any)) []byte {
		m := map[string]any{"type": "webauthn.get", "challenge": challenge, "origin": testOrigin, "crossOrigin": false}
		if edit != nil {
			edit(m)
		}
		return clientDataJSON(t, m)
	}
	const upUV = 0x01 | 0x04
	cborMap := []byte{0xa1, 0x6b, 'c', 'r', 'e', 'd', 'P', 'r', 'o', 't', 'e', 'c', 't', 0x01} // {"credProtect": 1}
	for _, tc := range []struct {
		name string
		c    assertionCase
		// want is what VerifyChallenge answers: "" to accept, else a part
		// of its error; stricter marks a case the library accepts.
		want     string
		stricter bool
	}{
		{"valid", assertionCase{cd(nil), upUV, nil, testRPID}, "", false},
		{"a member the browser adds", assertionCase{cd(func(m map[string]any) { m["other_keys_can_be_added_here"] = "x" }), upUV, nil, testRPID}, "", false},
		{"token binding supported", assertionCase{cd(func(m map[string]any) { m["tokenBinding"] = map[string]any{"status": "supported"} }), upUV, nil, testRPID}, "", false},
		{"extensions: one CBOR map", assertionCase{cd(nil), upUV | 0x80, cborMap, testRPID}, "", false},
		{"no crossOrigin member", assertionCase{cd(func(m map[string]any) { delete(m, "crossOrigin") }), upUV, nil, testRPID}, "", false},

		{"a registration's client data", assertionCase{cd(func(m map[string]any) { m["type"] = "webauthn.create" }), upUV, nil, testRPID}, "type", false},
		{"no type", assertionCase{cd(func(m map[string]any) { delete(m, "type") }), upUV, nil, testRPID}, "type", false},
		{"another challenge", assertionCase{cd(func(m map[string]any) { m["challenge"] = "b3RoZXI" }), upUV, nil, testRPID}, "challenge", false},
		{"the challenge padded", assertionCase{cd(func(m map[string]any) { m["challenge"] = challenge + "=" }), upUV, nil, testRPID}, "challenge", false},
		{"another origin", assertionCase{cd(func(m map[string]any) { m["origin"] = "https://evil.example" }), upUV, nil, testRPID}, "origin", false},
		{"the origin over http", assertionCase{cd(func(m map[string]any) { m["origin"] = "http://localhost:8443" }), upUV, nil, testRPID}, "origin", false},
		{"the origin in capitals", assertionCase{cd(func(m map[string]any) { m["origin"] = "https://LOCALHOST:8443" }), upUV, nil, testRPID}, "origin", true},
		{"the origin with a path", assertionCase{cd(func(m map[string]any) { m["origin"] = testOrigin + "/x" }), upUV, nil, testRPID}, "origin", true},
		{"cross-origin", assertionCase{cd(func(m map[string]any) { m["crossOrigin"] = true }), upUV, nil, testRPID}, "cross-origin", false},
		{"a top origin", assertionCase{cd(func(m map[string]any) { m["topOrigin"] = testOrigin }), upUV, nil, testRPID}, "cross-origin", false},
		{"cross-origin with a top origin", assertionCase{cd(func(m map[string]any) { m["crossOrigin"] = true; m["topOrigin"] = testOrigin }), upUV, nil, testRPID}, "cross-origin", false},
		{"token binding status unknown", assertionCase{cd(func(m map[string]any) { m["tokenBinding"] = map[string]any{"status": "bogus"} }), upUV, nil, testRPID}, "token binding", false},
		{"token binding without a status", assertionCase{cd(func(m map[string]any) { m["tokenBinding"] = map[string]any{} }), upUV, nil, testRPID}, "token binding", false},
		{"client data not JSON", assertionCase{[]byte("{"), upUV, nil, testRPID}, "JSON", false},
		{"client data null", assertionCase{[]byte("null"), upUV, nil, testRPID}, "type", false},
		{"client data an array", assertionCase{[]byte("[]"), upUV, nil, testRPID}, "JSON", false},

		{"user not verified", assertionCase{cd(nil), 0x01, nil, testRPID}, "verify the user", false},
		{"user not present", assertionCase{cd(nil), 0x04, nil, testRPID}, "verify the user", false},
		{"another relying party", assertionCase{cd(nil), upUV, nil, "evil.example"}, "relying party", false},
		{"a byte after the fixed part", assertionCase{cd(nil), upUV, []byte{0}, testRPID}, "after its fixed part", false},
		{"extensions flagged, none there", assertionCase{cd(nil), upUV | 0x80, nil, testRPID}, "extensions", false},
		{"extensions not a map", assertionCase{cd(nil), upUV | 0x80, []byte{0x01}, testRPID}, "extensions", false},
		{"extensions, then a byte", assertionCase{cd(nil), upUV | 0x80, append(slices.Clone(cborMap), 0), testRPID}, "after its extensions", false},
		{"extensions cut short", assertionCase{cd(nil), upUV | 0x80, cborMap[:5], testRPID}, "extensions", false},
		{"attested data flagged, none there", assertionCase{cd(nil), upUV | 0x40, nil, testRPID}, "attested", false},
		{"attested data flagged, with bytes", assertionCase{cd(nil), upUV | 0x40, make([]byte, 40), testRPID}, "attested", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.c.sign(t, k)
			name, err := passkey.VerifyChallenge(keys, challenge, a)
			_, libErr := libraryVerify(keys, challenge, a)
			switch {
			case tc.want == "" && (err != nil || name != "alice"):
				t.Fatalf("VerifyChallenge: %q, %v; want alice", name, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("VerifyChallenge: %q, %v; want an error about %q", name, err, tc.want)
			}
			if libAccepts, accepts := libErr == nil, err == nil; libAccepts != accepts && !(tc.stricter && libAccepts) {
				t.Fatalf("the library says %v, VerifyChallenge %v", libErr, err)
			}
			if tc.stricter && libErr != nil {
				t.Fatalf("a case marked stricter than the library, which refuses it too (%v): unmark it", libErr)
			}
		})
	}

	t.Run("signature", func(t *testing.T) {
		good := assertionCase{cd(nil), upUV, nil, testRPID}.sign(t, k)
		flipped := good
		flipped.Signature = slices.Clone(good.Signature)
		flipped.Signature[len(flipped.Signature)-1] ^= 1
		other := assertionCase{cd(func(m map[string]any) { m["challenge"] = "b3RoZXI" }), upUV, nil, testRPID}.sign(t, k)
		swapped := good
		swapped.Signature = other.Signature
		empty := good
		empty.Signature = nil
		for name, a := range map[string]approval.Assertion{"a flipped bit": flipped, "another assertion's": swapped, "none": empty} {
			if _, err := passkey.VerifyChallenge(keys, challenge, a); err == nil || !strings.Contains(err.Error(), "signature does not verify") {
				t.Errorf("%s: %v, want the signature refused", name, err)
			}
			if _, err := libraryVerify(keys, challenge, a); err == nil {
				t.Errorf("%s: the library accepts it", name)
			}
		}
	})
}

// FuzzVerifyAgreesWithTheLibrary: for any client data, flags and bytes
// after the authenticator data's fixed part, validly signed by the
// enrolled passkey, VerifyChallenge never accepts what the library
// refuses, and refuses what the library accepts only for its three stricter
// rules: the origin, attested data, and client data read strictly
// (strictjson.Unmarshal: a key given twice, or in another case, is not the
// member the library's case-insensitive, last-wins reading takes).
func FuzzVerifyAgreesWithTheLibrary(f *testing.F) {
	k, err := passkeytest.New("alice", testRPID, testOrigin)
	if err != nil {
		f.Fatal(err)
	}
	en, err := k.Enrolled()
	if err != nil {
		f.Fatal(err)
	}
	keys := []passkey.Enrolled{en}
	const challenge = "LdAL134CIs7YgmZUganB2fkHMJ0W4F7QB6HqY5KEd6k"
	good := fmt.Sprintf(`{"type":"webauthn.get","challenge":%q,"origin":%q,"crossOrigin":false}`, challenge, testOrigin)
	f.Add([]byte(good), byte(0x05), []byte{})
	f.Add([]byte(good), byte(0x85), []byte{0xa1, 0x61, 'x', 0x01})
	f.Add([]byte(good), byte(0x45), make([]byte, 20))
	f.Add([]byte(strings.Replace(good, "false", "true", 1)), byte(0x05), []byte{})
	f.Add([]byte(`{"type":"webauthn.get","type":"x","challenge":"LdAL134CIs7YgmZUganB2fkHMJ0W4F7QB6HqY5KEd6k","origin":"https://localhost:8443"}`), byte(0x05), []byte{})
	f.Add([]byte(`{"Type":"webauthn.get","CHALLENGE":"LdAL134CIs7YgmZUganB2fkHMJ0W4F7QB6HqY5KEd6k","origin":"https://localhost:8443","tokenBinding":{"status":"present"}}`), byte(0x1d), []byte{})
	f.Fuzz(func(t *testing.T, clientData []byte, flags byte, ext []byte) {
		a := assertionCase{clientData, flags, ext, testRPID}.sign(t, k)
		name, err := passkey.VerifyChallenge(keys, challenge, a)
		_, libErr := libraryVerify(keys, challenge, a)
		if err == nil && (libErr != nil || name != "alice") {
			t.Fatalf("VerifyChallenge accepts (%q) what the library refuses: %v", name, libErr)
		}
		if err != nil && libErr == nil {
			type members struct {
				Type        string `json:"type"`
				Challenge   string `json:"challenge"`
				Origin      string `json:"origin"`
				TopOrigin   string `json:"topOrigin"`
				CrossOrigin bool   `json:"crossOrigin"`
			}
			var lax, strict members
			_ = json.Unmarshal(clientData, &lax)
			strictErr := strictjson.Unmarshal(clientData, &strict)
			if flags&0x40 == 0 && lax.Origin == testOrigin && strictErr == nil && lax == strict {
				t.Fatalf("VerifyChallenge refuses what the library accepts, and not for an origin or attested data: %v", err)
			}
		}
	})
}

// TestCredentialKeepsTheLibrarysRecord: a passkey file written with the
// library's whole credential record is read for its id and public key,
// and written back (as revoking does) with every other member as it was.
func TestCredentialKeepsTheLibrarysRecord(t *testing.T) {
	full := webauthn.Credential{ID: []byte{1, 2, 3}, PublicKey: []byte{4, 5}, AttestationType: "none",
		Transport:     []protocol.AuthenticatorTransport{protocol.Internal, protocol.Hybrid},
		Flags:         webauthn.CredentialFlags{UserPresent: true, UserVerified: true, BackupEligible: true},
		Authenticator: webauthn.Authenticator{AAGUID: bytes.Repeat([]byte{9}, 16), SignCount: 4}}
	b, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	c, err := passkey.CredentialFromJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c.ID, full.ID) || !bytes.Equal(c.PublicKey, full.PublicKey) {
		t.Fatalf("read %x %x, want %x %x", c.ID, c.PublicKey, full.ID, full.PublicKey)
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("written back:\n%s\nwant\n%s", out, b)
	}

	// Revoking rewrites the file, under revoked/: the record stays whole.
	s := passkey.Store{Dir: filepath.Join(t.TempDir(), "passkeys")}
	if err := s.Save(passkey.Enrolled{Name: "alice", RPID: testRPID, Origins: []string{testOrigin}, UserID: []byte{7}, Credential: c}); err != nil {
		t.Fatal(err)
	}
	if err := s.Revoke("alice", time.Now()); err != nil {
		t.Fatal(err)
	}
	revoked, err := filepath.Glob(filepath.Join(s.Dir, "revoked", "alice-*.json"))
	if err != nil || len(revoked) != 1 {
		t.Fatalf("revoked files %v, %v; want one", revoked, err)
	}
	file, err := os.ReadFile(revoked[0])
	if err != nil {
		t.Fatal(err)
	}
	var rewritten struct {
		Credential map[string]any `json:"credential"`
	}
	if err := json.Unmarshal(file, &rewritten); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rewritten.Credential, want) {
		t.Fatalf("the revoked file's credential:\n%v\nwant\n%v", rewritten.Credential, want)
	}

	for _, bad := range []string{`null`, `{}`, `{"id":"AQ=="}`, `{"publicKey":"AQ=="}`, `{"id":"","publicKey":"AQ=="}`, `{"id":1,"publicKey":"AQ=="}`, `[]`} {
		if _, err := passkey.CredentialFromJSON([]byte(bad)); err == nil {
			t.Errorf("%s: read as a credential", bad)
		}
	}
}
