package daemon

import (
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/notify"
	"github.com/agent-sudo/agent-sudo/internal/prototest"
)

// TestNotifyValuesCarryTheRequest checks that the notifiers' values
// (notifyValues: the request's Shown and its warnings) say what they do with every
// field of proto.Request (prototest.CheckFates): a notification names the
// request and brings the human to an approver, which shows the rest.
func TestNotifyValuesCarryTheRequest(t *testing.T) {
	approver := "an approver shows it: a notification names the request and brings the human there"
	prototest.CheckFates(t, notify.Values{}, map[string]prototest.Fate{
		"ID": prototest.As("Request.ID"), "Session": prototest.As("Request.Session"), "Host": prototest.As("Request.Host"),
		"Reason": prototest.As("Request.Reason"), "Pipeline": prototest.As("Request.Pipeline"),
		"Privileged":   prototest.As("Request.RunAs"), // root, or the requester
		"ForwardAgent": prototest.As("Warnings"),      // "SSH agent forwarded"
		"Stdin":        prototest.As("Warnings"),      // "with stdin"
		"Time":         prototest.Left("a notification is sent as the request starts waiting; " + approver),
		"Env":          prototest.Left("its values can be secrets, and a notification may leave the machine; " + approver),
		"Cwd":          prototest.Left(approver + " (a directory non-root can write is in {warnings})"),
		"Action":       prototest.Left("only execute requests wait for a human"),
		"Progress":     prototest.Left("how the answer travels to the agent"),
		"NonInteractive": prototest.Left("a request that waits for a human waits as any other; " +
			"one no approver could answer is denied without a notification"),
	})
}
