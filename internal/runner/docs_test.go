package runner

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update", false, "rewrite the generated environment-policy block of docs/config.md")

const (
	docsPath       = "../../docs/config.md"
	docsBlockBegin = "<!-- BEGIN environment policy: generated from internal/runner/env*.go; to change it, edit the code and run go test ./internal/runner -run TestDocsEnvPolicy -update -->\n"
	docsBlockEnd   = "<!-- END environment policy -->\n"
)

// envPolicyMarkdown renders the built-in allowlist, the value grammars and
// the deny list, for docs/config.md.
func envPolicyMarkdown() string {
	var b strings.Builder
	b.WriteString("The built-in allowlist: requests may set these without any `env_allow`.\n\n")
	b.WriteString("| variable | accepted values |\n| --- | --- |\n")
	for _, e := range builtinAllow() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", e.pattern, e.grammar.accepts)
	}
	b.WriteString("\nValues of variables added with `env_allow`:\n\n")
	b.WriteString("| variable | accepted values |\n| --- | --- |\n")
	for _, n := range namedGrammars() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", strings.Join(n.names, "`, `"), n.grammar.accepts)
	}
	fmt.Fprintf(&b, "| any other | %s |\n", wordGrammar().accepts)
	b.WriteString("\nThe deny list: refused in every request and in `env_allow`, whatever the\n")
	b.WriteString("configuration says. Names are compared without regard to case; `*` ends a prefix.\n")
	fmt.Fprintf(&b, "Only `%s` are exempt from `GIT_*`, and only by full name.\n\n", strings.Join(denyExceptions(), "`, `"))
	b.WriteString("| variable | why |\n| --- | --- |\n")
	for _, d := range DenyList() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", d.Pattern, d.Reason)
	}
	return b.String()
}

// TestDocsEnvPolicy checks that docs/config.md lists exactly the code's
// built-in allowlist, value grammars and deny list (issue 9: the allowlist
// had five copies that could drift). With -update it rewrites the block.
func TestDocsEnvPolicy(t *testing.T) {
	data, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, docsBlockBegin)
	end := strings.Index(doc, docsBlockEnd)
	if start < 0 || end < start {
		t.Fatalf("%s has no generated environment-policy block (%q ... %q)", docsPath, docsBlockBegin, docsBlockEnd)
	}
	got := doc[start+len(docsBlockBegin) : end]
	want := envPolicyMarkdown()
	if got == want {
		return
	}
	if *updateDocs {
		doc = doc[:start+len(docsBlockBegin)] + want + doc[end:]
		if err := os.WriteFile(docsPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the environment policy in %s differs from the code; run go test ./internal/runner -run TestDocsEnvPolicy -update\n--- docs\n%s\n--- code\n%s", docsPath, got, want)
}
