package approval

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/agent-sudo/agent-sudo/internal/procinfo"
)

// The two-person rule (docs/rules.md): a request whose rule says
// approvals = 2 runs only once two different people allowed it. A deny by
// anyone decides at once.

// Approval is one person's allow of a request that needs more than one,
// as the audit log records it.
type Approval struct {
	// By names the console (or the passkey and its relay).
	By string `json:"by"`
	// Person is who was behind a console; nil for a passkey.
	Person *procinfo.Person `json:"person,omitempty"`
	// Signed is the passkey's signature when it was signed.
	Signed *SignedBy `json:"signed,omitempty"`
	// Identity is the person as the two-person rule told people apart:
	// "uid N" (a console's login uid, or the login user a passkey is
	// named after) or "passkey NAME" (a passkey not named after a user).
	Identity string `json:"identity"`
}

// ErrNoIdentity: an allow of a request that needs two people from a
// console whose login identity the daemon could not read.
var ErrNoIdentity = errors.New("this request needs two different people, and this console's login identity (loginuid) could not be read, so its allow cannot count as one of them; allow it with a passkey or from a login session")

// ErrPasskeyNoPerson: an allow, signed with a passkey whose file records
// no person, of a request that needs two people.
var ErrPasskeyNoPerson = errors.New("this request needs two different people, and the passkey that signed this allow was enrolled before agent-sudo recorded who it is, so its allow cannot count as one of them; enrol it again (agent-sudo approve web revoke NAME, then enroll NAME) or allow from a console")

// identity names the person behind who for the two-person rule. A
// passkey is the person root resolved at its enrolment through the
// system's name service (SignedBy.Person): a login user's uid, the same
// as a console of theirs, so that the same person at a console and on
// their phone is one person, wherever the user database is (LDAP, SSSD).
// The daemon never resolves a passkey's name itself: its static build
// reads /etc/passwd alone.
func identity(who Console) (string, error) {
	if who.Signed != nil {
		if who.Signed.Person == "" {
			return "", ErrPasskeyNoPerson
		}
		return who.Signed.Person, nil
	}
	if who.Person != nil && who.Person.LoginUID != nil {
		return "uid " + strconv.FormatUint(uint64(*who.Person.LoginUID), 10), nil
	}
	return "", ErrNoIdentity
}

// approve records who's allow of e, which needs e.shown.Approvals people.
// It returns the earlier approvals once this one completes them (done),
// or done false and a note for the console while more are needed. The
// caller holds the broker's lock.
func (e *entry) approve(choice Choice, who Console) (earlier []Approval, done bool, note string, err error) {
	if choice != AllowOnce {
		// Decide refused it already (GrantRefusal); kept so that no
		// other choice can count as an allow.
		return nil, false, "", fmt.Errorf("%w: %s", ErrNoSessionGrant, e.shown.GrantRefusal())
	}
	id, err := identity(who)
	if err != nil {
		return nil, false, "", err
	}
	for _, a := range e.given {
		if a.Identity == id {
			return nil, false, "", fmt.Errorf("this request needs %d different people, and %s (%s) already allowed it; another person must", e.shown.Approvals, a.By, id)
		}
	}
	a := Approval{By: who.By, Person: who.Person, Signed: who.Signed, Identity: id}
	if len(e.given)+1 < e.shown.Approvals {
		e.given = append(e.given, a)
		return nil, false, fmt.Sprintf("allowed: %d of %d; waiting for another person", len(e.given), e.shown.Approvals), nil
	}
	return e.given, true, "", nil
}

// approvedMsg is the approved message for e, which has some of its
// approvals; the caller holds the broker's lock.
func (e *entry) approvedMsg() Message {
	m := Message{Type: MsgApproved, ID: e.shown.ID, Hash: e.hash}
	for _, a := range e.given {
		m.ApprovedBy = append(m.ApprovedBy, a.By)
		m.ApprovedIdentities = append(m.ApprovedIdentities, a.Identity)
	}
	return m
}
