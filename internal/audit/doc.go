// Package audit is agent-sudod's audit trail: an append-only, hash-chained
// log of every request, who decided it, exactly what ran, and what came
// out; and the reading side (iterating, following, verifying, joining the
// records of a request) that `agent-sudo audit` uses.
//
// The log is a file of JSON lines, one [Record] per line, in ASCII only.
// A request gets a request record (or one refusal, [Refusal]), then a
// decision, an exec record and a result, written through its [Trail]; the
// daemon's own start and stop are daemon records ([Log.Daemon]). Each
// record's prev is the SHA-256 of the line before it, from [Genesis], and
// the chain continues across rotated files ([Files]).
//
// [Log.Append] fails closed: it returns only once its record is written
// and synced, and the exec record is synced before the first stage starts
// ([Trail.Started]), so nothing runs that is not on disk first. Records
// written at the same time share one sync (group commit), and the records
// that need not wait are synced by the next group or 50 ms later. A failed
// write cuts back only its own partial bytes: a record reported written
// stays. Only a failed sync cuts the file back to its last synced line,
// and then each record reported written that it cut is logged and sent to
// the journal. The writer keeps its file, and the lock, for
// as long as the path names that file, and opens the file the path names
// once it is renamed or removed. [Open] refuses a log that anyone but root
// could rewrite, and locks it. [Verify] and [VerifyWith] check the chain and
// name the first line that is not as it was written; [Read], [Follow] and
// [Joiner] read it back.
//
// docs/audit.md specifies the format, the guarantees and what the chain
// does and does not protect against.
package audit
