package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/hint"
)

// TestSayPrintsHints: an error that carries advice is printed as a short
// line, then the advice on a line of its own, as age prints errorWithHint;
// both escaped.
func TestSayPrintsHints(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []any
		want string
	}{
		{"plain error", []any{fmt.Errorf("no such file")}, "agent-sudo: run: no such file\n"},
		{"one hint", []any{hint.Wrap(fmt.Errorf("stdin is an idle pipe"), "pass --no-stdin")},
			"agent-sudo: run: stdin is an idle pipe\nagent-sudo: hint: pass --no-stdin\n"},
		{"wrapped twice", []any{fmt.Errorf("read: %w", hint.Wrap(hint.New("too big", "copy a file"), "or pass --no-stdin"))},
			"agent-sudo: run: read: too big\nagent-sudo: hint: or pass --no-stdin\nagent-sudo: hint: copy a file\n"},
		{"hint escaped", []any{hint.New("bad", "run \x1b[2Jthis")},
			"agent-sudo: run: bad\nagent-sudo: hint: run \\x1b[2Jthis\n"},
		{"a string is not an error", []any{"text"}, "agent-sudo: run: text\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr strings.Builder
			inv := &invocation{stderr: &stderr}
			inv.say("run: %v", tc.args...)
			if got := stderr.String(); got != tc.want {
				t.Errorf("said %q, want %q", got, tc.want)
			}
		})
	}
}
