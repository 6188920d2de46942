package daemon_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// TestE2EPingAnswerShape sends ping as a sudo-proxy 1.1 client serialises
// it (every field of its Request, "pipeline": [], "action": "ping",
// "version") and as a minimal client does (no pipeline), and checks the
// exact answer line docs/protocol.md gives: one JSON object on one line
// with id (echoed), status "ok", message "pong" (what a sudo-proxy 1.1
// daemon answers), version and access in that order, and nothing else (no
// stages, no stdout), where version is the daemon's and access says who
// may use it.
func TestE2EPingAnswerShape(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{})
	now := time.Now().UTC().Format("2006-01-02T15:04:05Z")
	requests := map[string]string{
		"sp-ping-1": `{"id":"sp-ping-1","host":"","session":"sudo-proxy-mcp","time":"` + now + `","pipeline":[],"env":{},"reason":"","privileged":true,"forward_agent":false,"action":"ping","version":"1.1.0"}`,
		"sp-ping-2": `{"id":"sp-ping-2","time":"` + now + `","action":"ping"}`,
	}
	for id, line := range requests {
		got := d.Send(line)
		var resp struct {
			Version string `json:"version"`
		}
		if err := json.Unmarshal([]byte(got), &resp); err != nil || resp.Version == "" {
			t.Fatalf("%s: answer %q: %v", id, got, err)
		}
		v := resp.Version
		want := `{"id":"` + id + `","status":"ok","message":"pong","version":"` + v + `","access":"user root (uid 0) may use it: ` +
			`root is allowed when neither allowed_users nor allowed_groups is set"}`
		if strings.TrimSuffix(got, "\n") != want {
			t.Errorf("%s: answer\n %q\nwant\n %q", id, got, want)
		}
		if strings.Count(got, "\n") > 1 || strings.ContainsAny(v, "\"\\\x00") {
			t.Errorf("%s: answer %q is not one line, or has an odd version", id, got)
		}
	}
}
