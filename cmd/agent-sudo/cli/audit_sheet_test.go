package cli

import (
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/sheettest"
)

// records are the audit records the daemon writes for s, allowed and run.
func records(s *approval.Shown, approvedBy []string) []*audit.Record {
	priv, fwd := s.Privileged, s.ForwardAgent
	peer := &audit.Peer{UID: s.Peer.UID, PID: s.Peer.PID, Exe: s.Peer.Exe, Container: (*audit.Container)(s.Peer.Container)}
	if a := s.Peer.Ancestry; a != nil {
		peer.Ancestry = &audit.Ancestry{End: a.End, Changed: a.Changed}
		for _, h := range a.Hops {
			peer.Ancestry.Hops = append(peer.Ancestry.Hops, audit.Hop(h))
		}
	}
	req := &audit.Record{Type: audit.TypeRequest, ID: s.ID, Session: s.Session, Host: s.Host, DaemonHost: s.DaemonHost, Time: s.Received, Peer: peer,
		Request: &audit.RequestSection{Pipeline: s.Pipeline, Reason: s.Reason, Privileged: &priv, ForwardAgent: &fwd, Cwd: s.Cwd,
			RequestTime: s.Time, Env: s.Env}}
	if in := s.Stdin; in != nil {
		req.Request.StdinBytes, req.Request.StdinSHA256, req.Request.Stdin = in.Size, in.SHA256, in.Data
	}
	dec := &audit.Record{Type: audit.TypeDecision, ID: s.ID, Decision: &audit.DecisionSection{Verdict: "allowed", By: "console"}}
	for _, b := range approvedBy {
		dec.Decision.Approvals = append(dec.Decision.Approvals, audit.Approval{By: b})
	}
	exec := &audit.Record{Type: audit.TypeExec, ID: s.ID, Exec: &audit.ExecSection{Dir: s.Cwd, DirChain: s.CwdChain, RunAs: audit.RunAs{User: s.RunAs}}}
	for i, p := range s.Programs {
		st := audit.ExecStage{Path: p.Chain[len(p.Chain)-1], Chain: p.Chain, SHA256: p.SHA256, Argv: s.Pipeline[i]}
		for _, w := range p.Writable {
			st.Writable = append(st.Writable, audit.Writable(w))
		}
		exec.Exec.Stages = append(exec.Exec.Stages, st)
	}
	for _, w := range s.CwdWritable {
		exec.Exec.DirWritable = append(exec.Exec.DirWritable, audit.Writable(w))
	}
	return []*audit.Record{req, dec, exec}
}

// notInAudit are facts of the sheet's table that audit show's sheet does
// not hold: why the rules asked a human is not recorded, and who allowed
// is the decision record's, which audit show prints above the sheet.
var notInAudit = map[string]bool{"no rule applies": true, "1 of 2 approvals": true, `passkey "alice"`: true}

// TestSheetAuditShow: audit show's sheet of a request, rebuilt from its
// records, shows, for each request of the sheet's table, the sheet's
// details in their order and words, escaped for the terminal, and every
// fact the request calls for that the log keeps (sheettest.Cases, which
// the console, the page and the notifiers are checked against too).
func TestSheetAuditShow(t *testing.T) {
	for _, c := range sheettest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			var sr sheetRecords
			for _, r := range records(c.Shown, c.Context.ApprovedBy) {
				sr.add(r)
			}
			got := sr.sheetText()
			term := func(p approval.Part) string { s, _ := approval.TermPart(p); return s }
			sheettest.Shows(t, "audit show", got, approval.NewSheet(sr.shown(), approval.Context{}).Details, term)
			var facts []string
			for _, f := range c.Facts {
				if !notInAudit[f] {
					facts = append(facts, f)
				}
			}
			sheettest.Contains(t, "audit show", got, facts)
			if !strings.HasPrefix(got, "shown to a human as") {
				t.Errorf("audit show's sheet has no heading:\n%s", got)
			}
		})
	}
}
