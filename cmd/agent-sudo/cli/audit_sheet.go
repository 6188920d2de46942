package cli

import (
	"fmt"
	"strings"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/audit"
)

// sheetRecords gathers, from the records of one request, what its sheet
// (approval.NewSheet, what a human was shown) can be rebuilt from: its
// request record, its exec record (the programs, the directory, who it ran
// as) and its decision record (how many people allowed it).
type sheetRecords struct {
	req, exec, decision *audit.Record
	// requests counts the request records: an id a client reused has
	// several, and no one sheet.
	requests int
}

// add notes r, one of the request's records.
func (s *sheetRecords) add(r *audit.Record) {
	switch {
	case r.Request != nil:
		s.requests++
		if s.req == nil {
			s.req = r
		}
	case r.Exec != nil && s.exec == nil:
		s.exec = r
	case r.Decision != nil && s.decision == nil:
		s.decision = r
	}
}

// shown rebuilds the Shown of the request from its records, as far as the
// audit log keeps it: not why the rules asked a human (the log does not
// record it), the user name of the requester's uid, nor its deadline; a
// stdin's content only when audit_stdin kept it; the programs, the
// resolved directory and who it ran as only when it ran (an exec record).
// Nil when there is no request record or more than one, or the request was
// refused before it was read.
func (s *sheetRecords) shown() *approval.Shown {
	if s.requests != 1 || s.req.Request.Pipeline == nil {
		return nil
	}
	r, q := s.req, s.req.Request
	sh := &approval.Shown{
		ID: r.ID, Session: r.Session, Host: r.Host, Reason: q.Reason, Time: q.RequestTime,
		Pipeline: q.Pipeline, Env: q.Env, Cwd: q.Cwd, Received: r.Time, DaemonHost: r.DaemonHost,
		Privileged: q.Privileged != nil && *q.Privileged, ForwardAgent: q.ForwardAgent != nil && *q.ForwardAgent,
	}
	if sh.Cwd == "" {
		sh.Cwd = "/"
	}
	if sh.Privileged {
		sh.RunAs = "root"
	}
	if q.StdinBytes > 0 || q.StdinSHA256 != "" {
		sh.Stdin = &approval.StdinShown{Size: q.StdinBytes, SHA256: q.StdinSHA256, Data: q.Stdin}
	}
	if p := r.Peer; p != nil {
		sh.Peer = approval.PeerInfo{UID: p.UID, PID: p.PID, Exe: p.Exe, Container: (*approval.Container)(p.Container)}
		if a := p.Ancestry; a != nil {
			sh.Peer.Ancestry = &approval.Ancestry{End: a.End, Changed: a.Changed}
			for _, h := range a.Hops {
				sh.Peer.Ancestry.Hops = append(sh.Peer.Ancestry.Hops, approval.Hop(h))
			}
		}
	}
	if x := s.exec; x != nil {
		e := x.Exec
		for _, st := range e.Stages {
			chain := st.Chain
			if len(chain) == 0 { // records written before chains were kept
				chain = []string{st.Path}
			}
			p := approval.Program{Chain: chain, Dev: st.Dev, Ino: st.Ino, SHA256: st.SHA256}
			for _, w := range st.Writable {
				p.Writable = append(p.Writable, approval.Writable{Path: w.Path, Why: w.Why})
			}
			sh.Programs = append(sh.Programs, p)
		}
		sh.Cwd, sh.CwdChain, sh.RunAs = e.Dir, e.DirChain, e.RunAs.User
		for _, w := range e.DirWritable {
			sh.CwdWritable = append(sh.CwdWritable, approval.Writable{Path: w.Path, Why: w.Why})
		}
	}
	if d := s.decision; d != nil && len(d.Decision.Approvals) > 0 {
		sh.Approvals = len(d.Decision.Approvals) + 1
	}
	return sh
}

// sheetText renders the request's sheet as audit show prints it: every
// detail a human was shown, in the sheet's order and words, each value
// escaped for the terminal, under a heading that says it was rebuilt from
// the records. "" when the records hold no one request.
func (s *sheetRecords) sheetText() string {
	sh := s.shown()
	if sh == nil {
		return ""
	}
	sheet := approval.NewSheet(sh, approval.Context{})
	var b strings.Builder
	b.WriteString("shown to a human as (the request's sheet, rebuilt from the records above; not why the rules asked)\n")
	// Not the two-person line: it says who allowed while the request
	// waited; the decision record above says who allowed in the end.
	for _, it := range sheet.Details {
		v, _ := approval.TermText(it)
		label := it.Label
		if label != "" {
			label += ":"
		}
		fmt.Fprintf(&b, "  %-15s %s\n", label, v)
	}
	return b.String()
}
