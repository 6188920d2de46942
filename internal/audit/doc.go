// Package audit is agent-sudod's audit trail: an append-only, hash-chained
// log of every request, who decided it, exactly what ran, and what came
// out; and the reading side (iterating, following, verifying, joining the
// records of a request) that `agent-sudo audit` uses.
//
// # Format
//
// The log is a file of JSON lines (default /var/log/agent-sudo/audit.jsonl,
// key audit_log), one [Record] per line, in ASCII only: every non-ASCII
// character is written as a \u escape and control characters are escaped
// by JSON, so printing the file on a terminal is safe. Invalid UTF-8 (only
// possible in a peer's executable path) is recorded as U+FFFD.
//
// Every record has the header type, time (UTC, RFC 3339), id, session,
// host (the agent's claim), daemon_host (the daemon's own host name, from
// [Options].DaemonHost; absent in older logs), peer ({uid, pid, exe},
// absent when unknown), and at the end of the line seq and prev. It carries the one section named by its type:
//
//   - request: the request as received (pipeline, reason, privileged,
//     forward_agent, cwd, request_time, env, and for a request with stdin
//     stdin_bytes, stdin_sha256 and, when opted in, stdin), or a request
//     refused without
//     asking anyone, with request.refused saying why. A refused request has
//     no other record; an accepted one is followed by:
//   - decision: verdict (allowed, denied, timeout, withdrawn, error) and by
//     (the rule's name, "console uid=0 tty=/dev/pts/1 pid=123",
//     "approval_timeout", "client", "daemon shutting down", "approver"; the
//     values of package approval, empty on an error in older logs);
//   - exec, for an allowed request: each stage's resolved program path and
//     argv, the target user, the mode (sudo or direct), the directory and
//     the complete environment;
//   - result: the answer's status and message, exit codes, start, end and
//     duration, the number of stdout bytes and of each stage's stderr bytes
//     that were captured, truncation flags, and the SHA-256 of stdout and of
//     each stage's stderr.
//
// The daemon itself writes a daemon record ([Log.Daemon]) when it starts
// serving and when it stops, with why: event (started, stopped), reason,
// version, pid, config and instance. It belongs to no request (empty id,
// session and host); the [Joiner] skips it, and verify checks it as any
// other line of the chain.
//
// The records after the request record carry ref, the hash of their
// request record, so a request's records can be joined even when a client
// reuses an id ([Joiner]). A status is derived from the result record,
// else from the decision, else from a refusal.
//
// Environment values may be secrets: by default each is recorded as
// "sha256:" and the hex SHA-256 of the value (env_values "sha256"), with
// audit_env_values = true in full (env_values "full"). The hash is not
// salted: it proves which value was used to someone who knows it, and a
// value with little entropy (a PIN, "true") can be found by guessing.
//
// A request's stdin is often a file's new content, a key or a password, so
// by default only its size and SHA-256 are recorded (stdin_bytes,
// stdin_sha256): the hash proves which content ran to someone who has the
// file. audit_stdin = true ([Options].Stdin) also records the content
// itself, as standard base64 (stdin), so that the log alone shows what was
// written; the log is then as secret as the most secret input. A refused
// request whose line is too long to be recorded in full records no content.
//
// # Guarantees
//
// Fail closed. [Log.Append] returns only once its record is durable:
// written and synced (fsync) to the file. The exec record is written
// this way before the first stage is started ([Trail.Started]), so nothing
// runs that is not on disk first; its sync also covers the request and
// decision records, which are written before it without waiting for a sync
// of their own (one sync per allowed request, see "Group commit"). When a
// write or a sync fails (disk full, file made immutable or read-only, I/O
// error), the call returns an error, the file is cut back to its last
// synced line, and it is closed; a request whose earlier records were cut
// back with it goes no further (the writer's epoch);
// every later Append opens it again, so the log recovers by itself once it
// is writable, and the chain continues from the last line on disk. A failed
// Append never leaves a partial line that a later line would be appended
// to; a partial line left by a crash is removed when the file is opened (it
// was never reported durable). The converse does not hold: a record whose
// Append failed (the context ended during the sync, say) may still be in
// the file, so the log may hold an exec record of a command that never ran,
// never the reverse.
//
// Group commit. One writer goroutine takes every record waiting, writes
// them with one write and one sync, and then answers each caller with its
// own record's [Receipt]; no caller of Append or Started is answered
// before its record is synced. The request, decision and result records
// are written lazily: the caller is answered once the line is written, and
// the line is synced by the next synced group, by the writer itself
// syncDelay (50 ms) later, or at Close. So an allowed request waits for one
// sync, before its first stage starts, and its answer waits for none. A
// crash of the daemon loses no written line (it is in the page cache); a
// power loss can lose the lazily written lines of the last 50 ms, never an
// exec record.
//
// Safe location. The directory is created mode 0750 owned by root:adm (0700
// root:root where there is no adm group) and the file 0640 root:adm (0600
// root:root). An existing directory or file that group or others can
// write, or that is not owned by root (when the daemon runs as root), is
// refused, as are a symbolic link and anything but a regular file: whoever
// can write them can rewrite or replace the log. Only the log's own
// directory is checked, not its ancestors. The file is locked (flock) while
// it is open, so a second daemon cannot write to it.
//
// # The hash chain
//
// prev is the lower-case hex SHA-256 of the previous line, without its
// newline; seq counts records from 1. The first record of a log has prev
// [Genesis], the SHA-256 of "agent-sudo audit log v1". A new file after
// rotation continues the chain: the daemon continues from the last record
// it wrote, and at startup, when audit.jsonl is empty or missing and
// audit.jsonl.1 (or audit.jsonl.1.gz) exists, from the last line of that
// file. [Verify] checks the chain across the files of a log ([Files]: the
// rotated files .N.gz ... .2.gz, .1, then the current one, each plain or
// gzip) and names the first line that was altered, removed, inserted or
// moved.
//
// What the chain protects against: anyone who edits, deletes, inserts or
// reorders lines anywhere but at the very end, without rewriting everything
// after the change, and the loss of a rotated file in the middle.
//
// What it does not protect against:
//
//   - Root. The hashes are not keyed, so whoever can write the file can
//     rewrite the chain from the altered line to the end, and it verifies.
//     The chain makes tampering evident to someone who kept a hash from
//     before, not impossible.
//   - Cutting the end off, or altering the last line. Nothing follows them
//     in the file; only a hash kept elsewhere can show it. Every decision,
//     result and refused request, and the opening and closing of the log,
//     is also sent to the systemd journal with the record's hash
//     (AGENT_SUDO_RECORD_HASH), so [VerifyWith] with an anchor from the
//     journal detects it, up to the records written after the last journal
//     entry (a request record waiting for a decision, the exec record of a
//     command still running). The journal is only as safe as its own
//     storage (journald's Forward Secure Sealing, or a remote journal,
//     makes it safer).
//   - Removing the oldest files, or lines from the start of the oldest file
//     checked: the chain then starts from a hash that cannot be checked,
//     which VerifyResult.Start shows (it is not Genesis).
//   - Events that never reached the log: a request refused because the log
//     was unavailable is answered "audit log unavailable" and is only in
//     the journal.
package audit
