package console

// The daemon's messages as the console takes them: the hello, a request
// waiting, its full text, another console's decision, a result.

import (
	"fmt"
	"slices"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
	tea "github.com/charmbracelet/bubbletea"
)

// daemon handles one message from daemon link's current connection
// epoch. Nothing the daemon sends can make it panic or decide anything;
// what makes no sense is reported and ignored.
func (m *model) daemon(link int, epoch uint64, msg approval.Message) tea.Cmd {
	switch msg.Type {
	case approval.MsgPending:
		return m.pending(link, epoch, msg)
	case approval.MsgResolved:
		return m.resolved(link, msg)
	case approval.MsgApproved:
		m.approved(link, msg)
	case approval.MsgGrants:
		m.setGrants(link, msg.Grants, msg.GrantsOmitted)
	case approval.MsgResult:
		return m.result(link, msg)
	case approval.MsgDetail:
		return m.detail(link, msg)
	case approval.MsgRunning:
		if len(m.daemons) == 1 {
			m.runningMsg(msg)
		}
	case approval.MsgOutput:
		if len(m.daemons) == 1 {
			if i := slices.IndexFunc(m.inflight, func(s sent) bool { return s.typ == approval.MsgOutput && s.run == msg.Run }); i >= 0 {
				m.inflight = slices.Delete(m.inflight, i, i+1)
			}
			m.outputMsg(msg.Run, msg.Output, "")
		}
	}
	// hello again, or a type from a newer daemon: nothing to do.
	return nil
}

func (m *model) pending(link int, epoch uint64, msg approval.Message) tea.Cmd {
	s := msg.Request
	if s == nil {
		m.errorf("the daemon announced request %s without its details; it cannot be decided here", termtext.Esc(msg.ID))
		return nil
	}
	id := msg.ID
	if id == "" {
		id = s.ID
	}
	if id != s.ID {
		m.errorf("the daemon announced request %s with the details of request %s; it cannot be decided here", termtext.Esc(id), termtext.Esc(s.ID))
		return nil
	}
	var r *request
	if msg.Summary != nil {
		// The decision's hash, for a denial until the detail comes: the
		// daemon's, since this console has not got the full text to hash.
		r = &request{id: id, hash: msg.Hash, shown: s, summary: msg.Summary}
	} else {
		r = newRequest(m.st, id, msg.Hash, s)
	}
	r.link, r.epoch = link, epoch
	if i, old := m.find(link, id); old != nil {
		if old.hash == r.hash {
			return nil
		}
		m.queue[i] = r
		m.addNotice(notice{text: fmt.Sprintf("request %s changed while it waited; showing what waits now", termtext.Esc(id))})
		m.cfg.bell(s)
		if i == 0 {
			return m.promptChanged()
		}
		return nil
	}
	m.queue = append(m.queue, r)
	m.cfg.bell(s)
	if len(m.queue) == 1 {
		return m.promptChanged()
	}
	return nil
}

// approved records who allowed so far a request that needs more than one
// person; an approved message for a request not shown here, or for
// another version of it, changes nothing.
func (m *model) approved(link int, msg approval.Message) {
	if _, r := m.find(link, msg.ID); r != nil && r.hash == msg.Hash {
		r.approvedBy = slices.Clone(msg.ApprovedBy)
	}
}

// complete reports whether r's full text is held (it was announced in
// full, or its detail has loaded).
func (r *request) complete() bool {
	return r.summary == nil || r.loaded
}

// askDetail asks the daemon for the full text of r when r was announced as
// a summary and it was not asked yet.
func (m *model) askDetail(r *request) {
	if r.complete() || r.detailAsked {
		return
	}
	if err := m.sendTo(r.link, r.epoch, approval.Message{Type: approval.MsgDetail, ID: r.id, Hash: r.hash}); err != nil {
		m.errorf("could not ask for the full text of request %s: %v", termtext.Esc(r.id), err)
		return
	}
	r.detailAsked = true
}

