package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	cfg "github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

func TestMain(m *testing.M) { daemontest.Main(m) }

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
		".PP\n.TS\nallbox tab(@);\nlb lb\nl lx.\nT{\n.na\na\nT}@T{\n.na\nb\nT}\nT{\n.na\n\\fBk\\fR\nT}@T{\n.na\nv\nT}\n.TE\n" +
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
	// The binaries of the end-to-end tests (make race builds them once
	// for every package): their help is what the pages are made from.
	daemonBin, cliBin := daemontest.Binaries(t)
	out := t.TempDir()
	if err := run([]string{"-agent-sudo", cliBin, "-agent-sudod", daemonBin,
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

	helpOut, err := exec.Command(cliBin, "help").Output()
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
	// Each command: a subsection in DESCRIPTION, and in OPTIONS and EXIT
	// STATUS each of its flags and exit statuses, as its help lists them.
	_, afterOptions, _ := strings.Cut(client, "\n.SH OPTIONS\n")
	options, exits, _ := strings.Cut(afterOptions, "\n.SH EXIT STATUS\n")
	for _, c := range cmds {
		name := strings.Join(c, " ")
		help, err := exec.Command(cliBin, append([]string{"help"}, c...)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(client, "\n.SS agent-sudo "+name+"\n") {
			t.Errorf("agent-sudo.1 has no subsection for %q", name)
		}
		d := parseHelp(string(help))
		if len(d.exits) == 0 {
			t.Errorf("agent-sudo help %s: no exit statuses parsed:\n%s", name, help)
		}
		for _, f := range d.flags {
			flag, _, _ := strings.Cut(f.term, " ")
			if !strings.Contains(sectionOf(options, "agent-sudo "+name), `\fB`+strings.ReplaceAll(flag, "-", `\-`)+`\fR`) {
				t.Errorf("agent-sudo.1's OPTIONS lack %s of %q", flag, name)
			}
		}
		for _, e := range d.exits {
			if e.term == "" {
				continue // text after the list
			}
			if !strings.Contains(sectionOf(exits, "agent-sudo "+name), ".TP\n\\fB"+e.term+"\\fR\n") {
				t.Errorf("agent-sudo.1's EXIT STATUS lacks %s of %q", e.term, name)
			}
		}
	}
	// The examples run commands agent-sudo has.
	for _, e := range clientExamples {
		for l := range strings.SplitSeq(e.cmd, "\n") {
			words := strings.Fields(strings.TrimPrefix(l, "sudo "))
			if len(words) < 2 || words[0] != "agent-sudo" || !slices.ContainsFunc(cmds, func(c []string) bool { return c[0] == words[1] }) {
				t.Errorf("example %q does not run an agent-sudo command", l)
			}
		}
	}
	for _, want := range []string{".TH AGENT-SUDO 1 \"2026-01-02\" \"agent-sudo 1.2.3\"", `\fB\-\-unprivileged\fR`, "\n.SS agent-sudo approve\n", "keys at a request:"} {
		if !strings.Contains(client, want) {
			t.Errorf("agent-sudo.1 does not contain %q", want)
		}
	}
	for _, want := range []string{".TH AGENT-SUDOD 8", `\fB\-\-check\-config\fR`, `\fB\-\-config\fR \fIFILE\fR`, "\n.SH SIGNALS\n", "SIGHUP", ".TP\n\\fB2\\fR\n"} {
		if !strings.Contains(daemon, want) {
			t.Errorf("agent-sudod.8 does not contain %q", want)
		}
	}
	// The sections every man page has, in this order (man-pages(7)).
	for name, page := range map[string]string{"agent-sudo.1": client, "agent-sudod.8": daemon, "agent-sudo.toml.5": config} {
		var got []string
		for _, m := range regexp.MustCompile(`(?m)^\.SH (.*)$`).FindAllStringSubmatch(page, -1) {
			got = append(got, m[1])
		}
		want := []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "FILES", "EXIT STATUS", "EXAMPLES", "SEE ALSO"}
		i := 0
		for _, g := range got {
			if i < len(want) && g == want[i] {
				i++
			}
		}
		if i < len(want) {
			t.Errorf("%s: sections %q; want %q in this order (others may come between)", name, got, want)
		}
	}
	// The configuration example loads.
	if _, err := cfg.Parse([]byte(configExample)); err != nil {
		t.Errorf("agent-sudo.toml.5's example does not load: %v", err)
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

// sectionOf returns the subsection of part titled title: from its .SS line
// to the next .SS or .SH.
func sectionOf(part, title string) string {
	_, rest, ok := strings.Cut("\n"+part, "\n.SS "+title+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n.S"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// TestParseHelp: a help text is split into its usage lines, its text (with
// a line ending in a colon kept in it), its flags, its exit statuses (with
// continuation lines, and the text after the list) and its other sections.
func TestParseHelp(t *testing.T) {
	help := `usage: x run [flags] CMD
       x run --other

Text of the
command, which goes on:

    x run example

keys here:
  a    does a
  b c  does b,
       and more

flags:
  --cwd directory
    	working directory
  --json
    	print JSON

signals:
  SIGHUP  reload

exit status:
  0    ok
  2    usage error:
       a bad flag
These may collide.
`
	d := parseHelp(help)
	if want := []string{"x run [flags] CMD", "x run --other"}; !slices.Equal(d.usage, want) {
		t.Errorf("usage %q, want %q", d.usage, want)
	}
	if !strings.HasPrefix(d.text, "Text of the\ncommand, which goes on:\n\n    x run example\n\nkeys here:") || !strings.HasSuffix(d.text, "and more") {
		t.Errorf("text %q", d.text)
	}
	if want := []item{{"--cwd directory", "working directory"}, {"--json", "print JSON"}}; !slices.Equal(d.flags, want) {
		t.Errorf("flags %q, want %q", d.flags, want)
	}
	if want := []item{{"0", "ok"}, {"2", "usage error: a bad flag"}, {"", "These may collide."}}; !slices.Equal(d.exits, want) {
		t.Errorf("exits %q, want %q", d.exits, want)
	}
	if len(d.other) != 1 || d.other[0].title != "signals" || !slices.Equal(d.other[0].items, []item{{"SIGHUP", "reload"}}) {
		t.Errorf("other sections %+v", d.other)
	}
	roff := textRoff(d.text)
	for _, want := range []string{".PP\nText of the\ncommand, which goes on:\n", ".RS 4\n.nf\nx run example\n.fi\n.RE\n",
		".PP\nkeys here:\n.PD 0\n.TP\n\\fBa\\fR\ndoes a\n.TP\n\\fBb c\\fR\ndoes b, and more\n.PD\n"} {
		if !strings.Contains(roff, want) {
			t.Errorf("textRoff lacks %q:\n%s", want, roff)
		}
	}
	if got, want := itemsRoff(d.flags, true), ".TP\n\\fB\\-\\-cwd\\fR \\fIdirectory\\fR\nworking directory\n"; !strings.HasPrefix(got, want) {
		t.Errorf("flags roff %q, want it to start %q", got, want)
	}
}
