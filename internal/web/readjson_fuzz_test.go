package web

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// FuzzReadJSON: a request body the web API takes (readJSON, the one strict
// reading: exact keys, no key twice at any depth) decodes to a value that
// reads back the same once written again, and a body with a key given
// twice or a key in another case than the field's is never read as that
// field (issue 31, finding 7: "CHALLENGE" signed in).
func FuzzReadJSON(f *testing.F) {
	for _, s := range []string{
		`{"challenge":"abc","assertion":{"id":"AA","signature":"AA"}}`,
		`{"CHALLENGE":"abc"}`,
		`{"challenge":"a","challenge":"b"}`,
		`{"nonce":"n","assertion":{"id":"AA","id":"AB"}}`,
		`{"challenge":"a\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	type body struct {
		Challenge string        `json:"challenge"`
		Nonce     string        `json:"nonce"`
		Assertion assertionJSON `json:"assertion"`
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v body
		if readJSON(httptest.NewRequest("POST", "/", bytes.NewReader(b)), &v) != nil {
			return
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("took %q, which cannot be written back: %v", b, err)
		}
		var again body
		if err := readJSON(httptest.NewRequest("POST", "/", bytes.NewReader(out)), &again); err != nil || again != v {
			t.Fatalf("took %q as %s, which reads back as %+v (%v)", b, out, again, err)
		}
		var lax map[string]json.RawMessage
		if json.Unmarshal(b, &lax) == nil {
			for k := range lax {
				if k != "challenge" && bytes.EqualFold([]byte(k), []byte("challenge")) && v.Challenge != "" {
					if _, exact := lax["challenge"]; !exact {
						t.Fatalf("took %q's %q as the challenge", b, k)
					}
				}
			}
		}
	})
}
