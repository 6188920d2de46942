package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/proto"
)

// denyAll is an approver that denies every request it is asked about.
var denyAll = askFunc(func(context.Context, *approval.Pending) (approval.Decision, error) {
	return approval.Decision{Verdict: approval.Deny, By: "tester", Message: "denied by tester"}, nil
})

// TestReloadAppliesNewRule: a request that a human was asked about (and
// denied) is allowed by a rule that a reload added, without a restart.
func TestReloadAppliesNewRule(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverSetup{opts: Options{Approver: denyAll}})
	if resp := ts.send(request(nil)); resp.Status != proto.StatusDenied {
		t.Fatalf("before the reload: %s %q, want denied by the human", resp.Status, resp.Message)
	}
	restart, err := ts.srv.Reload(ts.config(allowTrue))
	if err != nil || len(restart) > 0 {
		t.Fatalf("Reload = %v, %v; want no error and no key needing a restart", restart, err)
	}
	if resp := ts.send(request(nil)); resp.Status != proto.StatusOK {
		t.Fatalf("after the reload: %s %q, want allowed by the new rule", resp.Status, resp.Message)
	}
	if n := len(ts.ran()); n != 1 {
		t.Errorf("%d pipelines ran, want 1 (the one after the reload)", n)
	}
}

// TestReloadRemovesUser: a user removed from allowed_users by a reload is
// refused from then on.
func TestReloadRemovesUser(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverSetup{toml: allowTrue})
	if resp := ts.send(request(nil)); resp.Status != proto.StatusOK {
		t.Fatalf("before the reload: %s %q, want ok", resp.Status, resp.Message)
	}
	other := os.Getuid() + 1
	if _, err := ts.srv.Reload(ts.config(fmt.Sprintf("allowed_users = [\"%d\"]\n", other) + allowTrue)); err != nil {
		t.Fatal(err)
	}
	resp := ts.send(request(nil))
	if resp.Status != proto.StatusError || !strings.Contains(resp.Message, "not allowed") {
		t.Errorf("after the reload: %s %q, want refused as not allowed", resp.Status, resp.Message)
	}
	if n := len(ts.ran()); n != 1 {
		t.Errorf("%d pipelines ran, want 1", n)
	}
}

// TestReloadInvalidKeepsOld: a new configuration that fails to load (a
// syntax error) or that --check-config refuses (an unknown user) is refused
// with the error logged and in the status line; the configuration in force
// stays, wholly: its rules and its access lists.
func TestReloadInvalidKeepsOld(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverSetup{opts: Options{Approver: denyAll}, toml: allowTrue})
	log := slog.New(slog.NewTextHandler(ts.logs, nil))
	broker := newBroker(time.Hour, nil)
	st := &status{socket: ts.socket}
	bad := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(bad, []byte("approval_timeout = \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		name, want string
		load       func() (*config.Config, error)
	}{
		{"syntax error", bad, func() (*config.Config, error) { return config.Load(bad, true) }},
		{"unknown user", `err="allowed_users[1]: user \"no-such-user-agent-sudo\"`, func() (*config.Config, error) {
			// Rules gone and a new user: none of it may apply.
			return ts.config(`allowed_users = ["0", "no-such-user-agent-sudo"]`), nil
		}},
	} {
		onHangup(t.Context(), log, nil, ts.srv, broker, c.load, st)
		logs := ts.logs.String()
		if !strings.Contains(logs, "reload refused") || !strings.Contains(logs, c.want) {
			t.Errorf("%s: the log does not say the reload was refused and why (%q):\n%s", c.name, c.want, logs)
		}
		if text := st.text(ts.srv.Rules()); !strings.Contains(text, fmt.Sprintf("; reload %d failed at ", i+1)) || !strings.Contains(text, "1 rules") ||
			!strings.HasSuffix(text, "; running with the configuration read at start-up") {
			t.Errorf("%s: status %q, want the failed reload and the old rule", c.name, text)
		}
		if resp := ts.send(request(nil)); resp.Status != proto.StatusOK {
			t.Errorf("%s: after the refused reload: %s %q, want allowed by the old rule", c.name, resp.Status, resp.Message)
		}
	}
}

