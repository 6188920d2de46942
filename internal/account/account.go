// Package account reads user and group ids: it parses numeric ids and
// resolves user and group names with the system's user database (os/user).
//
// A numeric id is decimal digits from 0 to 4294967294, nothing else (no
// sign, no spaces, no other base). 4294967295 is (uid_t)-1, which
// setresuid and chown read as "leave unchanged", so it names nobody and is
// refused wherever an id is read: in the configuration, from a rule, or
// from the user database.
//
// A numeric id given where a user or group is named is taken as it is,
// without a lookup: a uid or gid needs no entry in the user database.
package account

import (
	"fmt"
	"os/user"
	"strconv"
)

// ParseID parses a numeric user or group id, as the package documentation
// describes.
func ParseID(s string) (uint32, error) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a numeric id (0 to 4294967294)", s)
		}
	}
	id, err := strconv.ParseUint(s, 10, 32)
	if err != nil || id == 1<<32-1 {
		return 0, fmt.Errorf("%q is not a numeric id (0 to 4294967294)", s)
	}
	return uint32(id), nil
}

// UID returns the uid of name, a user name or a numeric uid. The error of a
// failed lookup wraps os/user's (a [user.UnknownUserError] when there is no
// such user).
func UID(name string) (uint32, error) {
	if id, err := ParseID(name); err == nil {
		return id, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return 0, err
	}
	id, err := ParseID(u.Uid)
	if err != nil {
		return 0, fmt.Errorf("user %q has the uid %q in the user database: %w", name, u.Uid, err)
	}
	return id, nil
}

// GID returns the gid of name, a group name or a numeric gid, as [UID]
// does for users.
func GID(name string) (uint32, error) {
	if id, err := ParseID(name); err == nil {
		return id, nil
	}
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, err
	}
	id, err := ParseID(g.Gid)
	if err != nil {
		return 0, fmt.Errorf("group %q has the gid %q in the user database: %w", name, g.Gid, err)
	}
	return id, nil
}
