package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agent-sudo/agent-sudo/approval"

	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
	"github.com/coreos/go-systemd/v22/journal"
)

// Unfinished is a request that a log file shows allowed and never finished:
// a decision that allowed it, perhaps its exec record, and no result
// record. Read at a daemon's start, before it serves anything, it is a
// request of a daemon that stopped (was killed, crashed) while the request
// was under way: [Joiner] would list it [StatusRunning] for ever.
type Unfinished struct {
	ID, Ref, Session, Host string
	// Started: the request's exec record is in the file, so its pipeline
	// may have run; otherwise it was allowed and never started.
	Started bool
	// DaemonPID is the pid of the daemon whose start record last precedes
	// the request's first record in the file; 0 when there is none.
	DaemonPID int
	// Line is the line of the request's first record in the file.
	Line int
	// allowed: a decision that allowed it, or an exec record, was read.
	allowed bool
}

// UnfinishedRequests reads the log file at path (that file only, not the
// rotated ones) and returns the requests it shows allowed and never
// finished, those [Joiner] calls [StatusRunning], in the order of their
// first records. Lines that are not records (torn, corrupt, too long) are
// skipped, as RecentRequests skips them; a file that cannot be read is an
// error. A starting daemon reads it with [StartScan], in the same pass as
// the recent requests.
//
// It decodes only the fields it needs, line by line, without [Read] and
// [Joiner]: the daemon runs it at every start, and what it links weighs on
// its resident memory (docs/performance.md, "The daemon's size");
// TestUnfinishedRequests checks that it agrees with Joiner.
func UnfinishedRequests(ctx context.Context, path string) ([]Unfinished, error) {
	u := newUnfinishedScan()
	if err := eachLine(ctx, path, u.line); err != nil {
		return nil, fmt.Errorf("audit: looking for unfinished requests: %w", err)
	}
	return u.result(), nil
}

// unfinishedScan follows, line by line, the requests of one log file that
// have no outcome yet.
type unfinishedScan struct {
	open   map[string]*Unfinished // requests without an outcome, by ref
	latest map[string]string      // the ref of the latest open request of each id
	pid    int                    // the pid of the last daemon start record
}

func newUnfinishedScan() *unfinishedScan {
	return &unfinishedScan{open: map[string]*Unfinished{}, latest: map[string]string{}}
}

// line takes the complete line number n of the file.
func (s *unfinishedScan) line(n int, line []byte) {
	var r struct {
		Type    Type   `json:"type"`
		ID      string `json:"id"`
		Ref     string `json:"ref"`
		Session string `json:"session"`
		Host    string `json:"host"`
		Request *struct {
			Refused string `json:"refused"`
		} `json:"request"`
		Decision *struct {
			Verdict string `json:"verdict"`
		} `json:"decision"`
		Exec   *struct{} `json:"exec"`
		Result *struct{} `json:"result"`
		Daemon *struct {
			Event string `json:"event"`
			PID   int    `json:"pid"`
		} `json:"daemon"`
	}
	if json.Unmarshal(line, &r) != nil {
		return
	}
	switch {
	case r.Type == TypeDaemon:
		if r.Daemon != nil && r.Daemon.Event == DaemonStarted {
			s.pid = r.Daemon.PID
		}
		return
	case r.Type == TypeRequest:
		if r.Request == nil || r.Request.Refused == "" {
			ref := LineHash(line)
			s.open[ref] = &Unfinished{ID: r.ID, Ref: ref, Session: r.Session, Host: r.Host, DaemonPID: s.pid, Line: n}
			s.latest[r.ID] = ref
		}
		return
	case !r.Type.Valid():
		return
	}
	ref := r.Ref
	u := s.open[ref]
	if u == nil {
		ref = s.latest[r.ID]
		u = s.open[ref]
	}
	if u == nil {
		// The request record is in a file that was not read.
		ref = r.Ref
		u = &Unfinished{ID: r.ID, Ref: ref, Session: r.Session, Host: r.Host, DaemonPID: s.pid, Line: n}
		s.open[ref] = u
		s.latest[r.ID] = ref
	}
	done := false
	switch {
	case r.Decision != nil:
		u.allowed = approval.Verdict(r.Decision.Verdict) == approval.Allow
		done = !u.allowed
	case r.Exec != nil:
		u.allowed, u.Started = true, true
	case r.Result != nil:
		done = true
	}
	if done {
		delete(s.open, ref)
		if s.latest[u.ID] == ref {
			delete(s.latest, u.ID)
		}
	}
}

// result is the requests left allowed and unfinished, in file order.
func (s *unfinishedScan) result() []Unfinished {
	var out []Unfinished
	for _, u := range s.open {
		if u.allowed {
			out = append(out, *u)
		}
	}
	// In file order; by insertion, as there are few (a generic sort
	// costs the daemon tens of kilobytes; docs: TestDaemonSizeBudget).
	for i := 1; i < len(out); i++ {
		for k := i; k > 0 && out[k].Line < out[k-1].Line; k-- {
			out[k], out[k-1] = out[k-1], out[k]
		}
	}
	return out
}

// Abandoned writes the result record of u, a request a daemon no longer
// running left unfinished (see [UnfinishedRequests]), so that the log no
// longer shows it running: status error, no exit codes, message saying what
// happened, and killed, the processes of the request found still alive and
// killed at this start (at most [MaxSurvivors] listed, all counted), with
// cgroupErr saying what went wrong emptying its cgroup. It returns once the
// record is durable, and sends a journal entry with it.
func (l *Log) Abandoned(ctx context.Context, u Unfinished, message string, killed []runner.Survivor, cgroupErr string) error {
	r := &ResultSection{
		Status: proto.StatusError, Message: message,
		ExitCodes: []int{}, Stages: []ResultStage{},
		StdoutSHA256:   hashValue(nil),
		SurvivorsCount: len(killed),
		CgroupError:    cgroupErr,
	}
	for i, sv := range killed {
		if i == MaxSurvivors {
			break
		}
		r.Survivors = append(r.Survivors, Survivor{PID: sv.PID, Exe: strings.ToValidUTF8(sv.Exe, "\uFFFD")})
	}
	rec := &Record{Type: TypeResult, ID: u.ID, Ref: u.Ref, Session: u.Session, Host: u.Host, Result: r}
	rcpt, err := l.Append(ctx, rec)
	l.journal(rec, rcpt, err, journal.PriWarning,
		fmt.Sprintf("request %s abandoned: %s", journalText(u.ID, maxJournalLabel), journalText(message, maxJournalReason)),
		map[string]string{"AGENT_SUDO_STATUS": string(proto.StatusError)})
	if err != nil {
		return fmt.Errorf("audit: recording that request %q was abandoned: %w", u.ID, err)
	}
	return nil
}
