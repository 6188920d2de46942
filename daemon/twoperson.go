package daemon

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/agent-sudo/agent-sudo/approval"
)

// The two-person rule (docs/rules.md): a request whose rule says
// approvals = 2 runs only once two different people allowed it. A deny by
// anyone decides at once.

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
func identity(who approverConsole) (string, error) {
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
func (e *entry) approve(choice approval.Choice, who approverConsole) (earlier []approval.Approval, done bool, note string, err error) {
	if choice != approval.AllowOnce {
		// Decide refused it already (GrantRefusal); kept so that no
		// other choice can count as an allow.
		return nil, false, "", fmt.Errorf("%w: %s", approval.ErrNoSessionGrant, e.shown.GrantRefusal())
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
	a := approval.Approval{By: who.By, Person: who.Person, Signed: who.Signed, Identity: id}
	if len(e.given)+1 < e.shown.Approvals {
		e.given = append(e.given, a)
		return nil, false, fmt.Sprintf("allowed: %d of %d; waiting for another person", len(e.given), e.shown.Approvals), nil
	}
	return e.given, true, "", nil
}

// approvedMsg is the approved message for e, which has some of its
// approvals; the caller holds the broker's lock.
func (e *entry) approvedMsg() approval.Message {
	m := approval.Message{Type: approval.MsgApproved, ID: e.shown.ID, Hash: e.hash}
	for _, a := range e.given {
		m.ApprovedBy = append(m.ApprovedBy, a.By)
		m.ApprovedIdentities = append(m.ApprovedIdentities, a.Identity)
	}
	return m
}
