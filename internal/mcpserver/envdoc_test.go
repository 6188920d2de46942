package mcpserver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestEnvDescriptionFollowsTheDaemon: the env argument's description lists
// the daemon's built-in allowlist, which is written once, in package runner,
// and the daemon's limit on the number of variables.
func TestEnvDescriptionFollowsTheDaemon(t *testing.T) {
	for _, want := range []string{
		"by default " + strings.Join(runner.DefaultAllowlist(), ", ") + ")",
		fmt.Sprintf("at most %d variables", proto.MaxEnvVars),
	} {
		if !strings.Contains(inputSchema, want) {
			t.Errorf("the input schema does not say %q", want)
		}
	}
}
