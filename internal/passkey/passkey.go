// Package passkey keeps the passkeys enrolled for the web approver and
// checks the WebAuthn assertions of signed decisions against them
// (docs/approving.md#the-web-approver). The daemon verifies every signed
// decision with a Store before the broker sees it, and `agent-sudo audit
// verify` verifies the signatures in the audit log again with one, offline.
//
// Enrolment, the registration ceremony, is github.com/go-webauthn/webauthn's
// (package internal/web). The assertion check here makes the checks of that
// library's assertion verification, with its COSE key parser and signature
// verifiers, and links no more of it, so that the daemon does not carry its
// attestation formats, metadata service client and HTTP stack
// (docs/performance.md, "The daemon's size"); a differential test holds the
// two to the same answers. No CBOR, COSE or signature code is written here.
package passkey

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/fsperm"
	"github.com/agent-sudo/agent-sudo/internal/strictjson"
)

// DefaultDir is where the passkeys are kept: root's, mode 0700, one file
// per approver (NAME.json, mode 0600), revoked ones under revoked/ (kept so
// that audit verify can still check what they signed).
const DefaultDir = "/etc/agent-sudo/passkeys"

// revokedDir is the subdirectory of a Store's Dir holding revoked passkeys.
const revokedDir = "revoked"

// Enrolled is one approver's passkey.
type Enrolled struct {
	// Name is the approver's name, as decisions and the audit log show it.
	Name string `json:"name"`
	// RPID is the WebAuthn relying party id (the web approver's host name)
	// and Origins the page origins the passkey may sign from.
	RPID    string   `json:"rp_id"`
	Origins []string `json:"origins"`
	// UserID is the WebAuthn user handle drawn at enrolment.
	UserID []byte `json:"user_id"`
	// Credential is the credential as the library registered it: its id
	// and public key (COSE), and the rest of its record, kept as written.
	Credential Credential `json:"credential"`
	Created    time.Time  `json:"created"`
	// Revoked is when it was revoked; zero while it is valid.
	Revoked time.Time `json:"revoked,omitzero"`
	// Person is who the passkey is for the two-person rule, resolved by
	// root at enrolment through the system's name service (web.ResolvePerson):
	// "uid N" when Name is a login user, "passkey NAME" when the name
	// service knows no such user. Empty in a file enrolled before it was
	// recorded: such a passkey cannot count as one of two people.
	Person string `json:"person,omitempty"`
}

