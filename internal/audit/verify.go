package audit

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/agent-sudo/agent-sudo/approval"
)

// VerifyOptions are the optional checks of [VerifyWith].
type VerifyOptions struct {
	// Anchors are record hashes kept outside the log, such as the
	// AGENT_SUDO_RECORD_HASH of journal entries. Each must be the hash of a
	// line in the files checked; one that is not means records were removed
	// from the end of the log or the anchored record was altered.
	Anchors []string
	// Signed, when set, checks the signature of every signed decision
	// (DecisionSection.Signed) and returns why one does not verify; the
	// record's statement must also name the record's ref. Verify reports
	// the first that fails as a *ChainError on its line.
	Signed func(s *SignedBy) error
}

// VerifyResult describes a chain that verified.
type VerifyResult struct {
	// Records and Files count what was checked.
	Records, Files int
	// Start is the prev of the first record: Genesis when the chain starts
	// in the files checked, or else the hash of the last record of an
	// older file that was not checked (rotated away, or not given).
	// StartSeq is the first record's seq.
	Start    string
	StartSeq uint64
	// Head is the hash of the last record and HeadSeq its seq: compare
	// them with the last AGENT_SUDO_RECORD_HASH in the journal.
	Head    string
	HeadSeq uint64
	// Signed counts the signed decisions checked (with
	// VerifyOptions.Signed).
	Signed int
}

// ChainError names the first line where the log is not what the daemon
// wrote.
type ChainError struct {
	// File and Line locate the line; Line is 0 for a problem with the
	// files as a whole (a missing anchor).
	File string
	Line int
	// Problem says what is wrong.
	Problem string
}

// Error returns "file:line: problem".
func (e *ChainError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Problem)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Problem)
}

// Verify checks the hash chain of files, given oldest first (as [Files]
// returns them), and returns what it checked. A break in the chain is
// reported as a *[ChainError] naming the first line that was altered,
// removed, inserted or moved; an unreadable file or ctx ending as another
// error. docs/audit.md ("The hash chain") says what this proves.
func Verify(ctx context.Context, files ...string) (*VerifyResult, error) {
	return VerifyWith(ctx, VerifyOptions{}, files...)
}

// VerifyWith is Verify with the checks of opts.
func VerifyWith(ctx context.Context, opts VerifyOptions, files ...string) (*VerifyResult, error) {
	res := &VerifyResult{Files: len(files)}
	anchors := map[string]bool{}
	for _, a := range opts.Anchors {
		anchors[strings.ToLower(strings.TrimSpace(a))] = false
	}
	next, stop := iter.Pull2(Read(ctx, files...))
	defer stop()
	var prev1, prev2 *Entry
	for {
		e, err, ok := next()
		if !ok {
			break
		}
		if err != nil {
			var le *LineError
			if errors.As(err, &le) {
				return nil, &ChainError{File: le.File, Line: le.Line, Problem: le.Err.Error()}
			}
			return nil, err
		}
		cur := &e
		r := cur.Record
		switch {
		case prev1 == nil:
			res.Start, res.StartSeq = r.Prev, r.Seq
			if r.Prev == Genesis && r.Seq != 1 {
				return nil, &ChainError{File: cur.File, Line: cur.Line, Problem: fmt.Sprintf(
					"the chain starts here (prev is the genesis value) but seq is %d, not 1", r.Seq)}
			}
		case r.Prev == Genesis:
			return nil, &ChainError{File: cur.File, Line: cur.Line, Problem: fmt.Sprintf(
				"a new chain starts here (prev is the genesis value): this line does not continue %s; the log was restarted from scratch or lines were inserted",
				prev1.Location())}
		case r.Prev != prev1.Hash:
			return nil, diagnose(prev2, prev1, cur, next)
		case r.Seq != prev1.Record.Seq+1:
			return nil, &ChainError{File: cur.File, Line: cur.Line, Problem: fmt.Sprintf(
				"seq is %d, but the record before it (%s) has seq %d", r.Seq, prev1.Location(), prev1.Record.Seq)}
		}
		if d := r.Decision; d != nil && opts.Signed != nil {
			if err := checkSigned(opts.Signed, r); err != nil {
				return nil, &ChainError{File: cur.File, Line: cur.Line, Problem: err.Error()}
			}
			res.Signed += signedCount(d)
		}
		if _, want := anchors[cur.Hash]; want {
			anchors[cur.Hash] = true
		}
		res.Records++
		res.Head, res.HeadSeq = cur.Hash, r.Seq
		prev2, prev1 = prev1, cur
	}
	for a, found := range anchors {
		if !found {
			last := "the files checked"
			if len(files) > 0 {
				last = files[len(files)-1]
			}
			return nil, &ChainError{File: last, Problem: fmt.Sprintf(
				"anchor %s is not the hash of any record: records were removed from the end of the log, or the anchored record was altered (or it is in a file that was not checked)", a)}
		}
	}
	return res, nil
}

