package runner

import (
	"fmt"
	"os/user"
	"slices"

	"github.com/agent-sudo/agent-sudo/internal/account"
)

// LookupTarget returns the identity of the user called name: uid, primary
// gid, supplementary groups (including the primary group, as login does) and
// home directory, from the system's user and group databases.
func LookupTarget(name string) (Target, error) {
	if name == "" {
		return Target{}, fmt.Errorf("runner: empty target user name")
	}
	u, err := user.Lookup(name)
	if err != nil {
		return Target{}, fmt.Errorf("runner: looking up target user %q: %w", name, err)
	}
	uid, err := account.ParseID(u.Uid)
	if err != nil {
		return Target{}, fmt.Errorf("runner: target user %q: uid: %w", name, err)
	}
	gid, err := account.ParseID(u.Gid)
	if err != nil {
		return Target{}, fmt.Errorf("runner: target user %q: gid: %w", name, err)
	}
	ids, err := u.GroupIds()
	if err != nil {
		return Target{}, fmt.Errorf("runner: target user %q: listing groups: %w", name, err)
	}
	groups := []uint32{gid}
	for _, s := range ids {
		g, err := account.ParseID(s)
		if err != nil {
			return Target{}, fmt.Errorf("runner: target user %q: group: %w", name, err)
		}
		groups = append(groups, g)
	}
	slices.Sort(groups)
	return Target{
		Name:   u.Username,
		UID:    uid,
		GID:    gid,
		Groups: slices.Compact(groups),
		Home:   u.HomeDir,
	}, nil
}