// Store is the directory of enrolled passkeys.
type Store struct {
	Dir string
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9._-]{0,31}$`)

// CheckName reports whether name can name an approver: 1 to 32 lower-case
// letters, digits, '.', '_' and '-', starting with a letter.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("approver name %q: want 1 to 32 of a-z, 0-9, '.', '_' and '-', starting with a letter", name)
	}
	return nil
}

// checkDir refuses a directory anyone but its owner can write or read, or
// owned by someone other than root and this process: the passkeys decide
// what runs as root (the daemon runs as root, so its directory must be
// root's; audit verify run by a user may read a copy of their own).
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("passkeys: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("passkeys: %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || (st.Uid != 0 && int(st.Uid) != os.Geteuid()) {
		return fmt.Errorf("passkeys: %s is not owned by root (or by whoever reads it)", dir)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("passkeys: %s has mode %v; want 0700 (root only)", dir, fi.Mode().Perm())
	}
	return nil
}

// maxKeyFile bounds one passkey file: an enrolled passkey is a few
// hundred bytes.
const maxKeyFile = 1 << 20

// readKey reads the passkey file name in dir, as List and Revoke take it:
// a regular file with one link, owned by root (or by whoever reads it, for
// audit verify on a copy of one's own) and writable by nobody else
// (fsperm.File), read strictly (strictjson.Unmarshal), whose name inside is
// a valid approver name and the one its file name gives: NAME.json, or
// NAME-NANOSECONDS.json under revoked/. A file's inner name is what
// decisions are signed as, so bob.json holding "name":"alice" is refused
// rather than signing as alice.
func readKey(dir, name string, revoked bool) (Enrolled, error) {
	path := filepath.Join(dir, name)
	// The file name is untrusted until checked: every error quotes it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Enrolled{}, fmt.Errorf("passkeys: open %q: %w", path, unwrapPath(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Enrolled{}, fmt.Errorf("passkeys: stat %q: %w", path, unwrapPath(err))
	}
	if err := fsperm.File(fmt.Sprintf("passkey file %q", path), fi, "whoever can write it can approve requests to run as root"); err != nil {
		return Enrolled{}, fmt.Errorf("passkeys: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return Enrolled{}, fmt.Errorf("passkeys: read %q: %w", path, unwrapPath(err))
	}
	if len(b) > maxKeyFile {
		return Enrolled{}, fmt.Errorf("passkeys: %q is over %d bytes; a passkey file is a few hundred", path, maxKeyFile)
	}
	var en Enrolled
	if err := strictjson.Unmarshal(b, &en); err != nil {
		return Enrolled{}, fmt.Errorf("passkeys: %q: %w", path, err)
	}
	if err := CheckName(en.Name); err != nil {
		return Enrolled{}, fmt.Errorf("passkeys: %q: %w", path, err)
	}
	if len(en.Credential.ID) == 0 || len(en.Credential.PublicKey) == 0 || en.RPID == "" || len(en.Origins) == 0 {
		return Enrolled{}, fmt.Errorf("passkeys: %q has no credential, relying party or origin; it is not a passkey", path)
	}
	want := strings.TrimSuffix(name, ".json")
	if revoked {
		if i := strings.LastIndexByte(want, '-'); i > 0 && isDigits(want[i+1:]) {
			want = want[:i]
		}
	}
	if en.Name != want {
		return Enrolled{}, fmt.Errorf("passkeys: %q holds the passkey of %q, not of the name its file name gives (%q); a file NAME.json holds NAME's passkey", path, en.Name, want)
	}
	return en, nil
}

// unwrapPath returns a *fs.PathError's error without its path, which the
// caller quotes.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// List returns the valid passkeys, and with revoked set the revoked ones
// too, sorted by name. A missing directory means none. Each file is
// checked as readKey says; two passkeys that share a credential id under
// different names or keys are refused, since a signature names the
// credential and could not tell which of them made it.
func (s Store) List(revoked bool) ([]Enrolled, error) {
	var out []Enrolled
	dirs := []string{s.Dir}
	if revoked {
		dirs = append(dirs, filepath.Join(s.Dir, revokedDir))
	}
	for i, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("passkeys: %w", err)
		}
		if i == 0 {
			if err := checkDir(dir); err != nil {
				return nil, err
			}
		}
		for _, e := range ents {
			if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			en, err := readKey(dir, e.Name(), i == 1)
			if err != nil {
				return nil, err
			}
			out = append(out, en)
		}
	}
	// sort.Slice, not slices.SortFunc: a generic sort of Enrolled, a
	// struct of a dozen words, instantiates pdqsort for its shape alone,
	// 17 KB of code in agent-sudod (docs/performance.md, "The daemon's
	// size").
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i, a := range out {
		for _, b := range out[i+1:] {
			if bytes.Equal(a.Credential.ID, b.Credential.ID) && (a.Name != b.Name || !bytes.Equal(a.Credential.PublicKey, b.Credential.PublicKey)) {
				return nil, fmt.Errorf("passkeys: %q and %q are enrolled with the same credential id; remove the one enrolled by mistake", a.Name, b.Name)
			}
		}
	}
	return out, nil
}

// Save writes e as the passkey of e.Name, refusing a name already
// enrolled and a credential id already enrolled (valid or revoked) under
// another name or with another key: a signature names its credential, and
// two passkeys with one id would make one approver's signatures count as
// the other's, or fail for both.
func (s Store) Save(e Enrolled) error {
	if err := CheckName(e.Name); err != nil {
		return err
	}
	if len(e.Credential.ID) == 0 {
		return fmt.Errorf("passkeys: %s: the credential has no id", e.Name)
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("passkeys: %w", err)
	}
	if err := checkDir(s.Dir); err != nil {
		return err
	}
	have, err := s.List(true)
	if err != nil {
		return err
	}
	for _, h := range have {
		if bytes.Equal(h.Credential.ID, e.Credential.ID) && (h.Name != e.Name || !bytes.Equal(h.Credential.PublicKey, e.Credential.PublicKey)) {
			return fmt.Errorf("passkeys: this passkey's credential is already enrolled as %q; one credential is one approver", h.Name)
		}
	}
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return fmt.Errorf("passkeys: encode %s: %w", e.Name, err)
	}
	path := filepath.Join(s.Dir, e.Name+".json")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("passkeys: %s is already enrolled, or its file cannot be made: %w", e.Name, err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return fmt.Errorf("passkeys: write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("passkeys: sync %s: %w", path, err)
	}
	return f.Close()
}

// Revoke moves name's passkey to revoked/, stamped with now: the daemon no
// longer accepts it, and audit verify still checks what it signed before.
func (s Store) Revoke(name string, now time.Time) error {
	if err := CheckName(name); err != nil {
		return err
	}
	path := filepath.Join(s.Dir, name+".json")
	if _, err := os.Lstat(path); err != nil {
		return fmt.Errorf("passkeys: no approver %q is enrolled: %w", name, err)
	}
	e, err := readKey(s.Dir, name+".json", false)
	if err != nil {
		return err
	}
	e.Revoked = now.UTC()
	dir := filepath.Join(s.Dir, revokedDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("passkeys: %w", err)
	}
	out, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return fmt.Errorf("passkeys: encode %s: %w", name, err)
	}
	dst := filepath.Join(dir, fmt.Sprintf("%s-%d.json", name, now.UnixNano()))
	if err := os.WriteFile(dst, append(out, '\n'), 0o600); err != nil {
		return fmt.Errorf("passkeys: %w", err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("passkeys: %w", err)
	}
	return nil
}

// PublicKeys returns the public part of the valid passkeys
// (approval.KeySource): what the daemon sends the web approver.
func (s Store) PublicKeys() ([]approval.PublicKey, error) {
	keys, err := s.List(false)
	if err != nil {
		return nil, err
	}
	out := make([]approval.PublicKey, 0, len(keys))
	for _, k := range keys {
		out = append(out, Public(k))
	}
	return out, nil
}

// Public returns the public part of e.
func Public(e Enrolled) approval.PublicKey {
	return approval.PublicKey{Name: e.Name, RPID: e.RPID, Origins: slices.Clone(e.Origins), UserID: slices.Clone(e.UserID),
		CredentialID: slices.Clone(e.Credential.ID), PublicKey: slices.Clone(e.Credential.PublicKey), Identity: e.Person}
}

// FromPublic returns the passkey whose public part is k, as VerifyChallenge
// takes it.
func FromPublic(k approval.PublicKey) Enrolled {
	return Enrolled{Name: k.Name, RPID: k.RPID, Origins: k.Origins, UserID: k.UserID,
		Credential: Credential{ID: k.CredentialID, PublicKey: k.PublicKey}, Person: k.Identity}
}

// KeysStamp returns a stat of the directory (approval.KeySource): enrolling
// (a file created in it) and revoking (a file removed from it) change its
// modification time, and a change of its owner or mode its change time. A
// missing directory has the stamp "none".
func (s Store) KeysStamp() (string, time.Time, error) {
	fi, err := os.Stat(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "none", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("passkeys: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", time.Time{}, fmt.Errorf("passkeys: %s: no stat", s.Dir)
	}
	ctime := time.Unix(st.Ctim.Unix())
	changed := fi.ModTime()
	if ctime.After(changed) {
		changed = ctime
	}
	return fmt.Sprintf("%d:%d:%d:%d:%d:%d:%o", st.Dev, st.Ino, fi.ModTime().UnixNano(), ctime.UnixNano(), st.Uid, st.Size, fi.Mode()), changed, nil
}

// Verify checks s's assertion against the valid passkeys (approval.Verifier):
// the one whose credential id it names must have signed s's statement's
// challenge, from one of its origins, with the user verified. It returns
// the passkey's approver name and the person recorded with it.
func (s Store) Verify(sig approval.Signed) (approval.Signer, error) {
	keys, err := s.List(false)
	if err != nil {
		return approval.Signer{}, err
	}
	name, err := VerifyWith(keys, sig)
	if err != nil {
		return approval.Signer{}, err
	}
	for _, k := range keys {
		if k.Name == name {
			return approval.Signer{Name: name, Person: k.Person}, nil
		}
	}
	return approval.Signer{}, fmt.Errorf("passkeys: %q verified but is not listed", name)
}

// VerifyWith is Verify against the passkeys keys (revoked ones included if
// the caller includes them: audit verify checks past signatures).
//
// A statement that has no challenge (approval.Statement.Challenge) is
// refused: nothing verifies for it.
func VerifyWith(keys []Enrolled, sig approval.Signed) (string, error) {
	challenge, err := sig.Statement.ChallengeString()
	if err != nil {
		return "", err
	}
	return VerifyChallenge(keys, challenge, sig.Assertion)
}
