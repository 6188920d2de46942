package web

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
)

// session is a signed-in browser: the passkey it signed in with, which
// the daemons that show it their requests must know.
type session struct {
	key     approval.PublicKey
	expires time.Time
}

// randomToken returns 32 random bytes in base64url.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// SessionHeader carries the session token the page got at sign-in. The
// session is never a cookie: a cookie goes to every port of the host, so
// a page an agent serves on another port of localhost would be sent it.
// The page's script keeps the token in its origin's storage, which no
// other origin (another port included) can read, and sends it in this
// header, which another origin's page cannot make the browser send here
// (it is not a CORS-safelisted header, and the web approver answers no
// preflight).
const SessionHeader = "Agent-Sudo-Session"

// session returns the session of r's browser. A session whose passkey no
// daemon in states knows any more (it was revoked, or every daemon that
// knew it is gone) is ended.
func (s *Server) session(r *http.Request, states []feedState) (session, bool) {
	_, sess, ok := s.sessionToken(r, states)
	return sess, ok
}

// sessionToken is session, with the session's token.
func (s *Server) sessionToken(r *http.Request, states []feedState) (string, session, bool) {
	tok := r.Header.Get(SessionHeader)
	if tok == "" {
		return "", session{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, sess := range s.sessions {
		if subtle.ConstantTimeCompare([]byte(k), []byte(tok)) != 1 || !s.now().Before(sess.expires) {
			continue
		}
		if !slices.ContainsFunc(states, func(st feedState) bool { return st.knows(sess.key) }) {
			delete(s.sessions, k)
			s.dropStatements(k)
			s.log.Info("web: signed out: no daemon knows the passkey any more", "approver", sess.key.Name)
			return "", session{}, false
		}
		return k, sess, true
	}
	return "", session{}, false
}

// assertionJSON is an assertion as the page sends it (base64url fields,
// as the browser's toJSON gives them).
type assertionJSON struct {
	ID                string `json:"id"`
	AuthenticatorData string `json:"authenticatorData"`
	ClientDataJSON    string `json:"clientDataJSON"`
	Signature         string `json:"signature"`
	UserHandle        string `json:"userHandle"`
}

// decode reads each field strictly: unpadded base64url with zero unused
// bits and no line break, so that each byte string has one spelling.
func (a assertionJSON) decode() (approval.Assertion, error) {
	var out approval.Assertion
	for _, f := range []struct {
		dst *[]byte
		src string
	}{{&out.CredentialID, a.ID}, {&out.AuthenticatorData, a.AuthenticatorData}, {&out.ClientDataJSON, a.ClientDataJSON},
		{&out.Signature, a.Signature}, {&out.UserHandle, a.UserHandle}} {
		if strings.ContainsAny(f.src, "\r\n") {
			return out, errors.New("the assertion is not base64url: it has a line break")
		}
		b, err := base64.RawURLEncoding.Strict().DecodeString(f.src)
		if err != nil {
			return out, fmt.Errorf("the assertion is not base64url without padding and with zero unused bits: %w", err)
		}
		*f.dst = b
	}
	return out, nil
}

// expire drops the challenges, statements and sessions that expired; the
// caller holds s.mu.
func (s *Server) expire() {
	now := s.now()
	for k, exp := range s.usedLogins {
		if !now.Before(exp) {
			delete(s.usedLogins, k)
		}
	}
	for k, st := range s.statements {
		if !now.Before(st.Expires) {
			delete(s.statements, k)
		}
	}
	for k, sess := range s.sessions {
		if !now.Before(sess.expires) {
			s.dropStatements(k)
		}
	}
	for k, sess := range s.sessions {
		if !now.Before(sess.expires) {
			delete(s.sessions, k)
		}
	}
}

func (s *Server) loginBegin(w http.ResponseWriter, r *http.Request) {
	ch := s.loginChallenge(s.now().Add(challengeTTL))
	writeJSON(w, http.StatusOK, map[string]any{"challenge": ch, "rpId": s.cfg.RPID, "timeout": challengeTTL.Milliseconds()})
}

func (s *Server) loginFinish(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Challenge string        `json:"challenge"`
		Assertion assertionJSON `json:"assertion"`
	}
	if err := readJSON(r, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	exp, ok := s.checkLoginChallenge(req.Challenge)
	if !ok || !s.now().Before(exp) {
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "this sign-in expired or is not ours; try again"})
		return
	}
	a, err := req.Assertion.decode()
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	key, err := verifySignIn(s.states(), req.Challenge, a)
	if err != nil {
		s.log.Warn("web: sign-in refused", "err", err)
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "sign-in refused: " + err.Error() + ". " + enrolHint})
		return
	}
	name := key.Name
	tok := randomToken()
	s.mu.Lock()
	s.expire()
	if _, used := s.usedLogins[req.Challenge]; used {
		s.mu.Unlock()
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "this sign-in was used already"})
		return
	}
	s.usedLogins[req.Challenge] = exp
	if len(s.sessions) >= maxSessions {
		s.mu.Unlock()
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": "too many browsers signed in"})
		return
	}
	s.sessions[tok] = session{key: key, expires: s.now().Add(sessionTTL)}
	s.mu.Unlock()
	s.log.Info("web: signed in", "approver", name)
	// The token goes to the page's script alone (never a cookie,
	// SessionHeader).
	writeJSON(w, http.StatusOK, map[string]any{"approver": name, "session": tok})
}

