package config

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/agent-sudo/agent-sudo/internal/rules"
)

// TestExampleUsesEveryKey keeps the packaged example complete: every key the
// loader knows must appear in it, so that it documents them all.
func TestExampleUsesEveryKey(t *testing.T) {
	data, err := os.ReadFile("../../packaging/config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if _, err := toml.Decode(string(data), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range topKeys() {
		if _, ok := doc[k]; !ok {
			t.Errorf("packaging/config.example.toml does not set %q", k)
		}
	}
	seen := map[string]bool{}
	rs, _ := doc["rule"].([]map[string]any)
	for _, r := range rs {
		for k := range r {
			seen[k] = true
		}
	}
	for _, k := range ruleKeys() {
		if !seen[k] {
			t.Errorf("no [[rule]] in packaging/config.example.toml uses %q", k)
		}
	}
}

// TestEveryFieldHasKey checks the tags the known keys are read from: every
// field of Config and rules.Rule has a toml tag (the decoder would otherwise
// match a key to the field's Go name), and no key is used twice.
func TestEveryFieldHasKey(t *testing.T) {
	for _, rt := range []reflect.Type{reflect.TypeFor[Config](), reflect.TypeFor[rules.Rule]()} {
		seen := map[string]string{}
		for f := range rt.Fields() {
			k, ok := f.Tag.Lookup("toml")
			if !ok || k == "" {
				t.Errorf("%s.%s has no toml tag; give it its key, or \"-\" if the file does not set it", rt, f.Name)
				continue
			}
			if prev, dup := seen[k]; dup && k != "-" {
				t.Errorf("%s.%s and %s.%s both have the key %q", rt, prev, rt, f.Name, k)
			}
			seen[k] = f.Name
		}
	}
	if got := topKeys(); !slices.Contains(got, "socket") || !slices.Contains(got, "rule") || slices.Contains(got, "-") {
		t.Errorf("topKeys() = %q, want the file's keys, socket and rule among them", got)
	}
	if got := ruleKeys(); !slices.Contains(got, "uid") || slices.Contains(got, "-") {
		t.Errorf("ruleKeys() = %q, want the keys of a [[rule]], uid among them", got)
	}
}

// TestDocsListEveryKey keeps docs/config.md complete: every key has a row in
// the table of keys, and every key of a [[rule]] is in the annotated
// example of the rules section.
func TestDocsListEveryKey(t *testing.T) {
	data, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, k := range topKeys() {
		row := "| `" + k + "` |"
		if k == "rule" {
			row = "| `[[rule]]` |"
		}
		if !strings.Contains(doc, "\n"+row) {
			t.Errorf("docs/config.md has no row %q in its table of keys", row)
		}
	}
	_, rulesSection, _ := strings.Cut(doc, "\n## Rules\n")
	_, example, _ := strings.Cut(rulesSection, "```toml\n[[rule]]\n")
	example, _, _ = strings.Cut(example, "```")
	for _, k := range ruleKeys() {
		if !regexp.MustCompile(`(?m)^(# )?` + k + ` = `).MatchString(example) {
			t.Errorf("the [[rule]] example in docs/config.md's Rules section does not show %q", k)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"socket", "soket", 1},
		{"exec", "excec", 1}, {"kitten", "sitting", 3}, {"abc", "abc", 0},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