// detail takes the full text of a request announced as a summary. It must
// be the request announced (same id, same daemon hash), and it hashes to
// that hash (daemonMsg), which the decision carries.
func (m *model) detail(link int, msg approval.Message) tea.Cmd {
	i, r := m.find(link, msg.ID)
	if r == nil || r.complete() {
		return nil // resolved meanwhile, or a duplicate
	}
	s := msg.Request
	switch {
	case msg.Hash != r.hash:
		m.errorf("the daemon sent the full text of request %s for a different version of it; ignored", termtext.Esc(r.id))
		return nil
	case s == nil || s.ID != r.id:
		m.errorf("the daemon sent no usable full text for request %s", termtext.Esc(r.id))
		return nil
	}
	full := newRequest(m.st, r.id, msg.Hash, s)
	full.summary, full.loaded, full.detailAsked = r.summary, true, true
	full.link, full.epoch = r.link, r.epoch
	// What the daemon said of this version meanwhile still holds: who
	// allowed it so far (its approved messages). detailErr does not: the
	// full text has loaded.
	full.approvedBy = r.approvedBy
	m.queue[i] = full
	if i == 0 {
		// The prompt starts over, guard included, now that the whole
		// request is on screen.
		return m.promptChanged()
	}
	return nil
}

// newRequest holds s, announced with hash, which is the hash of s as
// received (daemonMsg). The decision will carry it, so that it binds what
// is displayed; whether anything needs escaping is worked out once, here.
func newRequest(st *styles, id, hash string, s *approval.Shown) *request {
	_, escaped := details(st, s, 0, true)
	return &request{id: id, hash: hash, shown: s, escaped: escaped}
}

// unverified handles a pending or detail message from daemon link whose
// request does not hash to its announced hash: what it carries is never
// shown, and nothing is decided on it. A pending one is a new version of
// the request, so the version this console held (if any) leaves the
// screen: a decision on it would be refused. A detail one is a full text
// that could not be loaded: the request stays a summary, which can only
// be denied.
func (m *model) unverified(link int, msg approval.Message) tea.Cmd {
	id := msg.ID
	if id == "" && msg.Request != nil {
		id = msg.Request.ID
	}
	i, r := m.find(link, id)
	if msg.Type == approval.MsgDetail {
		if r == nil || r.complete() {
			return nil // resolved meanwhile, or a duplicate
		}
		r.detailErr = "it does not match the hash the daemon announced"
		r.cache, r.fullCache = nil, nil
		m.errorf("the full text of request %s does not match its hash; it is not shown, and the request can only be denied", termtext.Esc(id))
		return nil
	}
	if msg.Request == nil {
		m.errorf("the daemon announced request %s without its details; it cannot be decided here", termtext.Esc(id))
	} else {
		m.errorf("the daemon announced request %s with contents that do not match its hash; it is not shown and cannot be decided here", termtext.Esc(id))
	}
	if r == nil {
		return nil
	}
	m.queue = slices.Delete(m.queue, i, i+1)
	if i == 0 {
		return m.promptChanged()
	}
	return nil
}

func (m *model) resolved(link int, msg approval.Message) tea.Cmd {
	i, r := m.find(link, msg.ID)
	if r == nil {
		if j := slices.Index(m.confirmed, decided{link, msg.ID}); j >= 0 && msg.ID != "" {
			m.confirmed = slices.Delete(m.confirmed, j, j+1)
			m.addNotice(notice{kind: "decided " + msg.ID, text: resolvedText(msg.ID, msg.Verdict, msg.By)})
		}
		return nil
	}
	m.queue = slices.Delete(m.queue, i, i+1)
	text := resolvedText(msg.ID, msg.Verdict, msg.By)
	if i > 0 {
		text += " (it was waiting behind the one on screen)"
	}
	m.addNotice(notice{text: text})
	if i == 0 {
		return m.promptChanged()
	}
	return nil
}

// resolvedText says how a request stopped waiting.
func resolvedText(id string, v approval.Verdict, by string) string {
	id, by = termtext.Esc(id), termtext.Esc(by)
	switch v {
	case approval.Allow:
		return fmt.Sprintf("request %s was allowed by %s", id, by)
	case approval.Deny:
		return fmt.Sprintf("request %s was denied by %s", id, by)
	case approval.Timeout:
		return fmt.Sprintf("request %s timed out: nobody decided in time", id)
	case approval.Withdrawn:
		if by == approval.ByClient {
			return fmt.Sprintf("request %s was withdrawn by the client (it disconnected)", id)
		}
		return fmt.Sprintf("request %s was withdrawn (%s)", id, by)
	case approval.Failed:
		return fmt.Sprintf("request %s ended without a decision (%s); it will not run", id, by)
	}
	return fmt.Sprintf("request %s is no longer waiting (%s, %s)", id, termtext.Esc(string(v)), by)
}

