package daemon_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/proto"
)

// TestE2ELargestConfigValues: a daemon configured with the largest value of
// every duration and count range (config.Ranges, docs/config.md "Ranges")
// starts, takes a request a human approves for the session, lets the same
// request through on that grant, and still refuses a request whose time is
// beyond max_clock_skew: the deadlines, the replay window, the grant's
// expiry and the limits computed from these values do not overflow.
func TestE2ELargestConfigValues(t *testing.T) {
	daemontest.RequireRoot(t)
	t.Parallel()
	d := daemontest.Start(t, daemontest.Config{
		Rules:           daemontest.AskRules,
		ApprovalTimeout: "24h",
		CommandTimeout:  "168h",
		ReadTimeout:     "10m",
		MaxConnections:  65536,
		Extra: `max_clock_skew = "1h"
session_grant_ttl = "168h"
first_byte_timeout = "10m"
max_connections_per_user = 65536
root_connections = 1024
max_requests_per_minute = 60000
notify_timeout = "10m"
`,
	})
	c := daemontest.Dial(t, d.ApproverSocket)
	marker := d.Dir + "/touched"
	req := func(id string, at time.Time) *proto.Request {
		return &proto.Request{ID: id, Pipeline: [][]string{{"touch", marker}}, Privileged: true, Session: "s-max", Time: at}
	}

	// 59 minutes old: inside a max_clock_skew of 1h.
	asked := d.Ask(t, req("max-1", time.Now().Add(-59*time.Minute)))
	p := c.Pending("max-1")
	c.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowSession})
	if resp := asked.Wait(); resp.Status != proto.StatusOK {
		t.Fatalf("approved request: %+v", resp)
	}
	g := c.NextOf(approval.MsgGrants)
	if len(g.Grants) != 1 {
		t.Fatalf("grants %+v, want the one just made", g)
	}
	if ttl := g.Grants[0].Expires.Sub(g.Grants[0].Created); ttl != 168*time.Hour {
		t.Errorf("grant lasts %v (created %v, expires %v), want session_grant_ttl 168h", ttl, g.Grants[0].Created, g.Grants[0].Expires)
	}
	// The grant lets the same request through without a console decision.
	if resp := d.Run(req("max-2", time.Now())); resp.Status != proto.StatusOK {
		t.Fatalf("request on the grant: %+v", resp)
	}
	// Two hours old: beyond max_clock_skew, refused.
	if resp := d.Run(req("max-3", time.Now().Add(-2*time.Hour))); resp.Status != proto.StatusError || !strings.Contains(resp.Message, "skew") {
		t.Fatalf("request two hours old: %+v, want an error about the clock skew", resp)
	}
}
