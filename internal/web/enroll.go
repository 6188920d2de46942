package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/agent-sudo/agent-sudo/internal/passkey"
)

// EnrolTTL is how long an enrolment link works.
const EnrolTTL = 5 * time.Minute

// maxEnrolTries bounds the registrations one link may attempt.
const maxEnrolTries = 3

// Enrolment serves the page of one passkey enrolment for the approver
// Name, behind a one-time link. It runs as the unprivileged user (see
// docs/security.md, "Enrolment"): it performs the WebAuthn ceremony and
// hands the registered credential to Keep, the root side's check and
// store, which it cannot write itself.
type Enrolment struct {
	// Name is the approver's name.
	Name string
	// PageOrigin is the origin of the enrolment page (where this handler
	// is served); RPID the relying party id (its host name).
	PageOrigin, RPID string
	// Token is the link's secret, UserID the WebAuthn user handle and
	// Expires the end of the link's life: the root side draws them
	// (NewEnrolSetup); Start draws those left empty.
	Token   string
	UserID  []byte
	Expires time.Time
	// Keep checks and stores a registered credential; its error is shown
	// on the page, and the enrolment stays open for another try. It is
	// called one at a time, never again once it returned nil, with a
	// context that ends at Expires.
	Keep func(ctx context.Context, cred webauthn.Credential) error
	Log  *slog.Logger

	wa   *webauthn.WebAuthn
	user *enrolUser
	tmpl *template.Template
	done chan struct{}

	// keepMu serializes Keep: one credential is offered at a time, and
	// none once one was kept.
	keepMu sync.Mutex

	mu      sync.Mutex
	session *webauthn.SessionData
	tries   int
	closed  bool
	kept    bool
}

type enrolUser struct {
	id   []byte
	name string
}

func (u *enrolUser) WebAuthnID() []byte                         { return u.id }
func (u *enrolUser) WebAuthnName() string                       { return u.name }
func (u *enrolUser) WebAuthnDisplayName() string                { return u.name }
func (u *enrolUser) WebAuthnCredentials() []webauthn.Credential { return nil }

// Start prepares the ceremony, drawing the token, user handle and expiry
// left empty; Path is then the link's path.
func (e *Enrolment) Start(now time.Time) error {
	if err := passkey.CheckName(e.Name); err != nil {
		return err
	}
	if e.Keep == nil {
		return fmt.Errorf("enrolment: no Keep")
	}
	wa, err := webauthn.New(&webauthn.Config{
		RPID: e.RPID, RPDisplayName: "agent-sudo", RPOrigins: []string{e.PageOrigin},
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey: protocol.ResidentKeyRequirementRequired, UserVerification: protocol.VerificationRequired,
		},
		AttestationPreference: protocol.PreferNoAttestation,
	})
	if err != nil {
		return fmt.Errorf("enrolment: %w", err)
	}
	t, err := template.ParseFS(files, "templates/enroll.html")
	if err != nil {
		return fmt.Errorf("enrolment: %w", err)
	}
	if e.UserID == nil {
		e.UserID = make([]byte, 32)
		_, _ = rand.Read(e.UserID)
	}
	if e.Token == "" {
		e.Token = randomToken()
	}
	if e.Expires.IsZero() {
		e.Expires = now.Add(EnrolTTL)
	}
	e.wa, e.tmpl, e.user = wa, t, &enrolUser{id: e.UserID, name: e.Name}
	e.done = make(chan struct{})
	if e.Log == nil {
		e.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Path is the one-time link's path (after the origin).
func (e *Enrolment) Path() string { return "/enroll/" + e.Token }

// Wait returns nil once Keep has taken a credential, or ctx's error when
// ctx ends first (the caller's ctx carries the link's expiry).
func (e *Enrolment) Wait(ctx context.Context) error {
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Handler serves the enrolment page, its static files and its two API
// calls.
func (e *Enrolment) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.FileServerFS(files))
	mux.HandleFunc("GET /enroll/{token}", e.page)
	mux.HandleFunc("POST /enroll/{token}/begin", e.begin)
	mux.HandleFunc("POST /enroll/{token}/finish", e.finish)
	mux.HandleFunc("/", e.notFound)
	return headers(mux)
}

// notFound answers any other address in plain words: a link cut short
// when it was copied lands here.
func (e *Enrolment) notFound(w http.ResponseWriter, r *http.Request) {
	http.Error(w, EnrolLinkGone, http.StatusNotFound)
}

// valid checks the link's secret and expiry.
func (e *Enrolment) valid(w http.ResponseWriter, r *http.Request) bool {
	tok := r.PathValue("token")
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if subtle.ConstantTimeCompare([]byte(tok), []byte(e.Token)) != 1 || closed || !time.Now().Before(e.Expires) {
		// The page's script reads JSON; a browser opening the link, text.
		if r.Method == http.MethodPost {
			writeJSON(w, http.StatusNotFound, map[string]any{"error": EnrolLinkGone})
		} else {
			http.Error(w, EnrolLinkGone, http.StatusNotFound)
		}
		return false
	}
	return r.Method != http.MethodPost || fromPage(w, r, e.PageOrigin, "the enrolment page") == ""
}

func (e *Enrolment) page(w http.ResponseWriter, r *http.Request) {
	if !e.valid(w, r) {
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := e.tmpl.ExecuteTemplate(w, "enroll.html", map[string]string{"Name": e.Name}); err != nil {
		e.Log.Warn("enrolment: render", "err", err)
	}
}

func (e *Enrolment) begin(w http.ResponseWriter, r *http.Request) {
	if !e.valid(w, r) {
		return
	}
	creation, session, err := e.wa.BeginRegistration(e.user)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": err.Error()})
		return
	}
	e.mu.Lock()
	e.session = session
	e.mu.Unlock()
	writeJSON(w, http.StatusOK, creation)
}

func (e *Enrolment) finish(w http.ResponseWriter, r *http.Request) {
	if !e.valid(w, r) {
		return
	}
	e.mu.Lock()
	session := e.session
	e.session = nil
	e.tries++
	if e.tries >= maxEnrolTries {
		e.closed = true
	}
	e.mu.Unlock()
	if session == nil {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "start the enrolment again"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	parsed, err := protocol.ParseCredentialCreationResponse(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "the passkey's answer cannot be read: " + err.Error()})
		return
	}
	cred, err := e.wa.CreateCredential(e.user, *session, parsed)
	if err != nil {
		e.Log.Warn("enrolment refused", "err", err)
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "the passkey was not enrolled: " + err.Error()})
		return
	}
	if err := e.keep(*cred); err != nil {
		e.Log.Warn("enrolment not kept", "err", err)
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "the passkey was not enrolled: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"approver": e.Name})
}

// keep hands cred to Keep, one at a time and only while none was kept,
// under a context that ends with the link (not with the browser's
// request: a browser that goes away mid-offer must not cut the exchange
// with the root side short), and closes the enrolment once one is kept.
func (e *Enrolment) keep(cred webauthn.Credential) error {
	e.keepMu.Lock()
	defer e.keepMu.Unlock()
	e.mu.Lock()
	kept := e.kept
	e.mu.Unlock()
	if kept {
		return errors.New("a passkey was already enrolled on this link")
	}
	ctx, cancel := context.WithDeadline(context.Background(), e.Expires)
	defer cancel()
	if err := e.Keep(ctx, cred); err != nil {
		return err
	}
	e.mu.Lock()
	e.kept, e.closed = true, true
	e.mu.Unlock()
	close(e.done)
	return nil
}
