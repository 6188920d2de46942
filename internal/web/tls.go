package web

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/hint"
)

// DefaultTLSDir is where the web approver keeps the certificate it
// generates: cert.pem, and key.pem readable by root only.
const DefaultTLSDir = "/etc/agent-sudo/web"

// LoadOrCreateCert returns the certificate in dir (cert.pem and key.pem),
// first generating a self-signed one for host when there is none, and its
// SHA-256 fingerprint as a phone's browser shows it (colon-separated hex).
//
// dir must be this process's user's (root's) and writable by nobody else
// (checkTLSDir), and is used through one open descriptor (os.Root) from
// the check on: the owner of a directory named by --tls-dir (an agent's
// directory in /tmp) could otherwise leave key.pem as a symbolic link for
// root to write its new key through, over any file, or swap the files
// between the check and the read.
func LoadOrCreateCert(dir, host string) (tls.Certificate, string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, "", fmt.Errorf("TLS certificate: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("TLS certificate: %w", err)
	}
	defer root.Close()
	if err := checkTLSDir(root, dir); err != nil {
		return tls.Certificate{}, "", err
	}
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if _, err := root.Lstat("cert.pem"); errors.Is(err, fs.ErrNotExist) {
		if err := createCert(root, dir, host); err != nil {
			return tls.Certificate{}, "", err
		}
	}
	certPEM, err := root.ReadFile("cert.pem")
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("TLS certificate: %w", err)
	}
	kf, err := root.OpenFile("key.pem", os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("TLS key: %w", err)
	}
	defer kf.Close()
	keyPEM, err := readKey(kf, keyPath)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	return keyPair(certPEM, keyPEM, certPath, keyPath)
}

// checkTLSDir refuses the TLS directory open as root (named dir) unless
// it is a directory of this process's effective user that neither group
// nor others may write.
func checkTLSDir(root *os.Root, dir string) error {
	fi, err := root.Stat(".")
	if err != nil {
		return fmt.Errorf("TLS directory %s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("TLS directory %s: not a directory", dir)
	case !ok || int(st.Uid) != os.Geteuid():
		return hint.Wrap(fmt.Errorf("TLS directory %s: owned by uid %d, not by this process's user (uid %d)", dir, st.Uid, os.Geteuid()),
			"its owner could have root write the key where they like, or swap the certificate; use a directory of root's (the default "+DefaultTLSDir+")")
	case fi.Mode().Perm()&0o022 != 0:
		return hint.Wrap(fmt.Errorf("TLS directory %s: group or others may write it (mode %04o)", dir, fi.Mode().Perm()),
			"they could have root write the key where they like, or swap the certificate; chmod 700 it")
	}
	return nil
}

// LoadCert loads a certificate and its key, and returns the certificate's
// fingerprint. The key must be a regular file of this process's user
// (root) that neither group nor others may read or write (ReadKey): a
// local user who could read it could serve the page as the web approver.
func LoadCert(certPath, keyPath string) (tls.Certificate, string, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("TLS certificate: %w", err)
	}
	keyPEM, err := ReadKey(keyPath)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	return keyPair(certPEM, keyPEM, certPath, keyPath)
}

// keyPair parses the certificate and key read from certPath and keyPath
// and returns the certificate's fingerprint.
func keyPair(certPEM, keyPEM []byte, certPath, keyPath string) (tls.Certificate, string, error) {
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, "", fmt.Errorf("TLS certificate %s with key %s: %w", certPath, keyPath, err)
	}
	return c, Fingerprint(c.Certificate[0]), nil
}

// ReadKey reads the private key file at path, refusing one that is not a
// regular file owned by this process's effective user, or that group or
// others may read or write: the mode and owner are those of the file read
// (fstat on the open descriptor), not of a name that may change between
// a check and the read.
func ReadKey(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("TLS key: %w", err)
	}
	defer f.Close()
	return readKey(f, path)
}

// readKey is ReadKey's check and read of f, the key file opened at path.
func readKey(f *os.File, path string) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("TLS key: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("TLS key %s: not a regular file", path)
	case !ok || int(st.Uid) != os.Geteuid():
		return nil, fmt.Errorf("TLS key %s: owned by uid %d, not by this process's user (uid %d): chown it, then chmod 600 it", path, st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o077 != 0:
		return nil, hint.Wrap(fmt.Errorf("TLS key %s: group or others may read or write it (mode %04o)", path, fi.Mode().Perm()),
			"any local user who reads it can serve a page as the web approver; chmod 600 it, and make a new key if others could read it")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("TLS key %s: %w", path, err)
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("TLS key %s: longer than %d bytes", path, maxKeyFile)
	}
	return b, nil
}

// maxKeyFile bounds a TLS key file.
const maxKeyFile = 1 << 20

// Fingerprint is the SHA-256 of a DER certificate in colon-separated
// upper-case hex.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(parts, ":")
}

// createCert generates a key and a self-signed certificate for host in
// root (the checked directory dir), creating key.pem (mode 0600) and
// cert.pem anew, through no symbolic link.
func createCert(root *os.Root, dir, host string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: host},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	// A key.pem left without its cert.pem (a start stopped between the
	// two) is replaced: the directory is root's alone (checkTLSDir).
	if err := root.Remove("key.pem"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	if err := writeNew(root, "key.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return fmt.Errorf("TLS certificate: %s: %w", dir, err)
	}
	if err := writeNew(root, "cert.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return fmt.Errorf("TLS certificate: %s: %w", dir, err)
	}
	return nil
}

// writeNew creates the file name in root, which must not exist yet (not
// even as a symbolic link), with mode and data.
func writeNew(root *os.Root, name string, data []byte, mode os.FileMode) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
