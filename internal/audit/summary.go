package audit

import (
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/proto"
)

// Statuses a request can have in a [Summary] besides the protocol's ok,
// denied, timeout and error.
const (
	// StatusWithdrawn: the client went away before a decision; nothing ran
	// and nobody was answered.
	StatusWithdrawn = "withdrawn"
	// StatusPending: no decision is recorded yet.
	StatusPending = "pending"
	// StatusRunning: allowed, and no result is recorded yet.
	StatusRunning = "running"
)

// Summary is one request, joined from its records.
type Summary struct {
	ID, Session, Host string
	// DaemonHost is the daemon_host of the request's first record read:
	// the machine whose daemon handled it; empty in older logs.
	DaemonHost string
	// Time is when the request was received (its request record), or the
	// time of its first record found when the request record is not in the
	// files read.
	Time time.Time
	Peer *Peer
	// Ref is the hash of the request record.
	Ref string
	// File and Line locate the request's first record read.
	File string
	Line int
	// Request is the request record's section: what the agent asked for,
	// as recorded. Nil when the request record is not in the files read;
	// from the journal, it has what the entries say (the pipeline, a
	// refusal).
	Request *RequestSection
	// Status is the outcome: from the result record if there is one, else
	// from the decision (denied, timeout, withdrawn, error), else error for
	// a refused request; StatusRunning or StatusPending while there is no
	// outcome yet (or the daemon stopped before recording it).
	Status string
	// Verdict and DecidedBy are from the decision record.
	Verdict, DecidedBy string
	// ExitCodes and Duration are from the result record.
	ExitCodes []int
	Duration  time.Duration
	// Message is the refusal, the decision's note or the result's message.
	Message string
}

// Pipeline is the request's pipeline, as the request record has it; nil
// when it is not known.
func (s *Summary) Pipeline() [][]string {
	if s.Request == nil {
		return nil
	}
	return s.Request.Pipeline
}

// Joiner joins records into one Summary per request. Records are matched
// by ref, the hash of their request record, so that two requests that
// reuse an id stay apart; a record without a known ref goes to the latest
// open request with its id. Daemon records, and records of a type this
// version does not know, are no request's and are skipped. The zero Joiner
// is not usable; use NewJoiner.
type Joiner struct {
	open   map[string]*Summary // requests without an outcome, by ref
	latest map[string]*Summary // the latest open request of each id
}

// NewJoiner returns an empty Joiner.
func NewJoiner() *Joiner {
	return &Joiner{open: map[string]*Summary{}, latest: map[string]*Summary{}}
}

// Add folds one entry into its request's Summary and returns it, whether it
// is a new request, and whether the request has ended with this record. A
// corrupt entry (Record nil), a daemon record and a record of an unknown
// type return nil.
func (j *Joiner) Add(e Entry) (s *Summary, created, done bool) {
	r := e.Record
	if r == nil || r.Type == TypeDaemon || !r.Type.Valid() {
		// A daemon record belongs to no request; a record of a type a
		// later version added is not this version's to join.
		return nil, false, false
	}
	if r.Type == TypeRequest {
		s = &Summary{ID: r.ID, Session: r.Session, Host: r.Host, DaemonHost: r.DaemonHost, Time: r.Time, Peer: r.Peer,
			Ref: e.Hash, File: e.File, Line: e.Line, Status: StatusPending}
		if q := r.Request; q != nil {
			s.Request = q
			if q.Refused != "" {
				s.Status, s.Message = string(proto.StatusError), q.Refused
				return s, true, true
			}
		}
		j.open[e.Hash] = s
		j.latest[r.ID] = s
		return s, true, false
	}
	s = j.open[r.Ref]
	if s == nil {
		s = j.latest[r.ID]
	}
	if s == nil {
		// The request record is in a file that was not read.
		s = &Summary{ID: r.ID, Session: r.Session, Host: r.Host, DaemonHost: r.DaemonHost, Time: r.Time, Peer: r.Peer,
			Ref: r.Ref, File: e.File, Line: e.Line, Status: StatusPending}
		created = true
		j.open[r.Ref] = s
		j.latest[r.ID] = s
	}
	switch {
	case r.Decision != nil:
		d := r.Decision
		s.Verdict, s.DecidedBy = d.Verdict, d.By
		if d.Message != "" {
			s.Message = d.Message
		}
		switch approval.Verdict(d.Verdict) {
		case approval.Allow:
			s.Status = StatusRunning
		case approval.Deny:
			s.Status, done = string(proto.StatusDenied), true
		case approval.Timeout:
			s.Status, done = string(proto.StatusTimeout), true
		case approval.Withdrawn:
			s.Status, done = StatusWithdrawn, true
		default: // approval.Failed; an unknown verdict did not run either
			s.Status, done = string(proto.StatusError), true
		}
	case r.Exec != nil:
		s.Status = StatusRunning
	case r.Result != nil:
		x := r.Result
		s.Status, s.ExitCodes, s.Duration, done = string(x.Status), x.ExitCodes, time.Duration(x.DurationNS), true
		if x.Message != "" {
			s.Message = x.Message
		}
	}
	if done {
		if j.open[s.Ref] == s {
			delete(j.open, s.Ref)
		}
		if j.latest[s.ID] == s {
			delete(j.latest, s.ID)
		}
	}
	return s, created, done
}
