package daemon

import (
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
)

// TestWebDecisionNamesTheWebApprover: a decision relayed by a web approver
// is recorded (and sent to every console as resolved's by) as the passkey
// that signed it on the web approver of the host it said it runs on, not
// as the relay's console connection, which the signature's relay field
// keeps. The passkey's name comes from the verified signature; a host that
// is not a host name is left out (the old words).
func TestWebDecisionNamesTheWebApprover(t *testing.T) {
	for _, c := range []struct {
		what, host, want string
	}{
		{"a host", "laptop-1.example", `passkey "alice" on the web approver of laptop-1.example`},
		{"no host said", "", `passkey "alice" (via web relay)`},
		{"not a host name", "evil\x1b[2J host", `passkey "alice" (via web relay)`},
	} {
		t.Run(c.what, func(t *testing.T) {
			r := newRigFrom(t, c.host, "alice")
			res := ask(r.broker, "w1", "why", "echo", "hi")
			r.signIn()
			body := r.waitPage(`data-id="w1"`)
			if code, out := r.decide(r.key, 0, "w1", hashOf(t, body, 0, "w1"), approval.AllowOnce); code != 200 {
				t.Fatalf("decide: %d %v", code, out)
			}
			got := <-res
			if got.err != nil || got.d.By != c.want || got.d.Signed == nil || got.d.Signed.Relay != "web relay" {
				t.Fatalf("decided by %q (signed %+v, err %v), want %q relayed by the console \"web relay\"", got.d.By, got.d.Signed, got.err, c.want)
			}
		})
	}
}
