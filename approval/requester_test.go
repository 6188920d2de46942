package approval_test

import (
	"slices"
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
)

// TestHopName: a hop is called by argv[0]'s base name, raw (the sheet
// escapes it), else by comm.
func TestHopName(t *testing.T) {
	for _, c := range []struct {
		hop  approval.Hop
		want string
	}{
		{approval.Hop{Comm: "bash", Argv: []string{"/usr/bin/claude"}}, "claude"},
		{approval.Hop{Comm: "bash", Argv: []string{"\x1b[31mclaude"}}, "\x1b[31mclaude"},
		{approval.Hop{Comm: "bash", Argv: []string{"/opt/tool/"}}, "tool"},
		{approval.Hop{Comm: "bash", Argv: []string{""}}, "bash"},
		{approval.Hop{Comm: "bash"}, "bash"},
	} {
		if got := c.hop.Name(); got != c.want {
			t.Errorf("%+v: Name = %q, want %q", c.hop, got, c.want)
		}
	}
}

// TestSortedNS: a container's namespaces in the order of Namespaces, any
// other kind after them by name.
func TestSortedNS(t *testing.T) {
	c := &approval.Container{NS: map[string]uint64{"net": 1, "zz": 2, "user": 3, "aa": 4, "cgroup": 5}}
	if got, want := c.SortedNS(), []string{"user", "net", "cgroup", "aa", "zz"}; !slices.Equal(got, want) {
		t.Errorf("SortedNS = %q, want %q", got, want)
	}
}
