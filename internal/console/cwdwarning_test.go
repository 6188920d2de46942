package console

import (
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/agent-sudo/agent-sudo/approval"
)

// TestCwdWarningOneLine: a working directory someone other than root can
// write (a home directory, on nearly every request through the shim) is
// flagged NOT ROOT-ONLY on one line of an 80-column console, saying what
// it means and why; the path is repeated only when it is not the working
// directory shown above it, and is escaped then.
func TestCwdWarningOneLine(t *testing.T) {
	for _, tt := range []struct {
		name string
		cwd  string
		w    approval.Writable
		want string
	}{
		{"home directory", "/home/alice", approval.Writable{Path: "/home/alice", Why: "the directory is owned by uid 1000"},
			"⚠ NOT ROOT-ONLY: non-root can change it (owned by uid 1000)"},
		{"group-writable", "/srv/shared", approval.Writable{Path: "/srv/shared", Why: "the directory is writable by group 50"},
			"⚠ NOT ROOT-ONLY: non-root can change it (writable by group 50)"},
		{"everyone", "/srv/drop", approval.Writable{Path: "/srv/drop", Why: "the directory is writable by everyone"},
			"⚠ NOT ROOT-ONLY: non-root can change it (writable by everyone)"},
		{"another path, escaped", "/srv/x", approval.Writable{Path: "/srv/\x1b[2Jy", Why: "the directory is owned by uid 1000"},
			""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, "")
			h.update(tea.WindowSizeMsg{Width: 80, Height: 40})
			s := shown("r1")
			s.Cwd, s.CwdWritable = tt.cwd, []approval.Writable{tt.w}
			h.pending(s)
			screen := h.view() // fails on a raw control character
			lines := strings.Split(screen, "\n")
			i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "NOT ROOT-ONLY") })
			if i < 1 || !strings.HasPrefix(lines[i-1], "cwd ") {
				t.Fatalf("no NOT ROOT-ONLY line right under the cwd line:\n%s", screen)
			}
			if tt.w.Path != tt.cwd {
				// A path of its own makes the line longer: what matters
				// is that it is there, escaped.
				if !strings.Contains(screen, `$'/srv/\x1b[2Jy'`) {
					t.Errorf("the warning does not name the escaped path:\n%s", screen)
				}
				return
			}
			if got, want := strings.TrimRight(lines[i], " "), strings.Repeat(" ", labelWidth)+tt.want; got != want {
				t.Errorf("warning line\n%q\nwant\n%q\n%s", got, want, screen)
			}
		})
	}
}
