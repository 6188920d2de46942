package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/runner"
)

// TestEnvAllowDeniedEntryRefusedAtLoad is issue 9's regression test:
// env_allow = ["PYTHONPATH"] used to pass validation and then make the
// daemon refuse every request. Every entry of the one deny list, and every
// glob that covers one, now stops the configuration from loading, and the
// error names the entry.
func TestEnvAllowDeniedEntryRefusedAtLoad(t *testing.T) {
	entries := []string{"PYTHONPATH", "TMPDIR", "L*", "PYTHON*", "GIT_AUTHOR_*"}
	for _, d := range runner.DenyList() {
		entries = append(entries, d.Pattern, strings.ToLower(d.Pattern))
		if name, glob := strings.CutSuffix(d.Pattern, "*"); glob {
			entries = append(entries, name+"X")
		}
	}
	for _, e := range entries {
		content := fmt.Sprintf("env_allow = [\"LC_*\", %q]\n", e)
		_, err := config.Parse([]byte(content))
		want := fmt.Sprintf("env_allow[1]: %q", e)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): %v, want an error containing %s", content, err, want)
		}
	}
}

// TestValidConfigHasValidEnvPolicy: whatever env_allow a configuration
// loads with, the daemon can build its environment policy from it, so a
// daemon that starts never refuses every request because of env_allow.
func TestValidConfigHasValidEnvPolicy(t *testing.T) {
	for _, allow := range [][]string{nil, {"LC_*"}, {"http_proxy", "HTTPS_PROXY"}, {"MYAPP_*", "GIT_AUTHOR_NAME", "LANGUAGE"}} {
		c := config.Default()
		c.EnvAllow = allow
		if err := c.Validate(); err != nil {
			t.Fatalf("Validate(env_allow %q): %v", allow, err)
		}
		p, err := c.EnvPolicy()
		if err != nil {
			t.Fatalf("EnvPolicy(env_allow %q): %v", allow, err)
		}
		if _, err := p.BuildEnv(runner.Target{Name: "root", Home: "/root"}, nil, ""); err != nil {
			t.Errorf("env_allow %q: a request without env is refused: %v", allow, err)
		}
	}
}
