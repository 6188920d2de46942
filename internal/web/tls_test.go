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
