package mcpserver

import (
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/prototest"
)

// TestArgsCarryTheRequest checks that the execute tool's arguments say
// what they do with every field of proto.Request (prototest.CheckFates):
// a field added to the request is offered to the model, or kept from it
// on purpose.
func TestArgsCarryTheRequest(t *testing.T) {
	prototest.CheckFates(t, executeArgs{}, map[string]prototest.Fate{
		"Pipeline": prototest.As("Pipeline"), "Reason": prototest.As("Reason"), "Env": prototest.As("Env"),
		"Privileged": prototest.As("Privileged"), "ForwardAgent": prototest.As("ForwardAgent"),
		"Cwd": prototest.As("Cwd"), "Stdin": prototest.As("Stdin"),
		"ID":             prototest.Left("the server makes one per call"),
		"Host":           prototest.Left("the server's configuration (Config.Host), not the model's to choose"),
		"Session":        prototest.Left("the server's configuration (Config.Session), not the model's to choose"),
		"Time":           prototest.Left("the client stamps it when it sends the request"),
		"Action":         prototest.Left("the tool only executes"),
		"Progress":       prototest.Left("the client asks for progress lines, which the server relays as MCP progress notifications"),
		"NonInteractive": prototest.Left("a model's call waits for a human like any agent's; the MCP client bounds the wait"),
	})
}
