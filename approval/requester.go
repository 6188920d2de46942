package approval

import (
	"slices"
	"strings"
)

// Person is who is behind a process (a console), as far as /proc says: the
// approver channel's copy of what the daemon read, so that an approver
// needs no package of the daemon's to read it.
type Person struct {
	// LoginUID is /proc/PID/loginuid: the uid that logged in on the session
	// the process descends from, set once by the login service (pam_loginuid)
	// and kept across su and sudo. Nil when unset or unreadable.
	LoginUID *uint32 `json:"login_uid,omitempty"`
	// TTY is the target of /proc/PID/fd/0 and TTYOwner the owner of that
	// file when it is a terminal (a terminal is chowned to whoever logged
	// in on it).
	TTY      string  `json:"tty,omitempty"`
	TTYOwner *uint32 `json:"tty_owner,omitempty"`
	// SudoUser and SudoUID are the process's SUDO_USER and SUDO_UID
	// environment variables: what sudo sets when it starts a program, but
	// also whatever its starter put there. They are claims, not kernel
	// facts, shown as such.
	SudoUser string `json:"sudo_user,omitempty"`
	SudoUID  string `json:"sudo_uid,omitempty"`
}

// Why the daemon's walk of a requester's ancestry stopped (Ancestry.End).
const (
	EndSessionLeader = "session leader"
	EndLoginShell    = "login shell"
	EndInit          = "init"
	EndDepth         = "depth limit"
	EndExited        = "exited during the walk"
	EndTimeout       = "timed out"
	EndBusy          = "not read: too many ancestry walks under way"
)

// Ancestry is a requesting process and its parents, the process first, as
// the daemon read them from /proc when the connection was accepted.
type Ancestry struct {
	Hops []Hop `json:"hops"`
	// End says why the walk stopped after the last hop: one of the End
	// constants, or "unreadable: " and why.
	End string `json:"end"`
	// Changed is set when the process that connected is not, or no
	// longer, the first hop's: it exec'd another program or exited between
	// connecting and the walk, or could not be pinned when it connected.
	// The hops are then what /proc held later, not who asked; nothing
	// shows them as verified.
	Changed string `json:"requester_changed,omitempty"`
}

// Hop is one process of an Ancestry.
type Hop struct {
	// PID is the process id in the daemon's pid namespace.
	PID int32 `json:"pid"`
	// Exe is the target of /proc/PID/exe, kept by the kernel, or
	// "(unknown: why)" when it could not be read.
	Exe string `json:"exe"`
	// Comm is the process's name (/proc/PID/stat), at most 15 bytes; the
	// process can set it.
	Comm string `json:"comm"`
	// Argv is the first elements of its argument vector, each bounded;
	// the process can rewrite it. ArgvCut is set when anything was left
	// out.
	Argv    []string `json:"argv,omitempty"`
	ArgvCut bool     `json:"argv_cut,omitempty"`
}

// Name is how a hop is best called in one word: the base name of argv[0]
// when there is one, else comm. It is raw: escape it before showing it.
func (h Hop) Name() string {
	if len(h.Argv) > 0 && h.Argv[0] != "" {
		a := strings.TrimRight(h.Argv[0], "/")
		if i := strings.LastIndexByte(a, '/'); i >= 0 && i+1 < len(a) {
			a = a[i+1:]
		}
		return a
	}
	return h.Comm
}

// Namespaces names the namespace kinds the daemon compares with its own,
// in the order they are shown.
var Namespaces = []string{"user", "pid", "mnt", "net", "uts", "ipc", "cgroup"}

// Container is the identity of a requester that lives in namespaces other
// than the daemon's: a container, a sandbox, a bind-mounted socket reached
// from "unshare". Every field is read from /proc by the daemon.
type Container struct {
	// NS holds the inode number of each of the peer's namespaces (by kind,
	// as in Namespaces) that differs from the daemon's.
	NS map[string]uint64 `json:"ns"`
	// InnerUID is the peer's uid inside its user namespace; nil when the
	// peer is in the daemon's user namespace or its uid map has no entry
	// for its uid.
	InnerUID *uint32 `json:"inner_uid,omitempty"`
	// InnerPID is the peer's pid in its own pid namespace; 0 when unknown.
	InnerPID int32 `json:"inner_pid,omitempty"`
	// InitPID is the daemon-side pid of the first process of the peer's
	// pid namespace (its "init"), found among the peer's ancestors; 0 when
	// the pid namespace is the daemon's or the init was not found.
	InitPID int32 `json:"init_pid,omitempty"`
	// Cgroup is the cgroup of InitPID (of the peer when InitPID is 0).
	Cgroup string `json:"cgroup,omitempty"`
	// Controller is the uid the daemon counts the peer as for its per-user
	// limits when that is not the peer's own uid (docs/config.md, "Who
	// counts as one user"). Nil when it is the peer's uid.
	Controller *uint32 `json:"controller_uid,omitempty"`
}

// SortedNS returns c's namespaces in the order of Namespaces, unknown
// kinds last by name.
func (c *Container) SortedNS() []string {
	order := func(k string) int {
		if i := slices.Index(Namespaces, k); i >= 0 {
			return i
		}
		return len(Namespaces)
	}
	kinds := make([]string, 0, len(c.NS))
	for k := range c.NS {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int {
		if oa, ob := order(a), order(b); oa != ob {
			return oa - ob
		}
		return strings.Compare(a, b)
	})
	return kinds
}
