package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
)

// statement is a statement given out to sign, with the daemon whose
// request it decides and the session it was given to, which alone may
// send its signature.
type statement struct {
	approval.Statement
	link    int
	session string
	given   time.Time
}

// decideBegin gives the page the statement to sign for a decision on a
// request waiting on one daemon (its index in Config.Daemons) that knows
// the signed-in passkey: the request as announced (its audit record and
// hash), the decision, scope once, an expiry and a fresh nonce.
func (s *Server) decideBegin(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Daemon   *int            `json:"daemon"`
		ID       string          `json:"id"`
		Hash     string          `json:"hash"`
		Decision approval.Choice `json:"decision"`
	}
	if err := readJSON(r, &req); err != nil {
		s.refuseDecision(w, r, http.StatusBadRequest, err.Error())
		return
	}
	if req.Decision != approval.AllowOnce && req.Decision != approval.DenyOnce {
		s.refuseDecision(w, r, http.StatusBadRequest, "the web approver allows once or denies")
		return
	}
	if req.Daemon == nil {
		s.refuseDecision(w, r, http.StatusBadRequest, "say which daemon showed the request")
		return
	}
	link := *req.Daemon
	tok, state, me, ok := s.mayDecide(r, link)
	if !ok {
		s.refuseDecision(w, r, http.StatusConflict, "this daemon is gone, or does not know your passkey; reload")
		return
	}
	p, ok := s.feeds[link].find(req.ID)
	if !ok || p.Hash != req.Hash {
		s.refuseDecision(w, r, http.StatusConflict, "this request no longer waits, or changed; reload")
		return
	}
	if req.Decision == approval.AllowOnce && counted(state.approved[p.ID], p.Hash, me) {
		s.refuseDecision(w, r, http.StatusConflict, "you already allowed this request, and it needs different people: another person must allow it")
		return
	}
	if p.Summary != nil && req.Decision == approval.AllowOnce {
		s.refuseDecision(w, r, http.StatusConflict, "this request is too large to show here in full, so it cannot be allowed here; deny it, or decide at a console")
		return
	}
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	st := approval.Statement{Record: p.Record, ID: p.ID, Hash: p.Hash, Decision: req.Decision, Scope: approval.ScopeOnce,
		Expires: s.now().Add(challengeTTL).UTC().Truncate(time.Second), Nonce: base64.RawURLEncoding.EncodeToString(nonce)}
	challenge, err := st.ChallengeString()
	if err != nil {
		s.refuseDecision(w, r, http.StatusInternalServerError, "this decision cannot be signed: "+err.Error())
		return
	}
	s.mu.Lock()
	s.expire()
	s.makeRoom(tok)
	s.statements[st.Nonce] = statement{Statement: st, link: link, session: tok, given: s.now()}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"statement": st, "challenge": challenge, "rpId": s.cfg.RPID,
		"timeout": challengeTTL.Milliseconds()})
}

// decideFinish relays the signed decision to the daemon, which checks it,
// and tells the page the daemon's answer.
func (s *Server) decideFinish(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Nonce     string        `json:"nonce"`
		Assertion assertionJSON `json:"assertion"`
	}
	if err := readJSON(r, &req); err != nil {
		s.refuseDecision(w, r, http.StatusBadRequest, err.Error())
		return
	}
	tok, _, signedIn := s.sessionToken(r, s.states())
	s.mu.Lock()
	st, ok := s.statements[req.Nonce]
	// Only the session it was given to may send its signature.
	ok = ok && signedIn && subtle.ConstantTimeCompare([]byte(st.session), []byte(tok)) == 1
	if ok {
		delete(s.statements, req.Nonce)
	}
	s.mu.Unlock()
	if !ok {
		s.refuseDecision(w, r, http.StatusForbidden, "this decision expired or was already sent; try again")
		return
	}
	if _, _, _, ok := s.mayDecide(r, st.link); !ok {
		s.refuseDecision(w, r, http.StatusConflict, "this daemon is gone, or does not know your passkey any more")
		return
	}
	a, err := req.Assertion.decode()
	if err != nil {
		s.refuseDecision(w, r, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	f := s.feeds[st.link]
	note, err := f.decide(ctx, approval.Message{Type: approval.MsgDecide, ID: st.ID, Hash: st.Hash, Decision: st.Decision,
		Signed: &approval.Signed{Statement: st.Statement, Assertion: a}})
	if err != nil {
		s.refuseDecision(w, r, http.StatusConflict, err.Error(), "daemon", f.name, "id", st.ID)
		return
	}
	s.log.Info("web: decision relayed", "daemon", f.name, "id", st.ID, "decision", st.Decision, "note", note)
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "note": note})
}

// mayDecide reports whether r's browser may decide on daemon link's
// requests: the daemon is one served, its channel is open and it knows the
// signed-in passkey. It returns the session's token, that daemon's state
// and the person the passkey is to it (approval.PublicKey.Identity).
func (s *Server) mayDecide(r *http.Request, link int) (string, feedState, string, bool) {
	if link < 0 || link >= len(s.feeds) {
		return "", feedState{}, "", false
	}
	states := s.states()
	tok, sess, ok := s.sessionToken(r, states)
	if !ok || !states[link].knows(sess.key) {
		return "", feedState{}, "", false
	}
	return tok, states[link], states[link].identity(sess.key), true
}

// makeRoom drops the oldest statements of session tok until it has fewer
// than maxStatementsPerSession out, so that its next one fits; the caller
// holds s.mu. A browser that asks for more (a passkey prompt dismissed
// and asked again) gives up its own oldest, never another session's.
func (s *Server) makeRoom(tok string) {
	for {
		n, oldest := 0, ""
		var at time.Time
		for k, st := range s.statements {
			if st.session != tok {
				continue
			}
			n++
			if oldest == "" || st.given.Before(at) {
				oldest, at = k, st.given
			}
		}
		if n < maxStatementsPerSession {
			return
		}
		delete(s.statements, oldest)
	}
}

// dropStatements drops the statements of session tok; the caller holds
// s.mu.
func (s *Server) dropStatements(tok string) {
	for k, st := range s.statements {
		if st.session == tok {
			delete(s.statements, k)
		}
	}
}

// refuseDecision answers a decision the web approver does not relay, or
// the daemon refused, with why, and logs it: every refused decision is in
// the web approver's log with its reason.
// attrs are more of the log line's attributes (the daemon, the request).
func (s *Server) refuseDecision(w http.ResponseWriter, r *http.Request, code int, why string, attrs ...any) {
	s.log.Warn("web: decision refused", append([]any{"path", r.URL.Path, "status", code, "reason", why}, attrs...)...)
	writeJSON(w, code, map[string]any{"error": why})
}
