package web

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-webauthn/webauthn/protocol/webauthncose"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/agent-sudo/agent-sudo/internal/boundedline"
	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/strictjson"
)

// An enrolment runs as two processes joined by a socket pair (the split
// and its reasons: docs/security.md, "Enrolment"). The root side opens the
// listener and the certificate, draws the link and writes EnrolSetup as
// the first line; the serving side drops to the unprivileged user, serves
// the page and offers each registered credential as one line
// ({"credential": ...}); the root side answers each with one line
// ({"error": "..."}, empty when it stored the passkey).

// maxEnrolLine bounds one line between the two sides: a credential is a few
// hundred bytes, a setup a certificate chain.
const maxEnrolLine = 256 << 10

// EnrolSetup is what the root side hands the serving side.
type EnrolSetup struct {
	Name       string    `json:"name"`
	PageOrigin string    `json:"page_origin"`
	RPID       string    `json:"rp_id"`
	Token      string    `json:"token"`
	UserID     []byte    `json:"user_id"`
	Expires    time.Time `json:"expires"`
	// Cert is the TLS certificate chain (DER) and Key its private key
	// (PKCS #8), both empty for plain HTTP: the serving side terminates
	// TLS, as the web approver does.
	Cert [][]byte `json:"cert,omitempty"`
	Key  []byte   `json:"key,omitempty"`
	// UID and GID are the user the serving side runs as.
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// NewEnrolSetup draws the link's token and user handle for an enrolment
// of name, expiring EnrolTTL after now.
func NewEnrolSetup(name, pageOrigin, rpID string, uid, gid uint32, now time.Time) (EnrolSetup, error) {
	if err := passkey.CheckName(name); err != nil {
		return EnrolSetup{}, err
	}
	uh := make([]byte, 32)
	_, _ = rand.Read(uh)
	return EnrolSetup{Name: name, PageOrigin: pageOrigin, RPID: rpID, Token: randomToken(), UserID: uh,
		Expires: now.Add(EnrolTTL), UID: uid, GID: gid}, nil
}

// Path is the one-time link's path (after the origin).
func (s EnrolSetup) Path() string { return "/enroll/" + s.Token }

// SetCert makes the serving side speak TLS with cert.
func (s *EnrolSetup) SetCert(cert tls.Certificate) error {
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return fmt.Errorf("enrolment: the TLS key: %w", err)
	}
	s.Cert, s.Key = cert.Certificate, key
	return nil
}

// Listener wraps ln in TLS when the setup carries a certificate.
func (s EnrolSetup) Listener(ln net.Listener) (net.Listener, error) {
	if len(s.Cert) == 0 {
		return ln, nil
	}
	key, err := x509.ParsePKCS8PrivateKey(s.Key)
	if err != nil {
		return nil, fmt.Errorf("enrolment: the TLS key: %w", err)
	}
	cert := tls.Certificate{Certificate: s.Cert, PrivateKey: key}
	return tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}), nil
}

// Enrolment returns the enrolment the serving side runs for s, whose
// Keep offers each credential to the root side over conn (whose setup
// line br has read) and returns its answer.
func (s EnrolSetup) Enrolment(conn net.Conn, br *bufio.Reader) *Enrolment {
	ch := &enrolChannel{conn: conn, br: br}
	return &Enrolment{Name: s.Name, PageOrigin: s.PageOrigin, RPID: s.RPID, Token: s.Token, UserID: s.UserID,
		Expires: s.Expires, Keep: ch.offer}
}

type enrolOffer struct {
	Credential *webauthn.Credential `json:"credential"`
}

type enrolAnswer struct {
	Error string `json:"error"`
}

// enrolChannel is the serving side's end of the socket pair: one offer
// and its answer at a time, in step. An exchange cut short (ctx's end, an
// I/O error) leaves an answer unread or an offer half written, so it
// closes the channel: later offers fail as such instead of reading that
// stale answer. Only root's own answer leaves it open.
type enrolChannel struct {
	mu     sync.Mutex
	conn   net.Conn
	br     *bufio.Reader
	kept   bool
	closed error
}