// TestReloadKeepsGrants: a session grant made before a reload still
// applies after it: the broker, and its grants, outlive the reload.
func TestReloadKeepsGrants(t *testing.T) {
	t.Parallel()
	broker := newBroker(time.Hour, nil)
	_, events, unsubscribe := broker.Subscribe()
	defer unsubscribe()
	ts := startServer(t, serverSetup{opts: Options{Approver: broker}})
	req := map[string]any{"session": "s1"}
	c := ts.dial(request(req))
	m := nextPending(events)
	if err := broker.Decide(m.ID, m.Hash, approval.AllowSession, "", "tester"); err != nil {
		t.Fatal(err)
	}
	if resp := ts.read(c); resp.Status != proto.StatusOK {
		t.Fatalf("granted request: %s %q", resp.Status, resp.Message)
	}
	log := slog.New(slog.NewTextHandler(ts.logs, nil))
	onHangup(t.Context(), log, nil, ts.srv, broker, func() (*config.Config, error) {
		return ts.config(`session_grant_ttl = "2h"`), nil
	}, &status{socket: ts.socket})
	if !strings.Contains(ts.logs.String(), `msg=reloaded`) {
		t.Fatalf("no reloaded line in the log:\n%s", ts.logs)
	}
	// The same request again: no console is asked (no event would
	// answer it), the grant allows it.
	resp := ts.send(request(req))
	if resp.Status != proto.StatusOK {
		t.Fatalf("after the reload: %s %q, want allowed by the session grant", resp.Status, resp.Message)
	}
	if gs, _ := broker.Grants(); len(gs) != 1 || gs[0].Expires.Sub(gs[0].Created) != time.Hour {
		t.Fatalf("grants after the reload: %+v, want the one made before, for its hour", gs)
	}
	// A grant made after the reload lasts the new session_grant_ttl.
	c = ts.dial(request(map[string]any{"session": "s2"}))
	m = nextPending(events)
	if err := broker.Decide(m.ID, m.Hash, approval.AllowSession, "", "tester"); err != nil {
		t.Fatal(err)
	}
	if resp := ts.read(c); resp.Status != proto.StatusOK {
		t.Fatalf("granted request: %s %q", resp.Status, resp.Message)
	}
	gs, _ := broker.Grants()
	if len(gs) != 2 || gs[1].Session != "s2" || gs[1].Expires.Sub(gs[1].Created) != 2*time.Hour {
		t.Errorf("grants %+v, want the new one for session s2 lasting session_grant_ttl (2h)", gs)
	}
}

// TestReloadInFlightKeepsPolicy: a request accepted before a reload is
// decided and run under the policy it started with; the next one gets the
// new policy.
func TestReloadInFlightKeepsPolicy(t *testing.T) {
	t.Parallel()
	asked, answer := make(chan struct{}), make(chan approval.Decision)
	ask := askFunc(func(ctx context.Context, _ *approval.Pending) (approval.Decision, error) {
		asked <- struct{}{}
		return <-answer, nil
	})
	ts := startServer(t, serverSetup{opts: Options{Approver: ask}, toml: `command_timeout = "7m"`})
	c := ts.dial(request(nil))
	<-asked
	if _, err := ts.srv.Reload(ts.config(`command_timeout = "3m"` + allowTrue)); err != nil {
		t.Fatal(err)
	}
	answer <- approval.Decision{Verdict: approval.Allow, By: "tester"}
	if resp := ts.read(c); resp.Status != proto.StatusOK {
		t.Fatalf("in-flight request: %s %q", resp.Status, resp.Message)
	}
	if resp := ts.send(request(nil)); resp.Status != proto.StatusOK {
		t.Fatalf("request after the reload: %s %q, want allowed by the new rule", resp.Status, resp.Message)
	}
	ran := ts.ran()
	if len(ran) != 2 || ran[0].Timeout != 7*time.Minute || ran[1].Timeout != 3*time.Minute {
		var got []time.Duration
		for _, s := range ran {
			got = append(got, s.Timeout)
		}
		t.Errorf("command timeouts %v, want [7m 3m]: the in-flight request keeps its policy", got)
	}
}

// TestReloadRestartKeys: keys that need a restart are reported and keep
// their values; the rest of the reload applies.
func TestReloadRestartKeys(t *testing.T) {
	t.Parallel()
	ts := startServer(t, serverSetup{opts: Options{Approver: denyAll}})
	next := ts.config(`
max_connections = 3
audit_env_values = true
` + allowTrue)
	next.Socket = ts.socket + ".new"
	next.Exec = runner.ModeSudo
	restart, err := ts.srv.Reload(next)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"socket", "audit_env_values", "exec", "max_connections"}; !slices.Equal(restart, want) {
		t.Errorf("keys needing a restart %q, want %q", restart, want)
	}
	cfg := ts.srv.policy().cfg
	if cfg.Socket != ts.socket || cfg.Exec != runner.ModeDirect || cfg.MaxConnections == 3 || cfg.AuditEnvValues {
		t.Errorf("a restart-only key was applied: socket %q exec %q max_connections %d audit_env_values %v",
			cfg.Socket, cfg.Exec, cfg.MaxConnections, cfg.AuditEnvValues)
	}
	if resp := ts.send(request(nil)); resp.Status != proto.StatusOK {
		t.Fatalf("after the reload: %s %q, want allowed by the new rule", resp.Status, resp.Message)
	}
	if ran := ts.ran(); len(ran) != 1 || ran[0].Mode != "direct" {
		t.Errorf("ran %+v, want one pipeline, run directly as at start", ran)
	}
}

