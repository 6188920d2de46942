package runner

import (
	"fmt"
	"os/user"
	"slices"
	"strconv"
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
	uid, err := parseID(u.Uid)
	if err != nil {
		return Target{}, fmt.Errorf("runner: target user %q: uid: %w", name, err)
	}
	gid, err := parseID(u.Gid)
	if err != nil {
		return Target{}, fmt.Errorf("runner: target user %q: gid: %w", name, err)
	}
	ids, err := u.GroupIds()
	if err != nil {
		return Target{}, fmt.Errorf("runner: target user %q: listing groups: %w", name, err)
	}
	groups := []uint32{gid}
	for _, s := range ids {
		g, err := parseID(s)
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

func parseID(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("parsing id %q: %w", s, err)
	}
	return uint32(n), nil
}
