package config_test

import (
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/config"
)

// TestRefusesWhatConfigMdRefuses: each value docs/config.md refuses is
// refused, naming its key (issue 31, finding 10: each was taken): approvals
// other than 1 or 2, approvals on an allow or deny rule (1 included), a
// passkeys path that is empty, relative or not clean, and a
// web_approver_url port outside 1 to 65535; the values it takes are taken.
func TestRefusesWhatConfigMdRefuses(t *testing.T) {
	rule := func(action, extra string) string {
		return "[[rule]]\naction = \"" + action + "\"\nmatch = [\"id\"]\n" + extra
	}
	for _, tt := range []struct {
		content string
		want    string // "" when it is taken
	}{
		{rule("ask", "approvals = 0"), `rule 1: approvals = 0: it must be 1 or 2`},
		{rule("ask", "approvals = 3"), `rule 1: approvals = 3: it must be 1 or 2`},
		{rule("ask", "approvals = -1"), `rule 1: approvals = -1: it must be 1 or 2`},
		{rule("allow", "approvals = 1"), `rule 1: approvals is only meaningful on an ask rule`},
		{rule("deny", "approvals = 1"), `rule 1: approvals is only meaningful on an ask rule`},
		{rule("allow", "approvals = 2"), `rule 1: approvals is only meaningful on an ask rule`},
		{rule("ask", "approvals = 1"), ""},
		{rule("ask", "approvals = 2"), ""},
		{rule("ask", ""), ""},
		{`passkeys = ""`, `passkeys: must not be empty`},
		{`passkeys = "passkeys"`, `passkeys: "passkeys" is not an absolute path`},
		{`passkeys = "/etc/agent-sudo/passkeys/"`, `passkeys: "/etc/agent-sudo/passkeys/" is not a clean path`},
		{`passkeys = "/etc/agent-sudo/../agent-sudo/passkeys"`, `passkeys: "/etc/agent-sudo/../agent-sudo/passkeys" is not a clean path`},
		{`passkeys = "/etc/agent-sudo/keys"`, ""},
		{`web_approver_url = "https://box.example:0"`, `web_approver_url: "https://box.example:0": the port "0" is not a port number from 1 to 65535`},
		{`web_approver_url = "https://box.example:99999"`, `web_approver_url: "https://box.example:99999": the port "99999" is not a port number`},
		{`web_approver_url = "https://box.example:"`, `web_approver_url: "https://box.example:": the port "" is not a port number`},
		{`web_approver_url = "https://box.example:08443"`, `web_approver_url: "https://box.example:08443": the port "08443" is not a port number`},
		{`web_approver_url = "https://box.example:65535"`, ""},
		{`web_approver_url = "https://[::1]:8443"`, ""},
		{`web_approver_url = "https://box.example"`, ""},
	} {
		_, err := config.Parse([]byte(tt.content))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v, want it taken", tt.content, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want an error with %q", tt.content, err, tt.want)
		}
	}
}