// diagnose explains a break between prev1 and cur (cur's prev is not
// prev1's hash), naming the first line that is not as written. It may read
// on with next to look at the following lines.
func diagnose(prev2, prev1, cur *Entry, next func() (Entry, error, bool)) *ChainError {
	at := func(e *Entry, format string, args ...any) *ChainError {
		return &ChainError{File: e.File, Line: e.Line, Problem: fmt.Sprintf(format, args...)}
	}
	// The line after cur, if it is a valid record.
	var after *Entry
	if e, err, ok := next(); ok && err == nil {
		after = &e
	}
	want := cur.Record.Prev

	// cur continues a line that comes later: lines were reordered.
	if after != nil && after.Hash == want {
		if after.Record.Prev == prev1.Hash {
			return at(cur, "out of order: this line and the next (%s) are swapped", after.Location())
		}
		return at(cur, "out of order: this line continues %s, which comes after it (lines moved)", after.Location())
	}
	if after != nil {
		for e, err, ok := next(); ok; e, err, ok = next() {
			if err == nil && e.Hash == want {
				return at(cur, "out of order: this line continues %s, which comes after it (lines moved)", e.Location())
			}
		}
	}
	if after != nil && after.Record.Prev == prev1.Hash {
		return at(cur, "inserted: this line is not part of the chain; the next line (%s) continues the line before it (%s)",
			after.Location(), prev1.Location())
	}
	if prev2 != nil && want == prev2.Hash {
		return at(prev1, "inserted: this line is not part of the chain; the next line (%s) continues the line before it (%s)",
			cur.Location(), prev2.Location())
	}
	if cur.Record.Seq > prev1.Record.Seq+1 {
		gap := cur.Record.Seq - prev1.Record.Seq - 1
		where := "before this line"
		if cur.File != prev1.File {
			where = fmt.Sprintf("between the end of %s and this line (lines removed, or a rotated file is missing)", prev1.File)
		}
		return at(cur, "%d record(s) missing %s: seq jumps from %d to %d and prev is not the hash of %s",
			gap, where, prev1.Record.Seq, cur.Record.Seq, prev1.Location())
	}
	if after != nil && after.Record.Prev == cur.Hash {
		return at(prev1, "altered: the next line (%s) was chained to a different version of this line", cur.Location())
	}
	if after == nil {
		return at(prev1, "altered: the next line (%s) was chained to a different version of this line, or that line's prev was altered",
			cur.Location())
	}
	return at(cur, "altered: its prev is not the hash of the line before it (%s), and the next line (%s) is not chained to it either",
		prev1.Location(), after.Location())
}

// signedCount counts the signatures on a decision record.
func signedCount(d *DecisionSection) int {
	n := 0
	if d.Signed != nil {
		n++
	}
	for _, a := range d.Approvals {
		if a.Signed != nil {
			n++
		}
	}
	return n
}

// checkSigned checks every signature on r's decision: the last allow's
// (or the deny's) and those of earlier approvals. Each statement must name
// r's ref, id and a decision that matches the verdict (an earlier
// approval is an allow), and its signature must verify.
func checkSigned(verify func(*SignedBy) error, r *Record) error {
	d := r.Decision
	type sig struct {
		s    *SignedBy
		want string
	}
	var sigs []sig
	if d.Signed != nil {
		sigs = append(sigs, sig{d.Signed, d.Verdict})
	}
	for _, a := range d.Approvals {
		if a.Signed != nil {
			sigs = append(sigs, sig{a.Signed, string(approval.Allow)})
		}
	}
	for _, x := range sigs {
		st := x.s.Statement
		want := map[approval.Choice]approval.Verdict{approval.AllowOnce: approval.Allow, approval.DenyOnce: approval.Deny}[approval.Choice(st.Decision)]
		if st.Record != r.Ref || st.ID != r.ID || string(want) != x.want {
			return fmt.Errorf("the signed decision's statement (record %q, id %q, %q) is not this record's (ref %q, id %q, %q)",
				st.Record, st.ID, st.Decision, r.Ref, r.ID, x.want)
		}
		if err := verify(x.s); err != nil {
			return fmt.Errorf("the signed decision does not verify: %w", err)
		}
	}
	return nil
}
