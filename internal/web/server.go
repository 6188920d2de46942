// Package web is the web approver (agent-sudo approve --web): a page, made
// for a phone, that shows the requests waiting on a daemon's approver
// channel and relays decisions signed with a passkey. It decides nothing
// itself: its channel is signed-only (approval.MsgSignedOnly), and the
// daemon checks every signature against the enrolled passkeys. See
// docs/approving.md#the-web-approver and docs/security.md#the-web-approver.
//
// Everything the agent wrote reaches the page as text: the templates are
// html/template, the script (served from the binary, never inline) sets
// only textContent and attributes, and a strict Content-Security-Policy
// forbids inline script and any other origin.
package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
)

//go:embed static templates
var files embed.FS

// Limits of the web approver.
const (
	// sessionTTL is how long a sign-in lasts.
	sessionTTL = 12 * time.Hour
	// challengeTTL is how long a sign-in challenge or a statement to sign
	// may wait for the passkey.
	challengeTTL = 2 * time.Minute
	// maxOutstanding bounds the challenges and sessions kept.
	maxOutstanding = 256
	// maxBody bounds a request body.
	maxBody = 64 << 10
)

// contentSecurityPolicy allows the page's own script, style and requests
// and nothing else: no inline script or style, no other origin, no frame,
// no form submission, no plugin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Config is what the web approver is told at start.
type Config struct {
	// Client is the approver channel to the daemon, on which signed_only
	// has been sent (Connect does both).
	Client *approval.Client
	// Origin is the page's origin as the browser sees it
	// ("https://host:8443"), and RPID the passkeys' relying party id (the
	// host name).
	Origin, RPID string
	// Keys are the enrolled passkeys (public keys only), read at start:
	// the web approver checks a sign-in with them. The daemon checks the
	// decisions against its own copy.
	Keys []passkey.Enrolled
	// Log receives what happens; nil discards it.
	Log *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Server is the web approver's HTTP handler.
type Server struct {
	cfg  Config
	feed *feed
	tmpl *template.Template
	log  *slog.Logger
	now  func() time.Time

	// loginKey keys the sign-in challenges, which are stateless (expiry,
	// random, MAC), so that anyone reaching the port can ask for as many
	// as they like without filling anything or crowding out the human's.
	loginKey []byte

	mu sync.Mutex
	// usedLogins are the sign-in challenges already used, until they
	// expire: only a verified assertion adds one.
	usedLogins map[string]time.Time
	// sessions are the signed-in browsers, by cookie value.
	sessions map[string]session
	// statements are the statements given out to sign, by nonce.
	statements map[string]approval.Statement
}

type session struct {
	approver string
	expires  time.Time
}

// New returns the web approver for cfg; Run reads the daemon's channel.
func New(cfg Config) (*Server, error) {
	t, err := template.ParseFS(files, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("web: templates: %w", err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	s := &Server{cfg: cfg, feed: newFeed(cfg.Client), tmpl: t, log: cfg.Log, now: cfg.Now, loginKey: key,
		usedLogins: map[string]time.Time{}, sessions: map[string]session{}, statements: map[string]approval.Statement{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// Run reads the daemon's channel until it ends or ctx does.
func (s *Server) Run(ctx context.Context) error {
	return s.feed.run(ctx)
}

// Handler returns the HTTP handler: the page, its static files and its
// JSON API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	mux.Handle("GET /static/", http.FileServerFS(files))
	mux.HandleFunc("GET /api/state", s.signedIn(s.state))
	mux.HandleFunc("POST /api/login/begin", s.ownPage(s.loginBegin))
	mux.HandleFunc("POST /api/login/finish", s.ownPage(s.loginFinish))
	mux.HandleFunc("POST /api/decide/begin", s.ownPage(s.signedIn(s.decideBegin)))
	mux.HandleFunc("POST /api/decide/finish", s.ownPage(s.signedIn(s.decideFinish)))
	return headers(mux)
}

// ownPage lets through only a call from the web approver's own page
// (fromPage): every call that changes state goes through it.
func (s *Server) ownPage(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if fromPage(w, r, s.cfg.Origin, "the web approver's own page") {
			h(w, r)
		}
	}
}

// signedIn lets through only a browser signed in with a passkey.
func (s *Server) signedIn(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.approver(r) == "" {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "sign in with your passkey first"})
			return
		}
		h(w, r)
	}
}

// headers sets the security headers of every answer.
func headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// randomToken returns 32 random bytes in base64url.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

const cookieName = "agent_sudo_session"

// approver returns the name of the approver signed in on r's browser, or
// "".
func (s *Server) approver(r *http.Request) string {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, sess := range s.sessions {
		if subtle.ConstantTimeCompare([]byte(k), []byte(c.Value)) == 1 && s.now().Before(sess.expires) {
			return sess.approver
		}
	}
	return ""
}

// fromPage refuses a state-changing request that does not come from the
// script of the page at origin (its Origin header and a JSON body, which a
// form on another site cannot send without a preflight); what names that
// page in the refusal.
func fromPage(w http.ResponseWriter, r *http.Request, origin, what string) bool {
	if r.Header.Get("Origin") != origin || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "refused: not from "+what, http.StatusForbidden)
		return false
	}
	return true
}

