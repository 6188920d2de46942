package audit

import (
	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/procinfo"
	"github.com/agent-sudo/agent-sudo/internal/runner"
)

// The parts of a record below are the audit format's own types: their
// JSON is documented in docs/audit.md and stays as it is when the types
// the daemon builds them from (approval's, runner's, procinfo's) change.
// The daemon's values are converted where a record is written (trail.go);
// testdata/golden.jsonl holds the encoding.

// Person is who was behind a console that decided: what the daemon read
// of the console's process.
type Person struct {
	// LoginUID is the console's /proc/PID/loginuid; nil when unset.
	LoginUID *uint32 `json:"login_uid,omitempty"`
	// TTY is the console's terminal and TTYOwner its owner.
	TTY      string  `json:"tty,omitempty"`
	TTYOwner *uint32 `json:"tty_owner,omitempty"`
	// SudoUser and SudoUID are the console's SUDO_USER and SUDO_UID
	// environment variables: claims, not kernel facts.
	SudoUser string `json:"sudo_user,omitempty"`
	SudoUID  string `json:"sudo_uid,omitempty"`
}

// SignedBy is a decision signed with a passkey, as the daemon accepted it:
// who signed, the relay that carried it, and the statement signed and the
// WebAuthn assertion over it (approval.Signed: the approver protocol's
// signed form, recorded exactly as signed, so that audit verify can check
// the signature again offline).
type SignedBy struct {
	// Approver is the name the passkey was enrolled under.
	Approver string `json:"approver"`
	// Person is who the passkey is for the two-person rule; empty for a
	// passkey enrolled before it was recorded.
	Person string `json:"person,omitempty"`
	// Relay names the console connection that carried it.
	Relay string `json:"relay"`
	approval.Signed
}

// Approval is one earlier allow of a request that needed two people.
type Approval struct {
	// By names the console (or the passkey and its relay).
	By string `json:"by"`
	// Person is who was behind a console; nil for a passkey.
	Person *Person `json:"person,omitempty"`
	// Signed is the passkey's signature when it was signed.
	Signed *SignedBy `json:"signed,omitempty"`
	// Identity is the person as the two-person rule told people apart.
	Identity string `json:"identity"`
}

// Writable is a directory or file that someone other than root can write.
type Writable struct {
	// Path is the directory or file.
	Path string `json:"path"`
	// Why says who can write it, from its owner and mode.
	Why string `json:"why"`
}

// Ancestry is the requesting process and its parents, the process first.
type Ancestry struct {
	Hops []Hop `json:"hops"`
	// End says why the walk stopped after the last hop.
	End string `json:"end"`
	// Changed is set when the process that connected is not, or no
	// longer, the first hop's.
	Changed string `json:"requester_changed,omitempty"`
}

// Hop is one process of an ancestry.
type Hop struct {
	PID  int32  `json:"pid"`
	Exe  string `json:"exe"`
	Comm string `json:"comm"`
	// Argv is the start of its argument vector; ArgvCut is set when
	// anything was left out.
	Argv    []string `json:"argv,omitempty"`
	ArgvCut bool     `json:"argv_cut,omitempty"`
}

// Container is the namespaces and cgroup of a peer that lives in
// namespaces other than the daemon's.
type Container struct {
	// NS holds the inode number of each namespace that differs.
	NS map[string]uint64 `json:"ns"`
	// InnerUID and InnerPID are the peer's uid and pid inside its
	// namespaces; InitPID is the daemon-side pid of its pid namespace's
	// first process.
	InnerUID *uint32 `json:"inner_uid,omitempty"`
	InnerPID int32   `json:"inner_pid,omitempty"`
	InitPID  int32   `json:"init_pid,omitempty"`
	// Cgroup is the cgroup of InitPID (or of the peer).
	Cgroup string `json:"cgroup,omitempty"`
	// Controller is the uid the daemon counted the peer as, when not its
	// own.
	Controller *uint32 `json:"controller_uid,omitempty"`
}

// personOf converts the daemon's view of a console's person. The
// conversion is a Go conversion: a field added to approval.Person and not
// to Person does not compile.
func personOf(p *approval.Person) *Person { return (*Person)(p) }

// signedByOf converts a signed decision as the daemon accepted it.
func signedByOf(s *approval.SignedBy) *SignedBy { return (*SignedBy)(s) }

// approvalsOf converts the earlier allows of a two-person decision.
func approvalsOf(as []approval.Approval) []Approval {
	if as == nil {
		return nil
	}
	out := make([]Approval, len(as))
	for i, a := range as {
		out[i] = Approval{By: a.By, Person: personOf(a.Person), Signed: signedByOf(a.Signed), Identity: a.Identity}
	}
	return out
}

// writablesOf converts the runner's list of writable paths.
func writablesOf(ws []runner.Writable) []Writable {
	if ws == nil {
		return nil
	}
	out := make([]Writable, len(ws))
	for i, w := range ws {
		out[i] = Writable(w)
	}
	return out
}

// ancestryOf converts the daemon's walk of a peer's ancestry. Not inlined:
// both request writers call it, and a copy in each costs agent-sudod's
// size budget more than the call.
//
//go:noinline
func ancestryOf(a *procinfo.Ancestry) *Ancestry {
	if a == nil {
		return nil
	}
	out := &Ancestry{End: a.End, Changed: a.Changed}
	if a.Hops != nil {
		out.Hops = make([]Hop, len(a.Hops))
		for i, h := range a.Hops {
			out.Hops[i] = Hop(h)
		}
	}
	return out
}

// containerOf converts the daemon's reading of a peer's namespaces.
func containerOf(c *procinfo.Container) *Container { return (*Container)(c) }

// SortedNS returns c's namespaces in the order the sheet shows them
// (approval.Container.SortedNS).
func (c *Container) SortedNS() []string { return (*approval.Container)(c).SortedNS() }
