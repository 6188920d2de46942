package rules

import (
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/prototest"
)

// TestQueryCarriesTheRequest checks that what the rules decide on says
// what it does with every field of proto.Request (prototest.CheckFates): a
// field added to the request becomes something a rule can match, or is
// said to be out of the rules' reach.
func TestQueryCarriesTheRequest(t *testing.T) {
	noKey := "no rule key matches it (docs/config.md lists them)"
	prototest.CheckFates(t, Query{}, map[string]prototest.Fate{
		"Pipeline":     prototest.As("Stages"),
		"Privileged":   prototest.As("Privileged"),
		"Session":      prototest.As("Session"),
		"Env":          prototest.As("Env"), // the names only
		"ForwardAgent": prototest.As("ForwardAgent"),
		"Stdin":        prototest.As("Stdin"), // whether there is one
		"Cwd":          prototest.Left(noKey + ": a rule decides wherever the command runs"),
		"Host":         prototest.Left(noKey + ": the agent's claim"),
		"Reason":       prototest.Left(noKey + ": the agent's words, for a human"),
		"ID":           prototest.Left("each request has its own"),
		"Time":         prototest.Left("checked against replay before any rule"),
		"Action":       prototest.Left("only execute requests are decided"),
		"Progress":     prototest.Left("how the answer travels, not what runs"),
		"NonInteractive": prototest.Left("it matters only once no rule has decided: " +
			"whether the daemon waits for a human"),
	})
}
