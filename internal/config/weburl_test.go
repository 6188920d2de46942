package config_test

import (
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/config"
)

// TestWebApproverURL: web_approver_url takes a scheme and a host (and
// port), and refuses anything that could carry more than the address: a
// path, a query, a user, another scheme.
func TestWebApproverURL(t *testing.T) {
	for _, tt := range []struct {
		v  string
		ok bool
	}{
		{"https://box.example:8443", true},
		{"http://localhost:8443", true},
		{"https://box.example/", true},
		{"https://box.example/approve", false},
		{"https://box.example/?token=secret", false},
		{"https://user:pw@box.example", false},
		{"javascript:alert(1)", false},
		{"box.example:8443", false},
	} {
		c := config.Default()
		c.WebApproverURL = tt.v
		err := c.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("web_approver_url = %q: %v, want ok %v", tt.v, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "web_approver_url") {
			t.Errorf("web_approver_url = %q: the error %q does not name the key", tt.v, err)
		}
	}
}
