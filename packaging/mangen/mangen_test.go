package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{`a\b`, `a\eb`},
		{".TH injected", `\&.TH injected`},
		{"x\n'br", "x\n\\&'br"},
		{"x → y", `x \[u2192] y`},
	}
	for _, tt := range tests {
		if got := escape(tt.in); got != tt.want {
			t.Errorf("escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestInline(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a `**code**` b", `a \fB**code**\fR b`},
		{"**bold** and *em*", `\fBbold\fR and \fIem\fR`},
		{"see [Keys](#keys) and [Go](https://go.dev)", "see Keys and Go <https://go.dev>"},
		{"`a\\b`", `\fBa\eb\fR`},
		{"PREFIX* names", "PREFIX* names"},
		{"line\n.starts with a dot", "line\n\\&.starts with a dot"},
	}
	for _, tt := range tests {
		if got := inline(tt.in); got != tt.want {
			t.Errorf("inline(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMarkdown(t *testing.T) {
	md := "# Title\n\nIntro\nline.\n\n## Keys\n\n- one\n  - nested\n- two\n\n```toml\n.x = 1\n```\n\n| a | b |\n| --- | --- |\n| `k` | v |\n\n<!-- hidden\ncomment -->\n### Sub\ntext\n"
	want := ".PP\nIntro\nline.\n" +
		".SH KEYS\n.IP \\(bu 4\none\n.RS\n.IP \\(bu 4\nnested\n.RE\n.IP \\(bu 4\ntwo\n" +
		".PP\n.RS 4\n.nf\n\\&.x = 1\n.fi\n.RE\n" +
		".PP\n.TS\nallbox tab(@);\nlb lb\nl lx.\nT{\na\nT}@T{\nb\nT}\nT{\n\\fBk\\fR\nT}@T{\nv\nT}\n.TE\n" +
		".SS Sub\n.PP\ntext\n"
	if got := markdown(md); got != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", got, want)
	}
}

// TestHeadingEscapes: a section heading is upper-cased before it is
// rendered, so that its roff escapes keep their case (\fB, not \FB, which
// groff reads as a font family; \[u00C9], not \[U00C9]).
func TestHeadingEscapes(t *testing.T) {
	got := markdown("## The `a\\b` key é\n")
	want := ".SH THE \\fBA\\eB\\fR KEY \\[u00C9]\n"
	if got != want {
		t.Errorf("markdown heading = %q, want %q", got, want)
	}
}

// TestPages builds both binaries, generates the three pages, and checks
// that they carry the help and the configuration reference they are made
// from, and that groff reads them without a warning.
func TestPages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "../../cmd/agent-sudo", "../../cmd/agent-sudod")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out := t.TempDir()
	if err := run([]string{"-agent-sudo", filepath.Join(bin, "agent-sudo"), "-agent-sudod", filepath.Join(bin, "agent-sudod"),
		"-config-doc", "../../docs/config.md", "-version", "1.2.3", "-date", "2026-01-02", "-out", out}); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	client, daemon, config := read("agent-sudo.1"), read("agent-sudod.8"), read("agent-sudo.toml.5")

	helpOut, err := exec.Command(filepath.Join(bin, "agent-sudo"), "help").Output()
	if err != nil {
		t.Fatal(err)
	}
	// Commands at two spaces, subcommands at four under their command.
	var cmds [][]string
	for _, m := range regexp.MustCompile(`(?m)^(  |    )([a-z-]+) `).FindAllStringSubmatch(string(helpOut), -1) {
		if m[1] == "  " {
			cmds = append(cmds, []string{m[2]})
		} else if len(cmds) > 0 {
			cmds = append(cmds, []string{cmds[len(cmds)-1][0], m[2]})
		}
	}
	if len(cmds) < 8 {
		t.Fatalf("agent-sudo help lists %d commands and subcommands: %v", len(cmds), cmds)
	}
	for _, c := range cmds {
		name := strings.Join(c, " ")
		help, err := exec.Command(filepath.Join(bin, "agent-sudo"), append([]string{"help"}, c...)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(client, "\n.SS "+name+"\n"+preformatted(string(help))) {
			t.Errorf("agent-sudo.1 does not carry the help of %q as agent-sudo help %s prints it", name, name)
		}
	}
	for _, want := range []string{".TH AGENT-SUDO 1 \"2026-01-02\" \"agent-sudo 1.2.3\"", "--unprivileged", "exit status:"} {
		if !strings.Contains(client, want) {
			t.Errorf("agent-sudo.1 does not contain %q", want)
		}
	}
	for _, want := range []string{".TH AGENT-SUDOD 8", "--check-config", "--config FILE", "exit status:", "SIGHUP"} {
		if !strings.Contains(daemon, want) {
			t.Errorf("agent-sudod.8 does not contain %q", want)
		}
	}

	// Every configuration key, as the example (which uses every key, see
	// internal/config's TestExampleUsesEveryKey) spells it.
	var example struct {
		Rule []map[string]any `toml:"rule"`
	}
	var top map[string]any
	data, err := os.ReadFile("../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := toml.Decode(string(data), &top); err != nil {
		t.Fatal(err)
	}
	if _, err := toml.Decode(string(data), &example); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for k := range top {
		keys[k] = true
	}
	for _, r := range example.Rule {
		for k := range r {
			keys[k] = true
		}
	}
	for k := range keys {
		if k == "rule" {
			continue
		}
		if !strings.Contains(strings.ReplaceAll(config, `\:`, ""), `\fB`+k+`\fR`) {
			t.Errorf("agent-sudo.toml.5 does not mention the key %q", k)
		}
	}
	if !strings.HasPrefix(config, `'\" t`) {
		t.Error("agent-sudo.toml.5 has tables but no tbl preprocessor line")
	}

	if _, err := exec.LookPath("groff"); err != nil {
		t.Skip("groff is not installed; the pages were not checked for warnings")
	}
	for _, name := range []string{"agent-sudo.1", "agent-sudod.8", "agent-sudo.toml.5"} {
		// -ww: every warning, including a word too long for a table
		// cell at 80 columns (lintian's groff-message).
		cmd := exec.Command("groff", "-t", "-man", "-Tutf8", "-ww", "-z", filepath.Join(out, name))
		if msg, err := cmd.CombinedOutput(); err != nil || len(msg) > 0 {
			t.Errorf("groff %s: %v\n%s", name, err, msg)
		}
	}
}
