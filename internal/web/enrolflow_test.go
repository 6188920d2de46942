package web

import (
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/passkey"
)

// TestPersonNote: enrolment says who the passkey is for the two-person
// rule: the login user the name service resolved, or a person of its own,
// with what to do when the name is a user whose directory did not answer.
func TestPersonNote(t *testing.T) {
	for _, tc := range []struct {
		person string
		want   string
	}{
		{"uid 1001", "For the two-person rule this passkey is the user alice (uid 1001, as the system's name service resolves alice): alice at a console and on this passkey count as one person."},
		{"passkey alice", "alice is no user the system's name service knows (getent passwd alice found none), so for the two-person rule " +
			"this passkey is a person of its own (passkey alice), apart from every login. If alice is a user whose directory did not answer, " +
			"revoke it (approve web revoke alice) and enrol it again once getent passwd alice finds them."},
	} {
		if got := personNote(passkey.Enrolled{Name: "alice", Person: tc.person}); got != tc.want {
			t.Errorf("person %q:\n got %q\nwant %q", tc.person, got, tc.want)
		}
	}
}
