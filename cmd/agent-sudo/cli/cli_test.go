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
