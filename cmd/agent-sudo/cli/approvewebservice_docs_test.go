package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/web"
)

// TestWebServiceAsDocumented: what docs/approving.md ("The web approver as
// a service") says of the settings file and the unit holds. Its bullet
// "The settings." names every key approve web serve takes, and the unit's
// one writable path (ReadWritePaths=) is the directory the certificate is
// generated in by default, which the package's tmpfiles.d creates: a
// tls_dir default moved without the unit would leave the sandboxed service
// unable to write its certificate.
func TestWebServiceAsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/approving.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "### The web approver as a service\n")
	if !ok {
		t.Fatal(`docs/approving.md has no section "The web approver as a service"`)
	}
	_, bullet, ok := strings.Cut(section, "- **The settings.**")
	if !ok {
		t.Fatal(`docs/approving.md, "The web approver as a service": no bullet "The settings."`)
	}
	bullet, _, _ = strings.Cut(bullet, "\n- ")
	for _, k := range webSettingsKeys {
		if !strings.Contains(bullet, "`"+k+"`") {
			t.Errorf(`docs/approving.md, "The web approver as a service", "The settings.": the key %s is not named`, k)
		}
	}
	for _, f := range []struct{ path, want string }{
		{"../../../packaging/systemd/agent-sudo-web.service", "\nReadWritePaths=-" + web.DefaultTLSDir + "\n"},
		{"../../../packaging/tmpfiles.d/agent-sudo.conf", "d " + web.DefaultTLSDir + " 0700 root root"},
	} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), f.want) {
			t.Errorf("%s has no %q: the default tls_dir is %s", f.path, strings.TrimSpace(f.want), web.DefaultTLSDir)
		}
	}
}
