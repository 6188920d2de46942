// Package procinfo reads what the kernel says about a process from /proc:
// who its ancestors are, which namespaces and cgroup it lives in, and who
// logged in behind it.
//
// # Kernel facts and self-descriptions
//
// The daemon shows a human who asked for a command. The request's host,
// session and time are the agent's claims; the peer's uid and pid come from
// SO_PEERCRED (package peercred) and cannot be forged. This package adds
// what /proc says about that pid and its parents. Not all of it is equally
// trustworthy, and the types say which is which:
//
//   - The parent links, session ids, /proc/PID/exe (the file the process
//     executes), namespace inode numbers, the cgroup, the uid map and the
//     login uid are kept by the kernel; a process cannot set them to
//     anything it likes (an unprivileged process can leave its session or
//     be re-parented when its parent exits, never choose another parent).
//   - comm and argv are the process's own description of itself: a process
//     can rename itself (prctl PR_SET_NAME) and rewrite its argument
//     memory. They are shown because they make the chain readable ("claude"
//     rather than "node"), always next to the exe, and always escaped.
//
// # Best effort, bounded
//
// A process can exit, or its pid be reused, between any two reads: the walk
// records what it read and a marker saying why it stopped ("exited", "depth
// limit"), and never fails the request. Every read is bounded (MaxRead),
// names and arguments are cut (MaxArg, MaxArgs) and the walk stops after
// MaxDepth hops. Reading /proc/PID/cmdline touches the process's memory and
// can be held up by a hostile process (a userfaultfd page): callers read
// with [WalkTimeout] so that a slow walk is cut off with what it read so
// far.
//
// A pid read here may already belong to another process: the daemon reads
// the ancestry once it has read the request, while the requesting client
// waits for its answer, and the ancestry is for the human's judgement and
// the record, never for an authorisation decision.
//
// # The requester is pinned at accept
//
// The client that connected need not be the process at its pid when the
// ancestry is read: it can exec another program before the end of its
// request line, or hand the socket on and exit (its pid then free for
// reuse). [PinPeer] takes, at accept, a pidfd of the peer (SO_PEERPIDFD,
// which names the process that connected; pidfd_open of the pid on older
// kernels), its start time and its exe's path, device and inode, from the
// kernel's /proc; [Pin.Check], after the walk, reads them again and
// checks the pidfd last: the process still alive means the reads were of
// it. What changed goes in Ancestry.Changed.
//
// # Cost
//
// The daemon walks the ancestry and reads the container identity of every
// request's peer, so the files are read with package sysfile's plain system
// calls. A Proc with Own set compares the peer's namespaces with the
// daemon's own read once, not from /proc/self each time. docs/performance.md
// has the figures.
package procinfo
