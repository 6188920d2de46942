package rules_test

import (
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/rules"
)

// TestApprovals: an ask rule with approvals = 2 makes a request it asks
// for need two people, also when another stage is asked for by a plain
// rule; a request that no such rule asks for needs one. approvals on an
// allow or deny rule, or above 2, is refused.
func TestApprovals(t *testing.T) {
	two := ask("two", "dd", "**")
	two.Approvals = 2
	e, err := rules.New([]rules.Rule{two, ask("sh", "sh", "**"), allow("cat", "cat", "**")}, trusted, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		query rules.Query
		want  int
	}{
		{q(st("/bin/dd", "if=/dev/zero")), 2},
		{q(st("/bin/sh", "-c", "x"), st("/bin/dd")), 2},
		{q(st("/bin/sh", "-c", "x")), 1},
		{q(st("/usr/bin/curl")), 1},
		{q(st("/bin/cat")), 0},
	} {
		d := e.Decide(tt.query)
		if d.Approvals != tt.want {
			t.Errorf("Decide(%s).Approvals = %d, want %d", describe(tt.query), d.Approvals, tt.want)
		}
		if tt.want == 2 && !strings.Contains(d.Reason, "2 different people must allow it") {
			t.Errorf("Decide(%s).Reason = %q, want it to say two people must allow it", describe(tt.query), d.Reason)
		}
	}
	for _, r := range []rules.Rule{allow("a", "ls"), deny("d", "rm", "**"), two} {
		r.Approvals = 2
		if r.Action != rules.Ask {
			if _, err := rules.New([]rules.Rule{r}, trusted, nil); err == nil || !strings.Contains(err.Error(), "only meaningful on an ask rule") {
				t.Errorf("approvals = 2 on a %s rule: %v, want refused", r.Action, err)
			}
		}
	}
	two.Approvals = 3
	if _, err := rules.New([]rules.Rule{two}, trusted, nil); err == nil {
		t.Error("approvals = 3 was accepted")
	}
}
