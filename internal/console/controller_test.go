package console

import (
	"testing"

	"github.com/agent-sudo/agent-sudo/approval"
	tea "github.com/charmbracelet/bubbletea"
)

// TestControllerShown: a requester in a user namespace another user owns
// (subordinate uids through newuidmap) shows the uid the daemon's
// per-user limits count it as, beside its own uids.
func TestControllerShown(t *testing.T) {
	h := newHarness(t, "")
	h.update(tea.WindowSizeMsg{Width: 200, Height: 60})
	s := shown("r1")
	s.Peer.UID, s.Peer.User = 100005, "100005"
	inner, owner := uint32(5), uint32(1000)
	s.Peer.Container = &approval.Container{NS: map[string]uint64{"user": 4026532000}, InnerUID: &inner, Controller: &owner}
	h.pending(s)
	h.wantView("uid 100005 (100005) = uid 5 inside its container, counted as uid 1000 (its user namespace's owner)")
}