func (m *model) result(link int, msg approval.Message) tea.Cmd {
	i := slices.IndexFunc(m.inflight, func(s sent) bool {
		return s.link == link && (s.typ == approval.MsgDecide && msg.ID != "" && s.id == msg.ID ||
			s.typ == approval.MsgRevoke && msg.Grant != "" && s.grant == msg.Grant ||
			(s.typ == approval.MsgStop || s.typ == approval.MsgOutput) && msg.Run != "" && s.run == msg.Run)
	})
	// The daemon answers in order: the first stop or output request of the
	// run still unanswered is the one this result answers.
	if i >= 0 && m.inflight[i].typ == approval.MsgOutput {
		m.inflight = slices.Delete(m.inflight, i, i+1)
		m.outputMsg(msg.Run, nil, msg.Error)
		return nil
	}
	if _, r := m.find(link, msg.ID); i < 0 && r != nil && !r.complete() && r.detailAsked && msg.Error != "" {
		// The answer to a detail request: the full text cannot come.
		r.detailErr = msg.Error
		r.cache, r.fullCache = nil, nil
		m.errorf("the full text of request %s could not be loaded: %s", termtext.Esc(r.id), termtext.Esc(msg.Error))
		return nil
	}
	if i < 0 {
		if msg.Error != "" {
			m.errorf("the daemon reported an error: %s", termtext.Esc(msg.Error))
		}
		return nil
	}
	s := m.inflight[i]
	m.inflight = slices.Delete(m.inflight, i, i+1)
	if s.typ == approval.MsgStop {
		if msg.Error != "" || !msg.OK {
			m.errorf("could not stop %s: %s", termtext.Esc(s.run), termtext.Esc(msg.Error))
		} else {
			m.addNotice(notice{text: fmt.Sprintf("%s is being stopped: SIGTERM now, SIGKILL after kill_grace", termtext.Esc(s.run))})
		}
		return nil
	}
	if s.typ == approval.MsgRevoke {
		if msg.Error != "" {
			m.errorf("could not revoke session grant %s: %s", termtext.Esc(s.grant), termtext.Esc(msg.Error))
		} else {
			m.addNotice(notice{text: fmt.Sprintf("session grant %s revoked", termtext.Esc(s.grant))})
		}
		return nil
	}
	j, r := m.find(link, s.id)
	if msg.Error != "" || !msg.OK {
		reason := msg.Error
		if reason == "" {
			reason = "no confirmation"
		}
		m.errorf("the daemon refused your decision (%s) on request %s: %s", choiceText(s.choice), termtext.Esc(s.id), termtext.Esc(reason))
		if r != nil && j == 0 {
			// The decision is no longer in flight: the prompt is back.
			return m.promptChanged()
		}
		return nil
	}
	if r != nil && msg.Note != "" {
		// An allow that counted, while the request waits for another
		// person (the two-person rule): it stays on screen.
		m.addNotice(notice{kind: "decided " + s.id, text: fmt.Sprintf("request %s: your allow counted: %s", termtext.Esc(s.id), termtext.Esc(msg.Note))})
		if j == 0 {
			return m.promptChanged()
		}
		return nil
	}
	if r != nil {
		// The resolved message has not come yet; the result is enough.
		m.queue = slices.Delete(m.queue, j, j+1)
		m.confirmed = append(m.confirmed, decided{link, s.id})
		if len(m.confirmed) > maxConfirmed {
			m.confirmed = slices.Delete(m.confirmed, 0, len(m.confirmed)-maxConfirmed)
		}
		m.addNotice(notice{kind: "decided " + s.id, text: fmt.Sprintf("request %s: your decision (%s) was recorded", termtext.Esc(s.id), choiceText(s.choice))})
		if j == 0 {
			return m.promptChanged()
		}
	}
	return nil
}

// decided names a request this console decided: its daemon and id.
type decided struct {
	link int
	id   string
}

func choiceText(c approval.Choice) string {
	switch c {
	case approval.AllowOnce:
		return "allow once"
	case approval.AllowSession:
		return "allow for this session"
	case approval.DenyOnce:
		return "deny"
	}
	return termtext.Esc(string(c))
}
