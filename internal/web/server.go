// Package web is the web approver (agent-sudo approve --web): a page, made
// for a phone, that shows the requests waiting on the approver channels of
// one or several daemons and relays decisions signed with a passkey, each
// to the daemon, and on the connection, that showed the request. It
// decides nothing itself: its channels are signed-only
// (approval.MsgSignedOnly), and each daemon checks every signature against
// its enrolled passkeys. The passkeys' public keys, which the web approver
// checks a sign-in with, come from the daemons (approval.MsgPasskeys): it
// reads no file of theirs. See docs/approving.md#the-web-approver and
// docs/security.md#the-web-approver.
//
// Everything the agent wrote reaches the page as text: the templates are
// html/template; the script (served from the binary, never inline) sets
// only textContent and attributes itself, and merges in the nodes of the
// fragment the web approver rendered for its session (/api/page), parsed
// inert; a strict Content-Security-Policy forbids inline script and any
// other origin. The session is never a cookie (SessionHeader).
package web

import (
	"bytes"
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
	"strings"
	"sync"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/strictjson"
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
	// maxSessions bounds the signed-in browsers kept.
	maxSessions = 64
	// maxStatementsPerSession bounds the statements one signed-in browser
	// may have out to sign; its next one replaces its oldest. Together
	// with maxSessions it bounds the statements kept (256), so that no
	// session can crowd out another's.
	maxStatementsPerSession = 4
	// maxBody bounds a request body.
	maxBody = 64 << 10
)

// contentSecurityPolicy allows the page's own script, style and requests
// and nothing else: no inline script or style, no other origin, no frame,
// no form submission, no plugin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Daemon is one daemon the web approver serves.
type Daemon struct {
	// Name is how the human named it on the command line (the approver
	// socket's path, "ssh root@HOST"); the page shows it beside the host
	// name the daemon sends.
	Name string
	// Client is its approver channel, on which signed_only has been sent;
	// nil when it could not be opened, and Err says why: the page then
	// shows the daemon as disconnected.
	Client *approval.Client
	Err    error
}

