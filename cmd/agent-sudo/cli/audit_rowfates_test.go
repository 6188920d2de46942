package cli

import (
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/prototest"
)

// TestJSONRowCarriesTheRequest checks that audit --json's row says what it
// does with every field of proto.Request (prototest.CheckFates): a field
// added to the request is printed in the row or left to audit show on
// purpose.
func TestJSONRowCarriesTheRequest(t *testing.T) {
	show := "one row per request: audit show prints it, from the request record"
	prototest.CheckFates(t, rowJSON{}, map[string]prototest.Fate{
		"ID": prototest.As("ID"), "Session": prototest.As("Session"), "Host": prototest.As("Host"),
		"Pipeline": prototest.As("Pipeline"), "Reason": prototest.As("Reason"), "Privileged": prototest.As("Privileged"),
		"Time":         prototest.Left("the row's time is when the daemon received the request; " + show),
		"Env":          prototest.Left(show),
		"ForwardAgent": prototest.Left(show),
		"Cwd":          prototest.Left(show),
		"Stdin":        prototest.Left(show),
		"Action":       prototest.Left("only execute requests are recorded"),
		"Progress":     prototest.Left("how the answer travelled, which the record does not keep"),
		"NonInteractive": prototest.Left("the record does not keep it; the decided_by of a request denied for it " +
			"says so (approval.ByNoApprover)"),
	})
}
