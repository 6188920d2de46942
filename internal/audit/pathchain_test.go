package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// TestOpenRefusesAgentOwnedPath (issue 21): an audit_log reached through a
// symbolic link another user owns, or through a directory another user
// can write, is refused with a message naming the link or directory, as
// every other path the daemon trusts is; the same path through root's own
// link opens. Before, only the last directory (followed through any link)
// was checked.
func TestOpenRefusesAgentOwnedPath(t *testing.T) {
	testenv.NeedsRoot(t)
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	const agent = 54321
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns audit_log
		want  string                                // in the error; "" opens
	}{
		{"a link the agent owns above the log's directory", func(t *testing.T, dir string) string {
			link := filepath.Join(dir, "agentlink")
			if err := os.Symlink(base, link); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(link, agent, agent); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(link, "real", "audit.jsonl")
		}, "agentlink is owned by uid 54321"},
		{"the log's directory is a link the agent owns", func(t *testing.T, dir string) string {
			link := filepath.Join(dir, "logdir")
			if err := os.Symlink(real, link); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(link, agent, agent); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(link, "audit.jsonl")
		}, "logdir is owned by uid 54321"},
		{"a directory the agent owns above the log's", func(t *testing.T, dir string) string {
			mine := filepath.Join(dir, "agentdir")
			if err := os.Mkdir(mine, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(mine, agent, agent); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(mine, "log"), 0o700); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(mine, "log", "audit.jsonl")
		}, "agentdir is owned by uid 54321"},
		{"root's own link", func(t *testing.T, dir string) string {
			link := filepath.Join(dir, "rootlink")
			if err := os.Symlink(real, link); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(link, "audit.jsonl")
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(base, strings.ReplaceAll(tt.name, " ", "-"))
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := tt.setup(t, dir)
			l, err := Open(path, Options{})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Open(%s): %v", path, err)
			case tt.want == "":
				_ = l.Close()
			case err == nil:
				_ = l.Close()
				t.Fatalf("Open(%s) through %s succeeded; want an error naming it", path, tt.name)
			case !strings.Contains(err.Error(), tt.want):
				t.Fatalf("Open(%s): %v; want it to say %q", path, err, tt.want)
			}
		})
	}
}
