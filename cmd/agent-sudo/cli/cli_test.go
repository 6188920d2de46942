package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// result is what one run of Main produced.
type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs Main with args and an environment that holds only env.
func runCLI(ctx context.Context, env map[string]string, args ...string) result {
	var stdout, stderr bytes.Buffer
	code := Main(ctx, args, strings.NewReader(""), &stdout, &stderr, func(k string) string { return env[k] })
	return result{code, stdout.String(), stderr.String()}
}

func TestHelpRunShowsEnvironmentDefaults(t *testing.T) {
	got := runCLI(context.Background(), map[string]string{envSocket: "/tmp/x.sock", envSession: "s9"}, "help", "run")
	for _, want := range []string{
		"  --socket path\n    \tpath of agent-sudod's socket (env AGENT_SUDO_SOCKET) (default \"/tmp/x.sock\")\n",
		"  --session name\n    \tsession name, shown to the approver and logged (env AGENT_SUDO_SESSION) (default \"s9\")\n",
		"  --pipefail\n    \texit with the status of the first stage that failed, not the last stage's\n",
	} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("help run:\n%s\nwant it to contain %q", got.stdout, want)
		}
	}
}

func TestVisible(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"plain text, with punctuation: ok!", "plain text, with punctuation: ok!"},
		{"naïve café 日本語 ✓ 🙂", "naïve café 日本語 ✓ 🙂"},
		{"a\nb\tc\rd", `a\x0ab\x09c\x0dd`},
		{"\x00\x01\x1f\x7f", `\x00\x01\x1f\x7f`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"bad \xff\xfe utf-8 \xe2\x82", `bad \xff\xfe utf-8 \xe2\x82`},
		{"c1 \u0085 \u009b", `c1 \u0085 \u009b`},
		{"bidi \u202eevil\u202c \u2066x\u2069 \u200f \u061c", `bidi \u202eevil\u202c \u2066x\u2069 \u200f \u061c`},
		{"zero\u200bwidth\u200d\ufeff\u2060", `zero\u200bwidth\u200d\ufeff\u2060`},
		{"line\u2028para\u2029", `line\u2028para\u2029`},
		{"private \ue000 \U000f0000", `private \ue000 \U000f0000`},
		{"tag \U000e0041", `tag \U000e0041`},
		{"replacement char \ufffd stays", "replacement char \ufffd stays"},
		{`backslash \x1b stays`, `backslash \x1b stays`},
	}
	for _, tt := range tests {
		if got := visible(tt.in); got != tt.want {
			t.Errorf("visible(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestVisibleLines: what another process writes reaches the terminal one
// line at a time, each made visible, however the writes split it; a line
// too long is written in parts, and a last line without newline at Flush.
func TestVisibleLines(t *testing.T) {
	var out bytes.Buffer
	v := &visibleLines{w: &out}
	for _, p := range []string{"ok\nan \x1b]0;ti", "tle\x07 escape\n\x9b31m", "\r\n", strings.Repeat("x", maxVisibleLine+10), "\n\nlast"} {
		if n, err := v.Write([]byte(p)); err != nil || n != len(p) {
			t.Fatalf("Write(%q) = %d, %v", p, n, err)
		}
	}
	if err := v.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "ok\nan \\x1b]0;title\\x07 escape\n\\x9b31m\\x0d\n" + strings.Repeat("x", maxVisibleLine) + "\n" + strings.Repeat("x", 10) + "\n\nlast\n"
	if out.String() != want {
		t.Errorf("relayed %q,\nwant %q", out.String(), want)
	}
}
