package audit

import (
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/prototest"
)

// requestFates is what a request record does with each field of
// proto.Request, relative to the record's request section.
func requestFates(section string) map[string]prototest.Fate {
	return map[string]prototest.Fate{
		"ID": prototest.As("ID"), "Session": prototest.As("Session"), "Host": prototest.As("Host"),
		"Time":         prototest.As(section + ".RequestTime"),
		"Pipeline":     prototest.As(section + ".Pipeline"),
		"Env":          prototest.As(section + ".Env"),
		"Reason":       prototest.As(section + ".Reason"),
		"Privileged":   prototest.As(section + ".Privileged"),
		"ForwardAgent": prototest.As(section + ".ForwardAgent"),
		"Cwd":          prototest.As(section + ".Cwd"),
		"Stdin":        prototest.As(section + ".StdinSHA256"),
		"Action":       prototest.Left("only execute requests are recorded: a ping is answered without a record"),
		"Progress":     prototest.Left("how the answer travels (progress lines before it), not what was asked"),
		"NonInteractive": prototest.Left("it decides only whether the daemon waits for a human; a request denied for it " +
			"has a decision record by approval.ByNoApprover"),
	}
}

// TestRecordCarriesTheRequest checks that the request record says what it
// does with every field of proto.Request (prototest.CheckFates), and the
// summary, which holds the record's request section, likewise.
func TestRecordCarriesTheRequest(t *testing.T) {
	prototest.CheckFates(t, Record{}, requestFates("Request"))
	prototest.CheckFates(t, Summary{}, requestFates("Request"))
}
