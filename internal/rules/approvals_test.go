package rules_test

import (
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/rules"
)

// TestApprovals: an ask rule with approvals = 2 makes a request it asks
// for need two people, also when another stage is asked for by a plain
// rule; a request that no such rule asks for needs one. approvals on an
// allow or deny rule (1 included), or other than 1 or 2, is refused (issue
// 31, finding 10: approvals = 0, and 1 on an allow or deny rule, were
// taken).
func TestApprovals(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	two := ask("two", "dd", "**")
	two.Approvals = n(2)
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
	for _, v := range []int64{1, 2} {
		for _, r := range []rules.Rule{allow("a", "ls"), deny("d", "rm", "**")} {
			r.Approvals = n(v)
			if _, err := rules.New([]rules.Rule{r}, trusted, nil); err == nil || !strings.Contains(err.Error(), "only meaningful on an ask rule") {
				t.Errorf("approvals = %d on a %s rule: %v, want refused", v, r.Action, err)
			}
		}
	}
	one := ask("one", "dd", "**")
	one.Approvals = n(1)
	if _, err := rules.New([]rules.Rule{one}, trusted, nil); err != nil {
		t.Errorf("approvals = 1 on an ask rule: %v", err)
	}
	for _, v := range []int64{0, -1, 3} {
		two.Approvals = n(v)
		if _, err := rules.New([]rules.Rule{two}, trusted, nil); err == nil || !strings.Contains(err.Error(), "it must be 1 or 2") {
			t.Errorf("approvals = %d: %v, want refused", v, err)
		}
	}
}