// Config is what the web approver is told at start.
type Config struct {
	// Daemons are the daemons served, at least one.
	Daemons []Daemon
	// Origin is the page's origin as the browser sees it
	// ("https://host:844"), and RPID the passkeys' relying party id (the
	// host name).
	Origin, RPID string
	// Log receives what happens; nil discards it.
	Log *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Server is the web approver's HTTP handler.
type Server struct {
	cfg   Config
	feeds []*feed
	tmpl  *template.Template
	log   *slog.Logger
	now   func() time.Time

	// loginKey keys the sign-in challenges, which are stateless (expiry,
	// random, MAC), so that anyone reaching the port can ask for as many
	// as they like without filling anything or crowding out the human's.
	loginKey []byte

	mu sync.Mutex
	// usedLogins are the sign-in challenges already used, until they
	// expire: only a verified assertion adds one.
	usedLogins map[string]time.Time
	// sessions are the signed-in browsers, by the token the page sends in
	// its SessionHeader.
	sessions map[string]session
	// statements are the statements given out to sign, by nonce.
	statements map[string]statement
}

// session is a signed-in browser: the passkey it signed in with, which
// the daemons that show it their requests must know.
type session struct {
	key     approval.PublicKey
	expires time.Time
}

// statement is a statement given out to sign, with the daemon whose
// request it decides and the session it was given to, which alone may
// send its signature.
type statement struct {
	approval.Statement
	link    int
	session string
	given   time.Time
}

// New returns the web approver for cfg; Run reads the daemons' channels.
func New(cfg Config) (*Server, error) {
	if len(cfg.Daemons) == 0 {
		return nil, errors.New("web: no daemon to serve")
	}
	t, err := template.ParseFS(files, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("web: templates: %w", err)
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	s := &Server{cfg: cfg, tmpl: t, log: cfg.Log, now: cfg.Now, loginKey: key,
		usedLogins: map[string]time.Time{}, sessions: map[string]session{}, statements: map[string]statement{}}
	for _, d := range cfg.Daemons {
		f := newFeed(d.Name, d.Client)
		if d.Client == nil {
			f.err = d.Err
			if f.err == nil {
				f.err = errors.New("not connected")
			}
		}
		s.feeds = append(s.feeds, f)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// Run reads every daemon's channel until all of them ended, or ctx did,
// and returns why. A daemon whose channel ends shows as disconnected on the
// page while the others are served.
func (s *Server) Run(ctx context.Context) error {
	errs := make(chan error, len(s.feeds))
	for _, f := range s.feeds {
		if f.client == nil {
			errs <- fmt.Errorf("%s: %w", f.name, f.err)
			continue
		}
		go func() {
			err := f.run(ctx)
			if ctx.Err() == nil {
				s.log.Warn("web: lost a daemon; restart the web approver to reconnect", "daemon", f.name, "err", err)
			}
			errs <- fmt.Errorf("%s: %w", f.name, err)
		}()
	}
	var all []error
	for range s.feeds {
		all = append(all, <-errs)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(all...)
}

// Handler returns the HTTP handler: the page, its static files and its
// JSON API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.index)
	mux.Handle("GET /static/", http.FileServerFS(files))
	mux.HandleFunc("GET /api/state", s.signedIn(s.state))
	mux.HandleFunc("GET /api/page", s.signedIn(s.page))
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

// signedIn lets through only a browser signed in with a passkey that a
// daemon served still knows.
func (s *Server) signedIn(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.session(r, s.states()); !ok {
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

// SessionHeader carries the session token the page got at sign-in. The
// session is never a cookie: a cookie goes to every port of the host, so
// a page an agent serves on another port of localhost would be sent it.
// The page's script keeps the token in its origin's storage, which no
// other origin (another port included) can read, and sends it in this
// header, which another origin's page cannot make the browser send here
// (it is not a CORS-safelisted header, and the web approver answers no
// preflight).
const SessionHeader = "Agent-Sudo-Session"

// states returns what every feed knows, in the order of Config.Daemons.
func (s *Server) states() []feedState {
	out := make([]feedState, len(s.feeds))
	for i, f := range s.feeds {
		out[i] = f.state()
	}
	return out
}

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
	Version  uint64
	// Daemons says which daemons are served and how each is.
	Daemons  []daemonView
	Requests []requestView
	// Refused says, per request a daemon sent that does not hash as
	// announced, that it is not shown and why (escaped).
	Refused []string
	// Focus is the element id of the request asked for with ?id=, when it
	// waits (on the first daemon that shows it).
	Focus string
}

// daemonView is one daemon as the page lists it.
type daemonView struct {
	Label string
	// State says whether it is connected and whether it knows the
	// signed-in passkey; Down is set when its channel is gone.
	State string
	Down  bool
}

// label names a daemon for the page: the host name it sent and how the
// human named it, both escaped.
func label(st feedState) string {
	host, name := esc(st.hello.DaemonHost), esc(st.name)
	switch {
	case host != "" && name != "":
		return host + " (" + name + ")"
	case host != "":
		return host
	}
	return name
}

// version is the version of everything the page shows: the sum of the
// feeds', each of which only grows.
func version(states []feedState) uint64 {
	var v uint64
	for _, st := range states {
		v += st.version
	}
	return v
}

// index serves the page's shell, the same for everyone: a navigation
// carries no session (it is not a cookie), so the page's script fetches
// what a signed-in browser sees from /api/page, with its session.
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := s.tmpl.ExecuteTemplate(w, "index.html", nil); err != nil {
		s.log.Warn("web: render the page", "err", err)
	}
}

// page renders what the signed-in browser sees (page.html): the daemons,
// and the requests waiting on those that know its passkey, each section
// keyed by its element id and hash, for the script to merge into the page
// in place.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	states := s.states()
	var v view
	if sess, ok := s.session(r, states); ok {
		v.Approver, v.Version = esc(sess.key.Name), version(states)
		id := r.URL.Query().Get("id")
		for i, st := range states {
			dv := daemonView{Label: label(st)}
			switch {
			case st.err != nil:
				dv.Down = true
				dv.State = "disconnected (" + esc(st.err.Error()) + "): restart the web approver to reconnect"
			case !st.knows(sess.key):
				dv.State = "connected; it does not know your passkey, so its requests are not shown"
				if st.keysErr != "" {
					dv.State += " (" + esc(st.keysErr) + ")"
				} else if !st.keysSeen {
					dv.State += " (it sent no passkeys: an older daemon?)"
				}
			default:
				dv.State = "connected"
				me := st.identity(sess.key)
				for _, p := range st.pending {
					rv := describe(p, s.now(), st.hello.DaemonHost)
					rv.Link, rv.From = i, dv.Label
					if p.Request != nil {
						rv.approvedBy(p.Request.Approvals, st.approved[p.ID], me)
					}
					v.Requests = append(v.Requests, rv)
					if v.Focus == "" && id != "" && p.ID == id {
						v.Focus = rv.Elem()
					}
				}
				for _, rf := range st.refused {
					v.Refused = append(v.Refused, fmt.Sprintf("agent-sudod on %s sent request %s, which does not match the hash it announced: "+
						"it is not shown and cannot be decided here (%s)", dv.Label, esc(rf.id), esc(rf.err)))
				}
			}
			v.Daemons = append(v.Daemons, dv)
		}
	}
	if v.Approver == "" {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "sign in with your passkey first"})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := s.tmpl.ExecuteTemplate(w, "page.html", v); err != nil {
		s.log.Warn("web: render the page", "err", err)
	}
}

// state tells the page the version of the list, so that it reloads when
// a request arrives or leaves.
func (s *Server) state(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"version": version(s.states())})
}

// writeJSON answers v with code; when v cannot be encoded it answers 500
// with why, never a part of v. A failed write is the client's going away.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b = []byte(`{"error":"the answer cannot be encoded"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

func readJSON(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("read the request: %w", err)
	}
	if len(b) > maxBody {
		return errors.New("the request is too long")
	}
	return strictjson.Unmarshal(b, v)
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
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "sign-in refused: " + err.Error()})
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
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	if req.Decision != approval.AllowOnce && req.Decision != approval.DenyOnce {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "the web approver allows once or denies"})
		return
	}
	if req.Daemon == nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "say which daemon showed the request"})
		return
	}
	link := *req.Daemon
	tok, state, me, ok := s.mayDecide(r, link)
	if !ok {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "this daemon is gone, or does not know your passkey; reload"})
		return
	}
	p, ok := s.feeds[link].find(req.ID)
	if !ok || p.Hash != req.Hash {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "this request no longer waits, or changed; reload"})
		return
	}
	if req.Decision == approval.AllowOnce && counted(state.approved[p.ID], p.Hash, me) {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "you already allowed this request, and it needs different people: another person must allow it"})
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
	challenge, err := st.ChallengeString()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": "this decision cannot be signed: " + err.Error()})
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
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
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
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "this decision expired or was already sent; try again"})
		return
	}
	if _, _, _, ok := s.mayDecide(r, st.link); !ok {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "this daemon is gone, or does not know your passkey any more"})
		return
	}
	a, err := req.Assertion.decode()
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	f := s.feeds[st.link]
	note, err := f.decide(ctx, approval.Message{Type: approval.MsgDecide, ID: st.ID, Hash: st.Hash, Decision: st.Decision,
		Signed: &approval.Signed{Statement: st.Statement, Assertion: a}})
	if err != nil {
		s.log.Info("web: decision refused by the daemon", "daemon", f.name, "id", st.ID, "err", err)
		writeJSON(w, http.StatusConflict, map[string]any{"error": err.Error()})
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
