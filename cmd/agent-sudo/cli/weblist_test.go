package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// TestApproveWebListEscapes: a passkey file copied in by hand whose name
// holds an escape sequence does not reach root's terminal raw: approve web
// list refuses the directory and quotes the name (issue 31, finding 8: it
// printed it raw, since names were checked only at enrolment).
func TestApproveWebListEscapes(t *testing.T) {
	testenv.NeedsRoot(t) // approve web list runs as root only
	k, err := passkeytest.New("alice", "localhost", "https://localhost:8443")
	if err != nil {
		t.Fatal(err)
	}
	e, err := k.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	e.Name = "\x1b]0;owned\x07\x1b[2J"
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	dir := passkeytest.Dir(t)
	if err := os.WriteFile(filepath.Join(dir, e.Name+".json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	got := runCLI(context.Background(), nil, "approve", "web", "list", "--passkeys", dir)
	if got.code == 0 || strings.ContainsAny(got.stdout+got.stderr, "\x1b\x07") || !strings.Contains(got.stderr, `\x1b]0;owned\a\x1b[2J`) {
		t.Fatalf("approve web list: status %d, stdout %q, stderr %q; want it refused with the name quoted", got.code, got.stdout, got.stderr)
	}
}
