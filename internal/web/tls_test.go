package web_test

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/web"
)

// TestLoadOrCreateCert: the first start generates a certificate for the
// host with a key only its owner can read; the next start loads the same
// one (the fingerprint shown at enrolment stays true).
func TestLoadOrCreateCert(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "web")
	c1, fp1, err := web.LoadOrCreateCert(dir, "box.example")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(c1.Certificate[0])
	if err != nil || leaf.VerifyHostname("box.example") != nil {
		t.Fatalf("certificate %v for box.example: %v", leaf, err)
	}
	fi, err := os.Stat(filepath.Join(dir, "key.pem"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key.pem: %v %v, want mode 0600", fi.Mode(), err)
	}
	_, fp2, err := web.LoadOrCreateCert(dir, "box.example")
	if err != nil || fp2 != fp1 || len(strings.Split(fp1, ":")) != 32 {
		t.Fatalf("second load: %q %v, want the same fingerprint %q (32 bytes)", fp2, err, fp1)
	}
}

// TestLoadCertRefusesAnOpenKey: a --tls-key that group or others may
// read or write, that another user owns, or that is not a regular file
// (a symbolic link, a directory) is refused, saying why; mode 0600 of
// this process's user is taken.
func TestLoadCertRefusesAnOpenKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "web")
	if _, _, err := web.LoadOrCreateCert(dir, "box.example"); err != nil {
		t.Fatal(err)
	}
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	link := filepath.Join(dir, "link.pem")
	if err := os.Symlink(key, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mode os.FileMode
		key  string
		uid  int // -1: leave it
		err  string
	}{
		{"root's, 0600", 0o600, key, -1, ""},
		{"root's, 0400", 0o400, key, -1, ""},
		{"0644", 0o644, key, -1, "group or others may read or write it (mode 0644)"},
		{"0640", 0o640, key, -1, "group or others may read or write it (mode 0640)"},
		{"0602", 0o602, key, -1, "group or others may read or write it (mode 0602)"},
		{"another user's", 0o600, key, 65534, "owned by uid 65534, not by this process's user"},
		{"a symbolic link", 0o600, link, -1, "TLS key: open " + link},
		{"a directory", 0o600, dir, -1, "not a regular file"},
	} {
		if err := os.Chmod(key, tc.mode); err != nil {
			t.Fatal(err)
		}
		if tc.uid >= 0 {
			if os.Geteuid() != 0 {
				continue // only root can give the file away
			}
			if err := os.Chown(key, tc.uid, -1); err != nil {
				t.Fatal(err)
			}
		}
		_, _, err := web.LoadCert(cert, tc.key)
		if tc.uid >= 0 {
			if cerr := os.Chown(key, os.Geteuid(), -1); cerr != nil {
				t.Fatal(cerr)
			}
		}
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v, want it taken", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.err)
		}
	}
}

// TestLoadOrCreateCertRefusesADirOthersControl: a --tls-dir that another
// user owns, or that group or others may write (an agent's directory in
// /tmp, made before root's first start), is refused before anything is
// written in it: root would otherwise write its new key through a
// symbolic link the directory's owner left there, over any file of the
// system, and load a key and certificate whose names that owner can
// change. Nothing the link points at is touched.
func TestLoadOrCreateCertRefusesADirOthersControl(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give a directory to another user")
	}
	for _, tc := range []struct {
		name string
		uid  int
		mode os.FileMode
		err  string
	}{
		{"another user's", 65534, 0o755, "owned by uid 65534"},
		{"writable by others", 0, 0o777, "group or others may write it (mode 0777)"},
		{"writable by its group", 0, 0o770, "group or others may write it (mode 0770)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			victim := filepath.Join(base, "victim")
			if err := os.WriteFile(victim, []byte("root's file\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(base, "web")
			if err := os.Mkdir(dir, tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tc.mode); err != nil {
				t.Fatal(err)
			}
			// What the directory's owner leaves: key.pem pointing at
			// root's file, no cert.pem (so that a certificate is made).
			if err := os.Symlink(victim, filepath.Join(dir, "key.pem")); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, tc.uid, tc.uid); err != nil {
				t.Fatal(err)
			}
			_, _, err := web.LoadOrCreateCert(dir, "box.example")
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("LoadOrCreateCert: %v, want an error with %q", err, tc.err)
			}
			if b, rerr := os.ReadFile(victim); rerr != nil || string(b) != "root's file\n" {
				t.Errorf("the file key.pem pointed at now holds %q (%v): root wrote through the link", b, rerr)
			}
			if _, serr := os.Lstat(filepath.Join(dir, "cert.pem")); serr == nil {
				t.Errorf("cert.pem was written in a directory others control")
			}
		})
	}
}
