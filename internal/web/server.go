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
//
// The command line enters through a few functions, each once its flags
// are checked: [Serve] is the web approver once its daemons are dialled;
// [RelayOutput] is the relay that holds root's terminal for it
// ([RelayTerminalOutput] starts it); [Enrol] is an enrolment's root side,
// which starts the page's process, and [ServeEnrolment] that process, as
// the unprivileged user. The two helper processes are this program again
// ("agent-sudo approve web relay-output", "... serve-enrolment"), whose
// command line hands them straight to those functions.
package web

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
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
	mux.HandleFunc("/", s.notFound)
	return headers(mux)
}

// ownPage lets through only a call from the web approver's own page
// (fromPage): every call that changes state goes through it.
func (s *Server) ownPage(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if why := fromPage(w, r, s.cfg.Origin, "the web approver's own page"); why != "" {
			s.log.Warn("web: refused a call not from the page", "path", r.URL.Path, "origin", clipOrigin(r.Header.Get("Origin")), "reason", why)
			return
		}
		h(w, r)
	}
}

// signedIn lets through only a browser signed in with a passkey that a
// daemon served still knows.
func (s *Server) signedIn(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.session(r, s.states()); !ok {
			if strings.HasPrefix(r.URL.Path, "/api/decide/") {
				s.log.Warn("web: decision refused", "path", r.URL.Path, "reason", "not signed in")
			}
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

// fromPage refuses a state-changing request that does not come from the
// script of the page at origin (its Origin header and a JSON body, which a
// form on another site cannot send without a preflight), answering 403 with
// why in plain words; what names that page in the refusal. It returns the
// refusal, "" when r may go on.
func fromPage(w http.ResponseWriter, r *http.Request, origin, what string) string {
	why := notFromPage(r, origin, what)
	if why != "" {
		writeJSON(w, http.StatusForbidden, map[string]any{"error": why})
	}
	return why
}

// notFromPage says why r is not a call from the script of the page at
// origin, or "" when it is one. A page at another address (a port of the
// same host, which an ssh tunnel on another local port opens, or another
// name of it) is told the address to open: the passkeys sign only for
// origin (the origin is part of what they sign), so it could never
// decide. Another site's page cannot read the answer (no CORS).
func notFromPage(r *http.Request, origin, what string) string {
	got := r.Header.Get("Origin")
	switch {
	case got == origin && r.Header.Get("Content-Type") == "application/json":
		return ""
	case got != "" && got != origin:
		return wrongAddress(clipOrigin(got), origin)
	}
	return "refused: not from " + what + " (" + origin + ")"
}

// maxOriginShown bounds the Origin header a refusal repeats, in its answer
// and in the log: an origin is a scheme, a host name of at most 253 bytes
// and a port, and anyone who reaches the port may send any header up to
// the server's MaxHeaderBytes, once per request.
const maxOriginShown = 300

// clipOrigin is got cut to maxOriginShown bytes, marked as cut.
func clipOrigin(got string) string {
	if len(got) <= maxOriginShown {
		return got
	}
	return got[:maxOriginShown] + "...(" + strconv.Itoa(len(got)) + " bytes)"
}

// wrongAddress is what a page opened at got, not at origin, is told.
func wrongAddress(got, origin string) string {
	return fmt.Sprintf("this page is open at %s, but its passkeys sign only for %s: open %s/ instead "+
		"(through an ssh tunnel, the local port must be the one the passkey was enrolled for: docs/remote.md)", got, origin, origin)
}

// notFound answers a path the web approver does not serve in plain words
// with where to go: an enrolment link opened after its enrolment ended
// reaches the web approver on the same port.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	msg := "There is nothing at this address. The web approver's page is " + s.cfg.Origin + "/"
	if strings.HasPrefix(r.URL.Path, "/enroll/") {
		msg = EnrolLinkGone + " The web approver's page is " + s.cfg.Origin + "/"
	}
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": msg})
		return
	}
	http.Error(w, msg, http.StatusNotFound)
}

// EnrolLinkGone is what an enrolment link that no longer works shows.
const EnrolLinkGone = "This enrolment link no longer works: it was used already, it expired (a link works once, for 5 minutes), or it is not the whole link. " +
	"To enrol a passkey, run `sudo agent-sudo approve web enroll NAME` on the server again and open the new link on this device."

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