// view is what the page template gets.
type view struct {
	Approver string
	Daemon   string
	Version  uint64
	Requests []requestView
	// Focus is the request asked for with ?id=, when it waits.
	Focus string
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	v := view{Approver: s.approver(r)}
	if v.Approver != "" {
		pend, version, hello := s.feed.snapshot()
		v.Version, v.Daemon = version, hello.DaemonHost
		for _, p := range pend {
			v.Requests = append(v.Requests, describe(p, s.now()))
		}
		if id := r.URL.Query().Get("id"); slices.ContainsFunc(pend, func(p approval.Message) bool { return p.ID == id }) {
			v.Focus = id
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := s.tmpl.ExecuteTemplate(w, "index.html", v); err != nil {
		s.log.Warn("web: render the page", "err", err)
	}
}

// state tells the page the version of the list, so that it reloads when
// a request arrives or leaves.
func (s *Server) state(w http.ResponseWriter, r *http.Request) {
	_, version, _ := s.feed.snapshot()
	writeJSON(w, http.StatusOK, map[string]any{"version": version})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func readJSON(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("read the request: %w", err)
	}
	if len(b) > maxBody {
		return errors.New("the request is too long")
	}
	return json.Unmarshal(b, v)
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

func (a assertionJSON) decode() (approval.Assertion, error) {
	var out approval.Assertion
	for _, f := range []struct {
		dst *[]byte
		src string
	}{{&out.CredentialID, a.ID}, {&out.AuthenticatorData, a.AuthenticatorData}, {&out.ClientDataJSON, a.ClientDataJSON},
		{&out.Signature, a.Signature}, {&out.UserHandle, a.UserHandle}} {
		b, err := base64.RawURLEncoding.DecodeString(f.src)
		if err != nil {
			return out, fmt.Errorf("the assertion is not base64url: %w", err)
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
	name, err := passkey.VerifyChallenge(s.cfg.Keys, req.Challenge, a)
	if err != nil {
		s.log.Warn("web: sign-in refused", "err", err)
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "sign-in refused: " + err.Error()})
		return
	}
	tok := randomToken()
	s.mu.Lock()
	s.expire()
	if _, used := s.usedLogins[req.Challenge]; used {
		s.mu.Unlock()
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "this sign-in was used already"})
		return
	}
	s.usedLogins[req.Challenge] = exp
	if len(s.sessions) >= maxOutstanding {
		s.mu.Unlock()
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": "too many browsers signed in"})
		return
	}
	s.sessions[tok] = session{approver: name, expires: s.now().Add(sessionTTL)}
	s.mu.Unlock()
	s.log.Info("web: signed in", "approver", name)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: tok, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: int(sessionTTL.Seconds())})
	writeJSON(w, http.StatusOK, map[string]any{"approver": name})
}

// decideBegin gives the page the statement to sign for a decision on a
// waiting request: the request as announced (its audit record and hash),
// the decision, scope once, an expiry and a fresh nonce.
func (s *Server) decideBegin(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID       string          `json:"id"`
		Hash     string          `json:"hash"`
		Decision approval.Choice `json:"decision"`
	}
	if err := readJSON(r, &req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	if req.Decision != approval.AllowOnce && req.Decision != approval.DenyOnce {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "the web approver allows once or denies"})
		return
	}
	p, ok := s.feed.find(req.ID)
	if !ok || p.Hash != req.Hash {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "this request no longer waits, or changed; reload"})
		return
	}
	if p.Summary != nil && req.Decision == approval.AllowOnce {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "this request is too large to show here in full, so it cannot be allowed here; deny it, or decide at a console"})
		return
	}
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	st := approval.Statement{Record: p.Record, ID: p.ID, Hash: p.Hash, Decision: req.Decision, Scope: approval.ScopeOnce,
		Expires: s.now().Add(challengeTTL).UTC().Truncate(time.Second), Nonce: base64.RawURLEncoding.EncodeToString(nonce)}
	s.mu.Lock()
	s.expire()
	if len(s.statements) >= maxOutstanding {
		s.mu.Unlock()
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": "too many decisions under way"})
		return
	}
	s.statements[st.Nonce] = st
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"statement": st, "challenge": st.ChallengeString(), "rpId": s.cfg.RPID,
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
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	s.mu.Lock()
	st, ok := s.statements[req.Nonce]
	delete(s.statements, req.Nonce)
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "this decision expired or was already sent; try again"})
		return
	}
	a, err := req.Assertion.decode()
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	note, err := s.feed.decide(ctx, approval.Message{Type: approval.MsgDecide, ID: st.ID, Hash: st.Hash, Decision: st.Decision,
		Signed: &approval.Signed{Statement: st, Assertion: a}})
	if err != nil {
		s.log.Info("web: decision refused by the daemon", "id", st.ID, "err", err)
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error()})
		return
	}
	s.log.Info("web: decision relayed", "id", st.ID, "decision", st.Decision, "note", note)
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "note": note})
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
