package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// TestMCPStrictArguments sends tool arguments over raw JSON-RPC to the real
// "agent-sudo mcp" and the real daemon: repeated keys, keys in another case
// and unknown keys are refused before anything is sent (before the fix, the
// last "argv" ran and "ARGV" ran); and the stdin argument reaches the
// command.
func TestMCPStrictArguments(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	_, bin := daemontest.Binaries(t)
	d := daemontest.Start(t, daemontest.Config{Rules: daemontest.AllowAll})
	m := startStdioMCP(t, bin, "--socket", d.Socket, "--session", "raw")
	m.Initialize()
	marker := filepath.Join(d.Dir, "ran")

	refused := []struct{ name, args, want string }{
		{"argv twice", `{"argv":["echo","shown"],"argv":["touch","` + marker + `"],"reason":"r"}`, `invalid arguments: "argv" appears more than once; give each argument once`},
		{"reason twice", `{"argv":["touch","` + marker + `"],"reason":"a","reason":"b"}`, `invalid arguments: "reason" appears more than once`},
		{"ARGV", `{"ARGV":["touch","` + marker + `"],"reason":"r"}`, `invalid arguments: unknown field "ARGV" (names are case-sensitive: did you mean "argv"?)`},
		{"Reason", `{"argv":["touch","` + marker + `"],"Reason":"r"}`, `invalid arguments: unknown field "Reason" (names are case-sensitive: did you mean "reason"?)`},
		{"unknown", `{"argv":["touch","` + marker + `"],"reason":"r","shell":true}`, `invalid arguments: unknown field "shell"; the execute tool takes argv or pipeline`},
		{"env twice", `{"argv":["touch","` + marker + `"],"reason":"r","env":{"LANG":"C","LANG":"C.UTF-8"}}`, `invalid arguments: env: "LANG" appears more than once`},
		{"stdin not text", `{"argv":["tee","` + marker + `"],"reason":"r","stdin":["x"]}`, `in stdin, expected a string but got a JSON array`},
	}
	for _, tt := range refused {
		text, isError := m.Execute(tt.args)
		if !isError || !strings.Contains(text, tt.want) || !strings.Contains(text, "Nothing was sent") {
			t.Errorf("%s: result (isError %v):\n%s\nwant an error containing %q", tt.name, isError, text, tt.want)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a refused call ran")
	}

	text, isError := m.Execute(`{"argv":["tee","` + marker + `"],"reason":"write a file","stdin":"line one\nline two\n"}`)
	if isError || !strings.Contains(text, "status: ok") {
		t.Fatalf("stdin call: isError %v\n%s", isError, text)
	}
	if b, err := os.ReadFile(marker); err != nil || string(b) != "line one\nline two\n" {
		t.Fatalf("the file holds %q (%v)", b, err)
	}
}
