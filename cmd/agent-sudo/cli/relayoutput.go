package cli

import (
	"errors"

	"github.com/agent-sudo/agent-sudo/internal/web"
)

// approveWebRelayOutput is "approve web relay-output UID GID", started by
// the web approver as root (web.RelayTerminalOutput): web.RelayOutput.
func approveWebRelayOutput(inv *invocation, args []string) int {
	err := web.RelayOutput(args, inv.stdout, inv.stderr, func(err error) {
		inv.say("approve web relay-output: %v", err)
	})
	switch {
	case err == nil:
		return 0
	case errors.Is(err, web.ErrNotByHand):
		return inv.fail(exitUsage, "approve web relay-output: %v", err)
	}
	return inv.fail(exitSoftware, "approve web relay-output: %v", err)
}
