package approval

import "errors"

// Errors a decision can get back.
var (
	// ErrNotPending: the request was already decided, timed out or was
	// withdrawn. A late decision does nothing.
	ErrNotPending = errors.New("the request is no longer waiting (already decided, timed out or withdrawn)")
	// ErrHashMismatch: the decision was made on a different rendering of
	// the request than the one waiting.
	ErrHashMismatch = errors.New("the decision is for a different request than the one waiting (hash mismatch); nothing was decided")
	// ErrBadChoice: the decision is none of allow_once, allow_session, deny.
	ErrBadChoice = errors.New("unknown decision")
	// ErrNoSessionGrant: allow_session for a request that cannot be granted
	// for the session (Shown.GrantRefusal); nothing was decided.
	ErrNoSessionGrant = errors.New("allow for this session refused; nothing was decided")
	// ErrNoGrant: revoke named a grant that does not exist.
	ErrNoGrant = errors.New("no such session grant")
	// ErrDuplicateID: a request with the same id is already waiting. Two
	// waiting requests never share an id, so a decision (which names the
	// id) can never be taken for the other one.
	ErrDuplicateID = errors.New("a request with this id is already waiting for approval; send a fresh id")
	// ErrNoRun: stop or output named a command that is not running (it
	// finished, or the id is wrong).
	ErrNoRun = errors.New("no such running command: it has finished, or the id is wrong")
	// ErrStopping: stop named a command that a console already stopped.
	ErrStopping = errors.New("the command is already being stopped")
)

// ErrWithdrawn is the cause the daemon gives a request's context when the
// requesting client disconnects while it waits.
var ErrWithdrawn = errors.New("the requesting client disconnected")