// offer sends cred to the root side and reads its answer: nil when root
// stored it, root's refusal, or the channel's failure.
func (c *enrolChannel) offer(ctx context.Context, cred webauthn.Credential) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kept {
		return errors.New("a passkey was already enrolled on this link")
	}
	if c.closed != nil {
		return fmt.Errorf("hand the passkey to root: the channel is closed after an earlier failure (%v); run agent-sudo approve web enroll again", c.closed)
	}
	a, err := c.exchange(ctx, cred)
	if err != nil {
		c.closed = err
		_ = c.conn.Close()
		return fmt.Errorf("hand the passkey to root: %w", err)
	}
	if a.Error != "" {
		return errors.New(a.Error)
	}
	c.kept = true
	return nil
}

// exchange writes one offer and reads its answer; an error when ctx ended
// during it, even if the answer came, since the connection's deadline is
// then set.
func (c *enrolChannel) exchange(ctx context.Context, cred webauthn.Credential) (enrolAnswer, error) {
	var a enrolAnswer
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Now()) })
	err := writeLine(c.conn, enrolOffer{Credential: &cred})
	if err == nil {
		err = readLine(c.br, &a)
	}
	if !stop() {
		return a, fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return a, err
}

// ReadEnrolSetup reads the setup line, first on the serving side.
func ReadEnrolSetup(br *bufio.Reader) (EnrolSetup, error) {
	var s EnrolSetup
	if err := readLine(br, &s); err != nil {
		return EnrolSetup{}, fmt.Errorf("enrolment: read the setup: %w", err)
	}
	return s, nil
}

// CheckCredential is the root side's check of what the serving side
// registered, before it is written: a credential id of 1 to 1023 bytes
// (WebAuthn's bound), a public key that parses as a COSE key, and the
// user-present and user-verified flags set. The name, relying party,
// origins and user handle are the root side's own, never the serving
// side's.
func CheckCredential(c webauthn.Credential) error {
	if len(c.ID) == 0 || len(c.ID) > 1023 {
		return fmt.Errorf("the credential id is %d bytes, not 1 to 1023", len(c.ID))
	}
	if _, err := webauthncose.ParsePublicKey(c.PublicKey); err != nil {
		return fmt.Errorf("the public key cannot be read: %w", err)
	}
	if !c.Flags.UserPresent || !c.Flags.UserVerified {
		return fmt.Errorf("the passkey did not verify the user (fingerprint, face or PIN)")
	}
	return nil
}

// storedCredential returns what the root side keeps of c, what it
// checked (CheckCredential): the id, the public key and the flags, in the
// library's record. Nothing else the serving side sent (attestation,
// transports, authenticator) is kept, since root did not check it.
func storedCredential(c webauthn.Credential) (passkey.Credential, error) {
	b, err := json.Marshal(webauthn.Credential{ID: c.ID, PublicKey: c.PublicKey, Flags: c.Flags})
	if err != nil {
		return passkey.Credential{}, fmt.Errorf("the credential cannot be written: %w", err)
	}
	return passkey.CredentialFromJSON(b)
}

// EnrolOrigins returns the origins a passkey enrolled on the page at
// pageOrigin, for the relying party rpID, will sign from: forOrigins (the
// web approver's, "scheme://host[:port]"), or pageOrigin when none is
// given. A WebAuthn credential is bound to its relying party id, the host
// name, and not to a port, so the enrolment page may listen on another
// port of the same host while the web approver runs; an origin on another
// host is refused, since the passkey could never sign from it.
func EnrolOrigins(rpID, pageOrigin string, forOrigins []string) ([]string, error) {
	if len(forOrigins) == 0 {
		forOrigins = []string{pageOrigin}
	}
	var out []string
	for _, o := range forOrigins {
		u, err := ParseOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("the %w", err)
		}
		if !strings.EqualFold(u.Hostname(), rpID) {
			return nil, hint.Wrap(fmt.Errorf("the origin %s is not on %s, the host of the enrolment page (%s)", u.Scheme+"://"+u.Host, rpID, pageOrigin),
				"a passkey signs only from the host name it was enrolled on, so enrol on a port of "+u.Hostname())
		}
		out = append(out, Origin(u))
	}
	return out, nil
}

// ParseOrigin reads an origin as a flag gives it, "scheme://host[:port]"
// with http or https, a host, and nothing else (no user, path beyond "/",
// query or fragment); Origin writes it as a browser does.
func ParseOrigin(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("origin %q: want scheme://host[:port]", s)
	}
	return u, nil
}

