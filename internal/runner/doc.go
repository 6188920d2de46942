// Package runner executes an approved pipeline and owns the policy for the
// environment and the program files it runs.
//
// The daemon runs as root and executes what a human approved, so everything
// here is about making what runs exactly what was shown, and making sure it
// stops when its time is up. The reasoning behind each rule follows.
//
// # No shell, ever
//
// Every stage is an argv array handed to execve(2) (through
// [os.StartProcess]). Nothing is joined into a string and nothing is parsed
// by a shell, so no argument can become a second command. Stage i's stdout is
// a pipe to stage i+1's stdin; the first stage reads a pipe that a goroutine
// fills with the request's stdin ([Spec.Stdin], then end of file), or
// /dev/null when there is none, and can never reach the daemon's stdin or the
// operator's terminal.
//
// # What is approved is what runs: program resolution
//
// [Resolve] turns the agent's argv[0] into the file that will be executed.
// A bare name is looked up in the configured secure path only, never in the
// daemon's PATH. A name with a slash must be absolute. Symlinks are followed
// component by component, as the kernel does, and every hop is recorded as a
// list ([Resolved.Chain]): a list, because a file name may itself contain
// " -> ", and a chain joined into a string and split again for display could
// then be forged. Every directory in which a name was looked up, and the
// program file itself, is judged: when it is not owned by root or is
// writable by group or others, it is listed in [Resolved.Untrusted], which
// the approver sees as a warning and which rules out session grants.
//
// A path is not an identity: whoever can write a directory on the way can
// replace the file between approval and exec, and whoever can write the
// file can rewrite it. So the daemon opens the program when it plans the
// request ([OpenProgram]), hashes it from that descriptor, shows the human
// its device, inode and SHA-256, and executes that descriptor: just before the
// first stage starts, [File.Verify] checks every stage's device, inode and
// hash again (so a pipeline with one changed program runs none of its
// stages), and direct mode executes /proc/self/fd/N. Go's os.StartProcess cannot call
// execveat, but exec of /proc/self/fd/N is the same thing: the kernel opens
// the file through the descriptor before it closes close-on-exec
// descriptors, so a binary runs without inheriting it. A "#!" script is
// different: its interpreter opens the path it is given after exec, so a
// script gets its descriptor as fd 3 (and sees /proc/self/fd/3 as its path).
// N must survive Go's child until execve: the child moves its error pipe
// (and stdio that sits below its target) onto the numbers just above the
// highest descriptor it passes, silently closing what was there, so a
// binary is executed through a duplicate numbered above that range.
// argv[0] is the agent's name either way. What remains is the instant
// between the last hash and execve for a file the agent can write; such a
// file is flagged NOT ROOT-ONLY and never granted for a session.
//
// sudo opens the program again by path and offers no way to pass a
// descriptor. In sudo mode the daemon therefore refuses, before anyone is
// asked, a program with anything in [Resolved.Untrusted] (only root can then
// change what the path leads to), and checks, before the stages start,
// that the path it gives sudo still leads to the opened file.
//
// Multi-call binaries (busybox, /usr/sbin/iptables -> xtables-legacy-multi)
// choose what to do from argv[0]. In direct mode argv[0] is independent of
// the executed path, so the real path is executed while argv[0] stays the
// name the agent gave ([Command.Args][0]). sudo offers no way to set argv[0]:
// the command it is given is both the file it runs and argv[0]. In sudo mode
// the pre-resolution path ([Command.Link]) is therefore given to sudo, but
// only when [Run] verifies, before starting the stages, that the link
// still resolves to Path and that every directory on the way is owned by root
// and not writable by group or others, so that nobody but root could repoint
// it. Otherwise the real path is given and such a binary sees its real name.
//
// # Environment
//
// [EnvPolicy.BuildEnv] builds the complete environment; nothing is inherited
// from the daemon. The base is PATH (the secure path), HOME, USER and LOGNAME
// of the target user. A request variable must be on the allowlist (a small
// built-in set, [DefaultAllowlist], plus the configured env_allow names and
// prefix globs); anything else is refused with an error, never dropped
// silently, so the agent learns why its command would behave differently.
//
// One deny list ([DenyList]) names the variables that let the environment run
// code or redirect what a program loads (LD_*, BASH_ENV, PYTHONPATH,
// GIT_CONFIG_*, glibc's set-user-id list, ...). It is written once, in
// denyRules, and used twice: [NewEnvPolicy] refuses an env_allow entry that
// could match any of it (so "PYTHONPATH", "LD_*" and "L*" stop the daemon
// from starting, naming the entry, instead of starting a daemon that refuses
// every request), and a request naming a denied variable is told it can never
// be allowed rather than how to allow it. The policy is compiled once, when
// the configuration is loaded; a request is checked against it and nothing
// about the configuration is validated again.
//
// # Values: every allowed variable has a grammar
//
// A name on the allowlist is not enough: programs interpret values, and some
// interpret them as code. debconf builds "use Debconf::FrontEnd::$type" from
// DEBIAN_FRONTEND and evaluates it as Perl, so a DEBIAN_FRONTEND of
// "noninteractive;BEGIN{system(...)}#" ran a root shell under a rule that
// allowed only "dpkg-reconfigure -f noninteractive tzdata". So every
// variable's value must fit a grammar, and a value outside it is refused with
// a message saying which byte was wrong and what is accepted (the value is
// never quoted back: it may be long or hostile):
//
//   - DEBIAN_FRONTEND: one of debconf's frontends (noninteractive, readline,
//     dialog, teletype, text, gnome, kde, editor, passthrough), lower
//     case or with an upper-case first letter, as debconf accepts; never
//     web, which serves root's questions on 127.0.0.1:8001 and takes the
//     answers from any local user, the agent included;
//   - NEEDRESTART_MODE: a, l or i, the only modes needrestart accepts;
//   - LANG and LC_*: empty, C, POSIX, or language[_TERRITORY][.codeset]
//     [@modifier] from letters, digits, '-' and '_' (no '/', so no locale is
//     read from a directory the agent chose; this is stricter than sudo's
//     env_check, which only refuses '/' and '%');
//   - TZ: a tzdata zone name (Europe/Paris, UTC, Etc/GMT+1): components of
//     letters, digits and . _ + -, each starting with a letter, so no
//     leading '/', no ':' prefix (both name a file) and no "..", and no ','
//     or '<', so no POSIX rule with daylight-saving dates; whether the zone
//     exists is not checked, since glibc reads a name it finds no zone file
//     for as a fixed POSIX offset (XYZ-3) or as UTC, and reads nothing else;
//   - TERM (and COLORTERM): a letter or digit, then letters, digits and
//     . _ + -.
//
// A variable an administrator adds with env_allow gets a conservative
// default: ASCII letters, digits and _ . , : / @ % + = - only, at most 1,024
// bytes. The daemon cannot know how the programs a rule allows will use such
// a variable, and the DEBIAN_FRONTEND case shows that "just a setting" can
// reach an eval. White space, quotes and the shell and Perl metacharacters
// (` $ ; | & < > ( ) { } [ ] \ * ? ! # ~ and friends) are what turn a value
// into code in such an eval, and control characters are what make a value
// lie on a terminal or in a log; none is accepted. Space is excluded too:
// with space and '/' a Perl "use X $v" can become "use X qx/cmd/". The set
// still carries what such variables usually hold: words, numbers, paths,
// URLs with ports and credentials (http_proxy), e-mail addresses and ISO
// dates. A few variables administrators commonly add have grammars of their
// own: LANGUAGE and LINGUAS (locale names separated by ':'), git's author
// and committer names (letters of any script, spaces and . , ' _ @ + -) and
// dates (letters, digits, spaces and : + - . ,). A value that needs more
// than this does not belong in a root command's environment: put it in a
// file the command reads, under a rule that names that file.
//
// # Direct mode and sudo mode
//
// In [ModeDirect] the daemon starts each stage itself with the target's uid,
// gid and supplementary groups (an empty group list clears root's groups).
//
// In [ModeSudo] every stage is SudoPath -n -u NAME --preserve-env=LIST --
// PROGRAM ARGS..., so sudo's policy, PAM session and logging apply. sudo's
// own environment is exactly Spec.Env and LIST names every variable in it.
// This was chosen over VAR=value words on sudo's command line, which also
// work, for three reasons: the values stay out of argv, which every local
// user can read in /proc/PID/cmdline for as long as the command runs; sudo's
// log shows the command rather than every variable; and the command can
// follow "--", so a program path containing '=' can never be read as an
// assignment. Both forms need the invoking user to be allowed to set any
// variable, which sudo grants to a rule whose command is ALL (root's rule in
// the default sudoers). The cost is that sudo itself, running as root, sees
// these variables; the deny list covers the ones that matter to it
// (LD_*, GCONV_PATH, LOCPATH, NLSPATH, RES_OPTIONS, HOSTALIASES, ...).
//
// With Debian's default sudoers (env_reset, secure_path, use_pty) every
// Spec.Env variable reaches the command with its value, including PATH,
// HOME, USER and LOGNAME, which beat sudo's own; sudo adds only SUDO_COMMAND,
// SUDO_USER, SUDO_UID and SUDO_GID, and MAIL, SHELL and TERM when Spec.Env
// does not set them. TestRunEnvironment checks exactly this against the
// installed sudo. A sudo PAM stack that includes pam_env could add more.
//
// # One process group, no terminal
//
// All stages join one new process group (the first stage's pid), so that the
// daemon can signal the pipeline and everything it forked with one kill(2).
// sudo without a pty forks the command but leaves it in sudo's own process
// group, which is ours, and also relays the signals it gets; so the group
// covers sudo's command too (TestRunNoTerminal checks that the command's pgrp
// is the stage's pid and its tty_nr is 0).
//
// sudo's use_pty (on in Debian's sudoers) applies only when sudo has a
// controlling terminal: sudo then runs the command in a new session on a pty,
// out of our group, and a kill of the group would no longer reach it. Under
// systemd the daemon has no controlling terminal. When it does (run from a
// shell for debugging, or the tests run from a terminal), [Run] instead makes
// every stage the leader of its own new session (setsid), which leaves it
// without a terminal, and signals each stage's group. In both layouts no
// stage inherits the operator's terminal: /dev/tty cannot be opened, and a
// read from the terminal cannot stop a stage with SIGTTIN.
//
// # Timeouts, kills and reaping
//
// When Spec.Timeout elapses or ctx is cancelled, the group gets SIGTERM and,
// after Spec.KillGrace, SIGKILL; Result.TimedOut is set and the output
// captured so far is kept. When every stage has exited, normally or not,
// whatever is still left in the group (a forgotten background job, a
// grandchild that ignored SIGTERM) gets SIGKILL too: the approval covers the
// pipeline's run, not processes it leaves behind, and such a process would
// otherwise hold the output pipes open.
//
// Run returns only once no live process is left in the group, or in the
// cgroup when there is one (it waits up to two seconds for the kernel to
// finish the processes it SIGKILLed), so a following request does not race
// with a dying one for a lock such as dpkg's. The kernel says when, without
// polling: for the cgroup, cgroup.events turns "populated 0" (POLLPRI on the
// file); for a process group, each member still alive, found once in /proc,
// is opened as a pidfd, which turns readable when it exits (then the group
// is looked at once more). Only on a kernel without pidfds (before Linux
// 5.3) is a group looked at every 5 ms.
//
// Stages are not reaped until every signal has been sent: an unreaped zombie
// leader keeps its pid, and thus the process group id, from being reused, so
// kill(-pgid) can never hit an unrelated group. The daemon watches for exits
// with waitid(WNOWAIT) and reaps at the end. Every started process is reaped
// before [Run] returns, also when a later stage fails to start (then the
// stages already running are killed at once).
//
// A process that leaves the group on purpose (setsid, a double fork into a
// new session) cannot be reached by the group kill; the pipeline's cgroup
// catches it (next section). Without a cgroup (Spec.Cgroups nil), if such a
// process keeps an output pipe open, [Run] stops reading one second after
// the stages are gone.
//
// # One cgroup per pipeline
//
// With Spec.Cgroups set, [Run] makes a new cgroup v2 directory for the
// pipeline under the daemon's own cgroup ([OpenCgroups]; under systemd the
// service's cgroup, which the unit delegates with Delegate=yes) and starts
// every stage inside it with clone3's CLONE_INTO_CGROUP
// (SysProcAttr.UseCgroupFD): the child is a member from its first
// instruction, before it execs, so there is no moment in which it or
// anything it forks is outside. sudo and its command inherit the membership.
// Moving a process in after it started, which is all a systemd transient
// scope offers, would leave that moment open.
//
// When the timeout passes or ctx is cancelled, the process groups get SIGTERM
// as above and, after the grace, the whole cgroup gets SIGKILL (cgroup.kill;
// before Linux 5.14 the cgroup is frozen, each member killed and the cgroup
// thawed, so that nothing forks in between). When every stage has exited
// normally, the live members that remain are listed in Result.Survivors
// (pid and executable) and then killed the same way: the approval covered the
// pipeline's run, not what it leaves behind. Run then waits for the cgroup to
// be empty (cgroup.events "populated 0") and removes it; what goes wrong there
// is in Result.CgroupError. A pipeline whose cgroup cannot be made does not
// start.
//
// The cgroups are named agent-sudo-PID-N after the daemon's pid. A daemon
// that crashed leaves its empty cgroups behind: [OpenCgroups] removes those
// of pids with no process, and a name that is still taken (the pid was
// reused, or the cgroup still holds processes) is skipped.
//
// The cgroup contains processes that fork, daemonise or change session. It
// does not contain a root process that wants out: root can write its pid to
// another cgroup's cgroup.procs or have systemd start a unit for it. Such a
// process was approved to run as root; the human's approval is the control
// there, not the cgroup.
//
// # Output
//
// The last stage's stdout and each stage's stderr are read concurrently into
// buffers that grow up to Spec.MaxOutput and no further. Past the cap the
// reader keeps reading and discarding, so a command is never blocked on a
// full pipe nor killed by SIGPIPE because its output was too long; the
// stream's truncated flag is set. The daemon keeps no copy of the pipe ends it
// handed to children, so a stage that exits early gives its writer EOF or
// SIGPIPE exactly as in a shell pipeline.
//
// Each buffer is an anonymous mapping of the cap, reserved up front and read
// into directly (capture.go). Its first 2 MiB use ordinary 4 KiB pages, so an
// output of a few bytes costs a page; the rest is advised MADV_HUGEPAGE, so a
// large output takes one page fault per 2 MiB instead of one per 4 KiB: a
// 16 MiB stdout took 4,100 faults and 152 ms of CPU to capture, 523 faults and
// 49 ms with the advice (docs/performance.md). A stream longer than 2 MiB may
// then hold up to 2 MiB more than it wrote. Where transparent huge pages are
// off ("never"), the advice does nothing.
//
// While the stages run, a [Live] (Spec.Live) shows the end of each stream so
// far: the reader keeps a copy of the last [TailBytes] bytes it read, kept
// or discarded, beside the capture, and a Live reads only that copy, under
// a lock of its own. It never touches the capture's buffer, so it cannot
// slow the reader, change what is captured, or read memory that Release
// has freed.
//
// # Exit codes
//
// A stage that exits normally reports its exit status. A stage killed by
// signal N reports 128+N, as shells do (143 for SIGTERM, 137 for SIGKILL, 141
// for SIGPIPE). In sudo mode the stage is sudo, which exits with its command's
// status and re-raises a signal that killed the command, so the same numbers
// result; sudo's own failures (unknown user, command not found, permission
// denied) are exit status 1 with sudo's message on the stage's stderr.
//
// # Working directory
//
// Spec.Dir ("" means "/") is entered by the child. The daemon resolves the
// requested directory when it plans the request ([ResolveDir]), shows the
// resolved path and its chain, and opens it ([OpenDir], O_PATH); the child
// then enters /proc/self/fd/N, which is that directory whatever its path
// leads to by then (Go's child changes directory before it rearranges
// descriptors, so the daemon's descriptor number is valid there). In direct
// mode Go changes directory after dropping privileges, so a directory the
// target user cannot search fails the start (directories above it no longer
// matter). sudo inherits the directory from the daemon and does not enter it
// again as the target user, so in sudo mode such a directory is accepted.
//
// # Descriptors
//
// A stage gets exactly stdin, stdout and stderr (and, for a script run
// through its descriptor, fd 3). Go opens everything close-on-exec, but a
// library need not: the terminal reader of the console in agent-sudod --tty
// created its epoll descriptor without EPOLL_CLOEXEC, and it leaked into
// every stage, which could then freeze the console. Before each stage starts
// the runner marks every descriptor from 3 up close-on-exec (close_range with
// CLOSE_RANGE_CLOEXEC, or one fcntl per descriptor on older kernels);
// descriptors passed in ProcAttr.Files are still passed, since the child's
// dup2 clears the flag. A descriptor a library creates between that sweep and
// the fork could still leak; the sweep runs before every stage, so it is
// caught at the next one.
//
// # Cost of a request
//
// The daemon runs every request through this package, so the kernel files it
// reads and writes per pipeline (cgroup.procs, cgroup.kill, cgroup.events,
// /proc/self/stat) and the files it only passes on (the cgroup directory,
// /dev/null) go through package sysfile's plain system calls, which says
// why. A cgroup is killed once: after cgroup.kill nothing can enter it.
// docs/performance.md has the figures.
package runner
