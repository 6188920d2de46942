package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/config"
)

// TestLintNotRootOnly (issue 21): in direct mode, an allow rule whose
// program someone other than root can change (the daemon flags it NOT
// ROOT-ONLY) is warned about at load, naming the rule, the program and
// what others can write; a root-only program, a deny or ask rule, and sudo
// mode (which refuses such programs at request time) are not.
func TestLintNotRootOnly(t *testing.T) {
	// A directory others can write (0777 and, when the test is not root,
	// not root's either), with a program in it, and a program others can
	// write in a directory of root's when the test runs as root.
	dir, err := os.MkdirTemp("", "notrootonly")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	inOpen := filepath.Join(open, "deploy")
	if err := os.WriteFile(inOpen, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, exec, action, match string
		want                      string // in the one warning; "" for none
	}{
		{"a program in a directory others can write", "direct", "allow", inOpen, open},
		{"a program pattern whose directory others can write", "direct", "allow", open + "/*", open},
		{"the same program in exec = \"sudo\"", "sudo", "allow", inOpen, ""},
		{"an ask rule for it", "direct", "ask", inOpen, ""},
		{"a deny rule for it", "direct", "deny", inOpen, ""},
		{"a root-only program", "direct", "allow", "/usr/bin/true", ""},
		{"a root-only program by name", "direct", "allow", "true", ""},
		{"a program that does not exist", "direct", "allow", filepath.Join(dir, "absent"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Parse([]byte(fmt.Sprintf("exec = %q\n[[rule]]\nname = \"r\"\naction = %q\nmatch = [%q]\n", tt.exec, tt.action, tt.match)))
			if err != nil {
				t.Fatal(err)
			}
			var found []string
			for _, w := range c.Lint() {
				if strings.Contains(w.Message, "NOT ROOT-ONLY") {
					found = append(found, w.String())
				}
			}
			switch {
			case tt.want == "" && len(found) != 0:
				t.Errorf("unexpected warning: %q", found)
			case tt.want != "" && len(found) != 1:
				t.Errorf("%d NOT ROOT-ONLY warnings, want 1: %q", len(found), found)
			case tt.want != "" && !(strings.HasPrefix(found[0], `rule 1 ("r"): the program "`+tt.match+`" is NOT ROOT-ONLY: `) && strings.Contains(found[0], tt.want)):
				t.Errorf("warning %q; want it to name rule 1, the program and %s", found[0], tt.want)
			}
		})
	}
}
