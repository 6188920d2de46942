package daemon

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
)

// TestWebAPIKeysAreExact: the web approver's API reads a request body as
// strictly as the daemon reads a console's line (issue 31, finding 7): a
// "CHALLENGE" is not the "challenge" (encoding/json took it, and signed
// in), a key given twice is refused, and base64url with an escaped line
// break or nonzero unused bits is refused; the same sign-in, spelt
// exactly, signs in.
func TestWebAPIKeysAreExact(t *testing.T) {
	r := newRig(t)
	r.signIn() // once the daemon's passkeys have reached the web approver
	code, begin := r.post("/api/login/begin", map[string]any{})
	if code != 200 {
		t.Fatalf("login begin: %d %v", code, begin)
	}
	ch := begin["challenge"].(string)
	sig, err := r.key.SignChallenge(approval.Statement{}, ch)
	if err != nil {
		t.Fatal(err)
	}
	a := assertionBody(sig.Assertion)
	ab, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	chq, err := json.Marshal(ch)
	if err != nil {
		t.Fatal(err)
	}
	sigWithNewline := a["signature"][:4] + `\n` + a["signature"][4:]
	for _, tt := range []struct {
		name, body string
		want       int
	}{
		{"CHALLENGE", `{"CHALLENGE":` + string(chq) + `,"assertion":` + string(ab) + `}`, http.StatusForbidden},
		{"Challenge", `{"Challenge":` + string(chq) + `,"assertion":` + string(ab) + `}`, http.StatusForbidden},
		{"challenge twice", `{"challenge":"x","challenge":` + string(chq) + `,"assertion":` + string(ab) + `}`, http.StatusBadRequest},
		{"signature twice", `{"challenge":` + string(chq) + `,"assertion":{"signature":"AA","id":"` + a["id"] + `","authenticatorData":"` + a["authenticatorData"] + `","clientDataJSON":"` + a["clientDataJSON"] + `","signature":"` + a["signature"] + `"}}`, http.StatusBadRequest},
		{"escaped newline in base64url", `{"challenge":` + string(chq) + `,"assertion":{"id":"` + a["id"] + `","authenticatorData":"` + a["authenticatorData"] + `","clientDataJSON":"` + a["clientDataJSON"] + `","signature":"` + sigWithNewline + `"}}`, http.StatusBadRequest},
		{"nonzero unused bits", `{"challenge":` + string(chq) + `,"assertion":{"id":"` + a["id"] + `","authenticatorData":"` + a["authenticatorData"] + `","clientDataJSON":"` + a["clientDataJSON"] + `","signature":"` + a["signature"] + `","userHandle":"AB"}}`, http.StatusBadRequest},
	} {
		if code, out := r.post("/api/login/finish", json.RawMessage(tt.body)); code != tt.want {
			t.Errorf("%s: %d %v, want %d", tt.name, code, out, tt.want)
		}
	}
	if code, out := r.post("/api/login/finish", map[string]any{"challenge": ch, "assertion": a}); code != 200 {
		t.Fatalf("the same sign-in, spelt exactly: %d %v", code, out)
	}
}
