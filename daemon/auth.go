package daemon

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agent-sudo/agent-sudo/proto"

	"github.com/agent-sudo/agent-sudo/internal/account"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/peercred"
)

// authorizer decides which peers may use the agent socket, as docs/config.md
// "Who can connect" says:
//
//   - neither allowed_users nor allowed_groups set: root and the members of
//     socket_group;
//   - either set: exactly the users listed in allowed_users and the members
//     of the groups listed in allowed_groups; a key that is not set, or is
//     an empty list, contributes nobody.
//
// Names are resolved to ids once, when the daemon starts: a name that does
// not resolve stops the daemon with an error naming the key and the entry,
// so a typo is found at once instead of silently letting nobody in.
type authorizer struct {
	uids []uint32
	gids []uint32
	// users and groups are the configured entries (names or ids), in the
	// order of uids and gids, for messages.
	users, groups []string
	// explicit reports whether allowed_users or allowed_groups is set.
	explicit bool
}

// newAuthorizer resolves the access lists of cfg. An error names the key
// and the entry that could not be resolved.
func newAuthorizer(cfg *config.Config) (*authorizer, error) {
	a := &authorizer{explicit: cfg.AllowedUsersSet || cfg.AllowedGroupsSet}
	users, groups := []string{"root"}, []string{cfg.SocketGroup}
	userKey, groupKey := "allowed_users (default)", "socket_group"
	if a.explicit {
		users, groups = cfg.AllowedUsers, cfg.AllowedGroups
		userKey, groupKey = "allowed_users", "allowed_groups"
	}
	for i, u := range users {
		uid, err := lookupUID(u)
		if err != nil {
			if a.explicit {
				return nil, fmt.Errorf("%s[%d]: %w", userKey, i, err)
			}
			return nil, fmt.Errorf("%s: %w", userKey, err)
		}
		a.uids = append(a.uids, uid)
		a.users = append(a.users, u)
	}
	for i, g := range groups {
		gid, err := lookupGID(g)
		if err != nil {
			if a.explicit {
				return nil, fmt.Errorf("%s[%d]: %w", groupKey, i, err)
			}
			return nil, fmt.Errorf("%s: %w", groupKey, err)
		}
		a.gids = append(a.gids, gid)
		a.groups = append(a.groups, g)
	}
	return a, nil
}

// check returns why peer may use the socket (allowed true), or the refusal
// to send it (allowed false). The reason for an allowed peer says which
// entry let it in, so that `agent-sudo status` can tell the user.
func (a *authorizer) check(peer peercred.Creds) (reason string, allowed bool) {
	if i := slices.Index(a.uids, peer.UID); i >= 0 {
		if a.explicit {
			return fmt.Sprintf("listed in allowed_users as %q", a.users[i]), true
		}
		return "root is allowed when neither allowed_users nor allowed_groups is set", true
	}
	for i, g := range a.gids {
		if peer.InGroup(g) {
			if a.explicit {
				return fmt.Sprintf("member of group %q, listed in allowed_groups", a.groups[i]), true
			}
			return fmt.Sprintf("member of socket_group %q", a.groups[i]), true
		}
	}
	var hint string
	switch {
	case !a.explicit:
		hint = fmt.Sprintf("ask an administrator to add you to the group %q (socket_group)", a.groups[0])
	case len(a.groups) > 0:
		hint = fmt.Sprintf("only the users in allowed_users and the members of the groups in allowed_groups (%s) are served; ask an administrator to add you to one of them",
			strings.Join(quoteAll(a.groups), ", "))
	default:
		hint = "only the users in allowed_users are served; ask an administrator to add you to it"
	}
	return fmt.Sprintf(proto.NotAllowedPrefix+" user %s (uid %d) may not use agent-sudo; %s", peer.User(), peer.UID, hint), false
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// lookupUID resolves a user name or numeric id. A numeric id is taken as
// it is: a uid needs no entry in the user database to connect.
func lookupUID(name string) (uint32, error) {
	id, err := account.UID(name)
	if err != nil {
		return 0, fmt.Errorf("user %q: %w (fix the name, create the user, or give a numeric uid)", name, err)
	}
	return id, nil
}

// LookupGID resolves a group name or numeric id.
func lookupGID(name string) (uint32, error) {
	id, err := account.GID(name)
	if err != nil {
		return 0, fmt.Errorf("group %q: %w (create it, e.g. with systemd-sysusers or groupadd, or name another group)", name, err)
	}
	return id, nil
}
