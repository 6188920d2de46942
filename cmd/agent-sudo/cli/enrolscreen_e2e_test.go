package cli

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
	"github.com/agent-sudo/agent-sudo/internal/tmuxtest"
	"github.com/agent-sudo/agent-sudo/internal/web"
)

// TestE2EEnrolFitsAn80x24Terminal: approve web enroll, with TLS (its
// fingerprint lines) on a real 80x24 terminal, leaves on the screen, once
// it has printed everything, the whole QR code, the link and its deadline
// (issue 33: the QR code pushed the link and its deadline off the screen).
func TestE2EEnrolFitsAn80x24Terminal(t *testing.T) {
	testenv.NeedsRoot(t)
	_, cli := daemontest.Binaries(t)
	testenv.WebUser(t)
	port := testenv.FreePrivilegedPort(t)
	dir := t.TempDir()
	s := tmuxtest.Start(t, tmuxtest.Config{Cols: 80, Rows: 24, Command: fmt.Sprintf("%s approve web enroll alice --web localhost:%s --passkeys %s --tls-dir %s",
		cli, port, filepath.Join(dir, "passkeys"), filepath.Join(dir, "tls"))})
	origin := "https://localhost:" + port
	link := regexp.MustCompile(`(?m)^  (` + regexp.QuoteMeta(origin) + `/enroll/[A-Za-z0-9_-]+)$`)
	screen := s.Wait(func(screen string) bool { return link.MatchString(screen) }, "show the link")
	deadline := regexp.MustCompile(`(?m)^Open this link on the phone within 5 minutes \(until [0-9]{2}:[0-9]{2}:[0-9]{2}\), once:$`)
	if !deadline.MatchString(screen) {
		t.Errorf("the screen does not show the link's deadline:\n%s", screen)
	}
	qr, err := web.QRText(link.FindStringSubmatch(screen)[1])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(screen, qr) {
		t.Errorf("the screen does not show the whole QR code of the link:\n%s\nwant:\n%s", screen, qr)
	}
	if !strings.Contains(s.Run("capture-pane", "-p", "-S", "-", "-t", s.Name), "The page's TLS certificate has the SHA-256 fingerprint") {
		t.Errorf("enroll did not print the TLS certificate's fingerprint")
	}
}
