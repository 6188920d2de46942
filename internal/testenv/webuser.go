package testenv

import (
	"errors"
	"os/exec"
	"os/user"
	"strconv"
	"testing"
)

// WebUser returns the uid of agent-sudo-web, the web approver's default
// --user, creating it as a system user (useradd --system, as the
// package's sysusers.d line does) when the machine has none: tests that
// start the web approver or an enrolment without --user need it. The
// test must run as root (NeedsRoot).
func WebUser(t testing.TB) uint32 {
	t.Helper()
	const name = "agent-sudo-web"
	if u, err := user.Lookup(name); err == nil {
		return parseUID(t, u.Uid)
	} else if !errors.As(err, new(user.UnknownUserError)) {
		t.Fatalf("look up %s: %v", name, err)
	}
	out, err := exec.Command("useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/",
		"--shell", "/usr/sbin/nologin", "--comment", "agent-sudo web approver", name).CombinedOutput()
	u, lerr := user.Lookup(name)
	if lerr != nil { // another test may have created it meanwhile
		t.Fatalf("create the user %s: %v: %s (%v)", name, err, out, lerr)
	}
	return parseUID(t, u.Uid)
}

func parseUID(t testing.TB, s string) uint32 {
	t.Helper()
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		t.Fatalf("uid %q: %v", s, err)
	}
	return uint32(n)
}