// TestReloadKeysClassified: the packaged example names exactly the keys of
// config.Config, each either applied by a reload or needing a restart.
func TestReloadKeysClassified(t *testing.T) {
	var file map[string]any
	if _, err := toml.DecodeFile("../packaging/config.example.toml", &file); err != nil {
		t.Fatal(err)
	}
	listed := append(config.RestartKeys(), config.ReloadableKeys()...)
	for key := range file {
		if n := slices.Index(listed, key); n < 0 {
			t.Errorf("key %q is not a field of config.Config", key)
		}
	}
	slices.Sort(listed)
	if c := slices.Compact(slices.Clone(listed)); len(c) != len(listed) {
		t.Errorf("a key is listed twice: %q", listed)
	}
	for _, key := range listed {
		if _, ok := file[key]; !ok {
			t.Errorf("listed key %q is not a configuration key", key)
		}
	}
}

// TestStatusText: the status line names the socket and the rules, and, once
// reloaded, the last reload by its number, when and how it went, on one
// line; a failed one says why and which configuration is still in force
// (issue 33: after a failed reload the line still read as the previous
// one's "ok").
func TestStatusText(t *testing.T) {
	t1 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	t2, t3 := t1.Add(time.Hour), t1.Add(2*time.Hour)
	bad := errors.New("line 1:\n\tbad\x1b[31m value")
	type reload struct {
		at  time.Time
		err error
	}
	tests := []struct {
		name    string
		reloads []reload
		want    string
	}{
		{"at start", nil, "listening on /run/a.sock; 3 rules"},
		{"one reload ok", []reload{{t1, nil}}, "listening on /run/a.sock; 3 rules; reload 1 at 2026-01-02T03:04:05Z ok"},
		{"first reload failed", []reload{{t1, bad}},
			"listening on /run/a.sock; 3 rules; reload 1 failed at 2026-01-02T03:04:05Z: line 1: bad [31m value; running with the configuration read at start-up"},
		{"failed after ok", []reload{{t1, nil}, {t2, bad}},
			"listening on /run/a.sock; 3 rules; reload 2 failed at 2026-01-02T04:04:05Z: line 1: bad [31m value; running with the configuration of reload 1 (at 2026-01-02T03:04:05Z)"},
		{"two failed after ok", []reload{{t1, nil}, {t2, bad}, {t3, bad}},
			"listening on /run/a.sock; 3 rules; reload 3 failed at 2026-01-02T05:04:05Z: line 1: bad [31m value; running with the configuration of reload 1 (at 2026-01-02T03:04:05Z)"},
		{"ok after failed", []reload{{t1, bad}, {t2, nil}}, "listening on /run/a.sock; 3 rules; reload 2 at 2026-01-02T04:04:05Z ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &status{socket: "/run/a.sock"}
			for _, r := range tt.reloads {
				st.record(r.at, r.err)
			}
			if got := st.text(3); got != tt.want {
				t.Errorf("text:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
	st := &status{socket: "/run/a.sock"}
	st.record(t1, errors.New("x\n"+strings.Repeat("y", 300)))
	if got := st.text(3); strings.ContainsAny(got, "\n\t\x1b") || len(got) > 400 || !strings.HasSuffix(got, "...; running with the configuration read at start-up") {
		t.Errorf("a long error: %q, want one line, cut at %d bytes", got, maxStatusError)
	}
}

// nextPending returns the next pending message of events, skipping the
// others (resolved, grants).
func nextPending(events <-chan event) approval.Message {
	for m := range events {
		if m.Type == approval.MsgPending {
			return m.Message
		}
	}
	return approval.Message{}
}

// TestReloadDocs: docs/config.md's "Reloading" section lists exactly the
// keys a reload applies and exactly those that need a restart.
func TestReloadDocs(t *testing.T) {
	data, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	start := strings.Index(doc, "\n## Reloading\n")
	if start < 0 {
		t.Fatal(`docs/config.md has no "## Reloading" section`)
	}
	doc = doc[start+1:]
	doc = doc[:strings.Index(doc[1:], "\n## ")+1]
	// keysIn returns the keys quoted in the bullet that starts with lead.
	keysIn := func(lead string) []string {
		i := strings.Index(doc, "\n- "+lead)
		if i < 0 {
			t.Fatalf("the Reloading section has no bullet %q", lead)
		}
		item := doc[i+3:]
		if j := strings.Index(item, "\n- "); j >= 0 {
			item = item[:j]
		}
		item, _, _ = strings.Cut(item, ". ")
		var keys []string
		for j, part := range strings.Split(item, "`") {
			if j%2 == 1 && !strings.Contains(part, " ") {
				keys = append(keys, part)
			}
		}
		slices.Sort(keys)
		return keys
	}
	restart := slices.Sorted(slices.Values(config.RestartKeys()))
	reload := slices.Sorted(slices.Values(config.ReloadableKeys()))
	if got := keysIn("Applied by a reload"); !slices.Equal(got, reload) {
		t.Errorf("docs/config.md lists as applied by a reload %q, want %q", got, reload)
	}
	if got := keysIn("Need a restart"); !slices.Equal(got, restart) {
		t.Errorf("docs/config.md lists as needing a restart %q, want %q", got, restart)
	}
}
