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

func TestMainUsage(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string // a line the output must contain; "" means no output
		wantStderr string // exact
	}{
		{"no command", nil, 2, "", "agent-sudo: no command given; run 'agent-sudo help' for usage\n"},
		{"unknown command", []string{"sudo"}, 2, "", "agent-sudo: unknown command \"sudo\"; run 'agent-sudo help' for the list of commands\n"},
		{"unknown command is escaped", []string{"x\x1b[2J"}, 2, "", "agent-sudo: unknown command \"x\\x1b[2J\"; run 'agent-sudo help' for the list of commands\n"},
		{"help", []string{"help"}, 0, "usage: agent-sudo <command> [arguments]\n", ""},
		{"--help", []string{"--help"}, 0, "  run      ask agent-sudod to run a command or a pipeline\n", ""},
		{"-h", []string{"-h"}, 0, "  help     show help for agent-sudo or one of its commands\n", ""},
		{"help run", []string{"help", "run"}, 0, "usage: agent-sudo run [flags] [--] CMD [ARG...] ['|' CMD [ARG...]]...\n", ""},
		{"help help", []string{"help", "help"}, 0, "usage: agent-sudo help [COMMAND [SUBCOMMAND...]]\n", ""},
		{"help approve web", []string{"help", "approve", "web"}, 0, "       sudo agent-sudo approve web list [--passkeys DIR]\n", ""},
		{"help approve web enroll", []string{"help", "approve", "web", "enroll"}, 0, "usage: sudo agent-sudo approve web enroll NAME", ""},
		{"help approve web list", []string{"help", "approve", "web", "list"}, 0, "sudo agent-sudo approve web list [--passkeys DIR]\n", ""},
		{"help approve web revoke", []string{"help", "approve", "web", "revoke"}, 0, "sudo agent-sudo approve web revoke NAME [--passkeys DIR]\n", ""},
		{"help approve web nope", []string{"help", "approve", "web", "nope"}, 2, "", "agent-sudo: help: approve web has no subcommand \"nope\"; see 'agent-sudo help approve web'\n"},
		{"help approve web list x", []string{"help", "approve", "web", "list", "x"}, 2, "", "agent-sudo: help: approve web list has no subcommands; see 'agent-sudo help approve web list'\n"},
		{"--help lists approve web", []string{"--help"}, 0, "  approve  as root, approve or deny the requests waiting for a human\n    web      manage the passkeys of the web approver (approve --web)\n      enroll   enrol a passkey", ""},
		{"--help lists approve web revoke", []string{"--help"}, 0, "\n      revoke   remove the passkey of an approver NAME\n  audit    ", ""},
		{"help audit show", []string{"help", "audit", "show"}, 0, "usage: agent-sudo audit show [flags] ID\n", ""},
		{"help audit nope", []string{"help", "audit", "nope"}, 2, "", "agent-sudo: help: audit has no subcommand \"nope\"; see 'agent-sudo help audit'\n"},
		{"help run x", []string{"help", "run", "x"}, 2, "", "agent-sudo: help: run has no subcommands; see 'agent-sudo help run'\n"},
		{"help unknown", []string{"help", "nope"}, 2, "", "agent-sudo: help: unknown command \"nope\"; run 'agent-sudo help' for the list of commands\n"},
		{"help too many", []string{"help", "audit", "show", "x"}, 2, "", "agent-sudo: help: audit show has no subcommands; see 'agent-sudo help audit show'\n"},
		{"run -h", []string{"run", "-h"}, 0, "  --socket path\n", ""},
		{"version", []string{"version"}, 0, "agent-sudo devel\n", ""},
		{"--version", []string{"--version"}, 0, "agent-sudo devel\n", ""},
		{"version extra", []string{"version", "x"}, 2, "", "agent-sudo: version: unexpected argument \"x\"; see 'agent-sudo help version'\n"},
		{"help version", []string{"help", "version"}, 0, "usage: agent-sudo version\n", ""},
		{"run --help", []string{"run", "--help"}, 0, "  77     the request was denied, or your user may not use agent-sudod\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(context.Background(), nil, tt.args...)
			if got.code != tt.wantCode {
				t.Errorf("Main(%q) = %d, want %d", tt.args, got.code, tt.wantCode)
			}
			if got.stderr != tt.wantStderr {
				t.Errorf("Main(%q) stderr:\n got %q\nwant %q", tt.args, got.stderr, tt.wantStderr)
			}
			if tt.wantStdout == "" && got.stdout != "" || !strings.Contains(got.stdout, tt.wantStdout) {
				t.Errorf("Main(%q) stdout:\n%s\nwant it to contain %q", tt.args, got.stdout, tt.wantStdout)
			}
		})
	}
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
