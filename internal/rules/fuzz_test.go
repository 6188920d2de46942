package rules_test

import (
	"path"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/internal/rules"
)

// FuzzAllowArgument checks, for hostile arguments, what an allow rule's
// wildcard may cover (issue 10, H3): whatever such a rule allows stays
// within what its pattern describes.
func FuzzAllowArgument(f *testing.F) {
	for _, s := range []string{"/var/log/x", "/var/log/../../etc/shadow", "/var/log//x", "--file=/var/log/../x",
		"../x.conf", "a.conf", "-x.conf", "..", "/var/log/x\n", "build/../../x", "/a/access.log", "x/../access.log"} {
		f.Add(s)
	}
	type check struct {
		pattern string
		ok      func(arg string) bool
	}
	below := func(dir, p string) bool { return path.Clean(p) == p && strings.HasPrefix(p, dir) && p != dir }
	checks := []check{
		{"/var/log/*", func(a string) bool { return below("/var/log/", a) }},
		{"--file=/var/log/*", func(a string) bool { return strings.HasPrefix(a, "--file=") && below("/var/log/", a[len("--file="):]) }},
		{"build/*", func(a string) bool { return below("build/", a) }},
		{"*/access.log", func(a string) bool { return path.IsAbs(a) && path.Clean(a) == a }},
		{"*.conf", func(a string) bool {
			return !strings.Contains(a, "/") && !strings.HasPrefix(a, "-") && a != "." && a != ".."
		}},
		{"--dir=*", func(a string) bool {
			v := a[len("--dir="):]
			return !strings.Contains(v, "/") && v != "." && v != ".."
		}},
	}
	engines := make([]*rules.Engine, len(checks))
	for i, c := range checks {
		e, err := rules.New([]rules.Rule{{Name: "r", Action: rules.Allow, Match: []string{"cat", c.pattern}}}, []string{"/usr/bin"}, nil)
		if err != nil {
			f.Fatal(err)
		}
		engines[i] = e
	}
	f.Fuzz(func(t *testing.T, arg string) {
		for i, c := range checks {
			d := engines[i].Decide(rules.Query{Stages: []rules.Stage{{Program: "/usr/bin/cat", Args: []string{arg}}}})
			if d.Action != rules.Allow {
				continue
			}
			if !utf8.ValidString(arg) || strings.IndexFunc(arg, unicode.IsControl) >= 0 || !c.ok(arg) {
				t.Fatalf("allow cat %q allowed cat %q", c.pattern, arg)
			}
		}
	})
}