// Origin returns u's origin as a browser serializes it (the Origin header,
// WebAuthn's client data): the scheme and the host in lower case, and the
// port only when it is not the scheme's default, so that
// "https://Host:443/" is "https://host".
func Origin(u *url.URL) string {
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if scheme == "https" && port == "443" || scheme == "http" && port == "80" {
		port = ""
	}
	if port == "" {
		if strings.Contains(host, ":") {
			return scheme + "://[" + host + "]"
		}
		return scheme + "://" + host
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// KeepEnrolled is the root side of an enrolment: it writes setup to conn,
// then checks each credential the serving side offers (CheckCredential)
// and stores the first good one in store as setup's name, with origins
// and the setup's relying party and user handle, answering each offer.
// The origins must be on the setup's relying party (EnrolOrigins); the
// page the passkey registers on is setup.PageOrigin, which may differ from
// them by its port. It returns the stored passkey, or an error when ctx
// ends first (the link's expiry), the serving side goes away, or it offers
// something that is not a credential.
//
// The passkey is stored with the person it is for the two-person rule, as
// the system's name service resolves setup's name here, in root's process
// (ResolvePerson with an empty environment); an enrolment whose
// name cannot be resolved (the directory does not answer) stores nothing.
func KeepEnrolled(ctx context.Context, conn net.Conn, setup EnrolSetup, origins []string, store passkey.Store) (passkey.Enrolled, error) {
	return KeepEnrolledWith(ctx, conn, setup, origins, store, func(ctx context.Context, name string) (string, error) {
		return ResolvePerson(ctx, name, nil)
	})
}

// KeepEnrolledWith is KeepEnrolled with resolve in place of the system's
// name service: a test's (nss_wrapper's).
func KeepEnrolledWith(ctx context.Context, conn net.Conn, setup EnrolSetup, origins []string, store passkey.Store, resolve func(ctx context.Context, name string) (string, error)) (passkey.Enrolled, error) {
	if len(origins) == 0 {
		return passkey.Enrolled{}, errors.New("enrolment: no origin for the passkey to sign from")
	}
	origins, err := EnrolOrigins(setup.RPID, setup.PageOrigin, origins)
	if err != nil {
		return passkey.Enrolled{}, fmt.Errorf("enrolment: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if err := writeLine(conn, setup); err != nil {
		return passkey.Enrolled{}, fmt.Errorf("enrolment: hand the setup to the page's process: %w", err)
	}
	br := bufio.NewReader(conn)
	// At most as many offers as the page lets a link try (maxEnrolTries):
	// a page's process taken over from the network cannot have root check
	// offer after offer, each running the name service, until the expiry.
	for tries := 1; ; tries++ {
		var o enrolOffer
		if err := readLine(br, &o); err != nil {
			if ctx.Err() != nil {
				return passkey.Enrolled{}, ctx.Err()
			}
			return passkey.Enrolled{}, fmt.Errorf("enrolment: the page's process: %w", err)
		}
		if o.Credential == nil {
			return passkey.Enrolled{}, fmt.Errorf("enrolment: the page's process offered no credential")
		}
		en := passkey.Enrolled{Name: setup.Name, RPID: setup.RPID, Origins: origins, UserID: setup.UserID, Created: time.Now().UTC()}
		err := CheckCredential(*o.Credential)
		if err == nil {
			en.Person, err = resolve(ctx, setup.Name)
		}
		if err == nil {
			en.Credential, err = storedCredential(*o.Credential)
		}
		if err == nil {
			err = store.Save(en)
		}
		answer := enrolAnswer{}
		if err != nil {
			answer.Error = err.Error()
		}
		if werr := writeLine(conn, answer); werr != nil && err == nil {
			// Stored: the page may not say so, the terminal does.
			return en, nil
		}
		if err == nil {
			return en, nil
		}
		if tries >= maxEnrolTries {
			return passkey.Enrolled{}, fmt.Errorf("enrolment: the page's process offered %d credentials, each refused (the last: %w); run enroll again", tries, err)
		}
	}
}

func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func readLine(br *bufio.Reader, v any) error {
	line, n, err := boundedline.Read(br, maxEnrolLine)
	if err != nil {
		return err
	}
	if line == nil {
		return fmt.Errorf("a line of %d bytes, more than %d", n, maxEnrolLine)
	}
	if err := strictjson.Unmarshal(line, v); err != nil {
		return fmt.Errorf("a line that is not the expected JSON: %w", err)
	}
	return nil
}
