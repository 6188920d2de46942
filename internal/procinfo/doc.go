// Package procinfo reads what the kernel says about a process from /proc:
// who its ancestors are ([Proc.Ancestry], [Proc.WalkAncestry]), which
// namespaces and cgroup it lives in ([Proc.Container]), who logged in
// behind it ([Proc.Person]), and whether the process that connected is
// still the one at its pid ([PinPeer], [Pin.Check]).
//
// What it promises: the types say which of what they hold the kernel keeps
// (parent links, sessions, /proc/PID/exe, namespace inodes, the cgroup,
// the uid map, the login uid) and which is the process's own description
// of itself (comm and argv, which it can rewrite: shown beside the exe,
// always escaped by the caller). Reading never fails: a process that exits
// or a file that cannot be read ends the walk with a marker saying why,
// keeping what was read; every read is bounded ([MaxRead], [MaxArg], [MaxArgs],
// [MaxDepth]), and a walk under a context with [WalkTimeout] returns what it
// read when a hostile process holds up the read of its arguments. A pid
// read here may already name another process: the results are for a
// human's judgement and the audit record, never for an authorisation.
// [PinPeer], at accept, takes a pidfd of the peer (SO_PEERPIDFD, else
// pidfd_open), its start time and its exe; [Pin.Check], after the walk,
// reads them again and says what changed (Ancestry.Changed). A [Proc]
// with Own set compares namespaces with the daemon's own, read once.
//
// docs/approving.md ("Who asked: facts and claims") explains what the
// human sees and why, docs/security.md what the pin cannot tell, and
// docs/performance.md what the reads cost.
package procinfo