// verifySignIn checks a sign-in assertion a over challenge against the
// passkeys of every daemon whose channel is open, and returns the one that
// made it. A credential id may come with different public keys from
// different daemons: each is tried, and the session is bound to the one
// that verified, so that a daemon that names another's credential with a
// key of its own gains nothing on the others.
func verifySignIn(states []feedState, challenge string, a approval.Assertion) (approval.PublicKey, error) {
	var tried []approval.PublicKey
	var lastErr error
	for _, st := range states {
		if st.err != nil {
			continue
		}
		for _, k := range st.keys {
			if !bytes.Equal(k.CredentialID, a.CredentialID) || slices.ContainsFunc(tried, func(t approval.PublicKey) bool { return sameKey(t, k) }) {
				continue
			}
			tried = append(tried, k)
			if _, err := passkey.VerifyChallenge([]passkey.Enrolled{passkey.FromPublic(k)}, challenge, a); err != nil {
				lastErr = err
				continue
			}
			return k, nil
		}
	}
	if lastErr != nil {
		return approval.PublicKey{}, lastErr
	}
	return approval.PublicKey{}, errors.New("the passkey that signed is not enrolled on any daemon served here (or was revoked)")
}

// loginChallenge returns a sign-in challenge valid until exp: exp, 16
// random bytes and a MAC of both under loginKey, base64url.
func (s *Server) loginChallenge(exp time.Time) string {
	b := binary.BigEndian.AppendUint64(nil, uint64(exp.Unix()))
	r := make([]byte, 16)
	_, _ = rand.Read(r)
	b = append(b, r...)
	m := hmac.New(sha256.New, s.loginKey)
	m.Write(b)
	return base64.RawURLEncoding.EncodeToString(m.Sum(b))
}

// checkLoginChallenge returns the expiry of a challenge loginChallenge
// made, or false for anything else.
func (s *Server) checkLoginChallenge(ch string) (time.Time, bool) {
	b, err := base64.RawURLEncoding.DecodeString(ch)
	if err != nil || len(b) != 8+16+sha256.Size {
		return time.Time{}, false
	}
	m := hmac.New(sha256.New, s.loginKey)
	m.Write(b[:24])
	if !hmac.Equal(m.Sum(nil), b[24:]) {
		return time.Time{}, false
	}
	return time.Unix(int64(binary.BigEndian.Uint64(b[:8])), 0), true
}

// enrolHint is the next step for a passkey no daemon served knows.
const enrolHint = "If this device has no passkey for this approver, enrol one: run " +
	"`sudo agent-sudo approve web enroll NAME` on the server and open the link it prints on this device"
