package daemontest

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os/exec"
	"os/user"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/account"
)

// accountCmd runs useradd, groupadd, userdel or groupdel, retrying while
// another process holds the lock on /etc/passwd or /etc/group.
func accountCmd(args ...string) error {
	var out []byte
	var err error
	for attempt := range 40 {
		out, err = exec.Command(args[0], args[1:]...).CombinedOutput()
		if err == nil {
			return nil
		}
		if !bytes.Contains(out, []byte("lock")) {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 25 * time.Millisecond)
	}
	return fmt.Errorf("%v: %v: %s", args, err, bytes.TrimSpace(out))
}

// uniqueName returns "asudo-" + area + "-" + a random suffix: a user or
// group name no other test uses (at most 32 bytes for short areas).
func uniqueName(area string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("asudo-%s-%x", area, b)
}

// AddGroup creates a group with a unique name built from area, removed
// when the test ends, and returns its name and gid. It needs root.
func AddGroup(t testing.TB, area string) (name string, gid uint32) {
	t.Helper()
	RequireRoot(t)
	name = uniqueName(area)
	if err := accountCmd("groupadd", name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := accountCmd("groupdel", name); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	g, err := user.LookupGroup(name)
	if err != nil {
		t.Fatal(err)
	}
	id, err := account.ParseID(g.Gid)
	if err != nil {
		t.Fatal(err)
	}
	return name, id
}

// AddUser creates a user with a unique name built from area, no home
// directory and no login shell, with the given supplementary groups,
// removed (with its own primary group) when the test ends. It needs root.
func AddUser(t testing.TB, area string, groups ...string) *User {
	t.Helper()
	RequireRoot(t)
	name := uniqueName(area)
	args := []string{"useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group"}
	if len(groups) > 0 {
		args = append(args, "--groups", strings.Join(groups, ","))
	}
	if err := accountCmd(append(args, name)...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := accountCmd("userdel", name); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	u, err := LookupUser(name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// User is a local account as a test runs processes under it.
type User struct {
	Name     string
	UID, GID uint32
	// Groups are its supplementary groups.
	Groups []uint32
}

// LookupUser reads name's ids and groups from the user database.
func LookupUser(name string) (*User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, err
	}
	r := &User{Name: name}
	if r.UID, err = account.ParseID(u.Uid); err != nil {
		return nil, fmt.Errorf("user %q: uid: %w", name, err)
	}
	if r.GID, err = account.ParseID(u.Gid); err != nil {
		return nil, fmt.Errorf("user %q: gid: %w", name, err)
	}
	gids, err := u.GroupIds()
	if err != nil {
		return nil, err
	}
	for _, g := range gids {
		id, err := account.ParseID(g)
		if err != nil {
			return nil, fmt.Errorf("user %q: group: %w", name, err)
		}
		r.Groups = append(r.Groups, id)
	}
	return r, nil
}

// Command returns cmd set to run as u, with u's supplementary groups, as
// `setpriv --init-groups` would.
func (u *User) Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}}
	return cmd
}
