package daemon

import (
	"fmt"
	"os/user"
	"slices"
	"strconv"

	"github.com/agent-sudo/agent-sudo/daemon/config"
	"github.com/agent-sudo/agent-sudo/daemon/peercred"
)

// authorizer decides which peers may use the agent socket. Names are
// resolved to ids once, at start-up, so a typo stops the daemon instead of
// silently letting nobody (or the wrong user) in.
type authorizer struct {
	uids      []uint32
	gids      []uint32
	groupHint string // what to tell a refused user
}

func newAuthorizer(cfg *config.Config) (*authorizer, error) {
	a := &authorizer{}
	users := []string{"0"}
	if cfg.AllowedUsersSet {
		users = cfg.AllowedUsers
	}
	groups := []string{cfg.SocketGroup}
	if cfg.AllowedGroupsSet {
		groups = cfg.AllowedGroups
	}
	for _, u := range users {
		uid, err := lookupUID(u)
		if err != nil {
			return nil, fmt.Errorf("allowed_users: %w", err)
		}
		a.uids = append(a.uids, uid)
	}
	for _, g := range groups {
		gid, err := LookupGID(g)
		if err != nil {
			return nil, fmt.Errorf("allowed_groups: %w", err)
		}
		a.gids = append(a.gids, gid)
	}
	if len(groups) > 0 {
		a.groupHint = groups[0]
	}
	return a, nil
}

// check returns "" when peer may use the socket, else the refusal to send.
func (a *authorizer) check(peer peercred.Creds) string {
	if slices.Contains(a.uids, peer.UID) {
		return ""
	}
	for _, g := range a.gids {
		if peer.InGroup(g) {
			return ""
		}
	}
	hint := "ask an administrator to add you to allowed_users"
	if a.groupHint != "" {
		hint = fmt.Sprintf("ask an administrator to add you to the group %q or to allowed_users", a.groupHint)
	}
	return fmt.Sprintf("not allowed: user %s (uid %d) may not use agent-sudo; %s", peer.User(), peer.UID, hint)
}

func lookupUID(name string) (uint32, error) {
	if id, err := strconv.ParseUint(name, 10, 32); err == nil {
		return uint32(id), nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return 0, fmt.Errorf("user %q: %w", name, err)
	}
	id, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("user %q has a non-numeric uid %q", name, u.Uid)
	}
	return uint32(id), nil
}

// LookupGID resolves a group name or numeric id.
func LookupGID(name string) (uint32, error) {
	if id, err := strconv.ParseUint(name, 10, 32); err == nil {
		return uint32(id), nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, fmt.Errorf("group %q: %w (create it, e.g. with systemd-sysusers or groupadd, or name another group)", name, err)
	}
	id, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("group %q has a non-numeric gid %q", name, g.Gid)
	}
	return uint32(id), nil
}
