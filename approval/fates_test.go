package approval_test

import (
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/prototest"
)

// TestShownCarriesTheRequest checks that Shown, what a human sees of a
// waiting request, says what it does with every field of proto.Request
// (prototest.CheckFates): a field added to the request is shown, and so
// hashed into what a decision is made on, or kept from the human on
// purpose.
func TestShownCarriesTheRequest(t *testing.T) {
	prototest.CheckFates(t, approval.Shown{}, map[string]prototest.Fate{
		"ID": prototest.As("ID"), "Session": prototest.As("Session"), "Host": prototest.As("Host"),
		"Time": prototest.As("Time"), "Pipeline": prototest.As("Pipeline"), "Env": prototest.As("Env"),
		"Reason": prototest.As("Reason"), "Privileged": prototest.As("Privileged"),
		"ForwardAgent": prototest.As("ForwardAgent"),
		"Cwd":          prototest.As("Cwd"), // resolved; CwdChain has it as requested
		"Stdin":        prototest.As("Stdin"),
		"Action":       prototest.Left("only execute requests wait for a human"),
		"Progress":     prototest.Left("how the answer travels to the agent, not what runs"),
		"NonInteractive": prototest.Left("a request shown waits for a human as any other; " +
			"one no approver could answer is denied without being shown"),
	})
}
