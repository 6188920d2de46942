package web

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/account"
)

// NSSWrapper is Debian's libnss-wrapper (.ci/run installs it): with it
// preloaded, getent reads the passwd and group files a test writes, as a
// directory (LDAP, SSSD) would answer.
const nssWrapper = "/usr/lib/x86_64-linux-gnu/libnss_wrapper.so"

// TestNSSUIDFindsADirectoryUser: a user the system's name service knows
// and /etc/passwd does not (here through nss_wrapper) is found by NSSUID,
// with its uid, where os/user in a static build does not find it (issue
// 31, finding 3); a name nobody has is not found, with no error.
func TestNSSUIDFindsADirectoryUser(t *testing.T) {
	if _, err := os.Stat(nssWrapper); err != nil {
		t.Skipf("libnss-wrapper is not installed (apt-get install libnss-wrapper): %v", err)
	}
	dir := t.TempDir()
	pw, gr := filepath.Join(dir, "passwd"), filepath.Join(dir, "group")
	if err := os.WriteFile(pw, []byte("dirk:x:5123:5123:Directory user:/home/dirk:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gr, []byte("dirk:x:5123:\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"LD_PRELOAD=" + nssWrapper, "NSS_WRAPPER_PASSWD=" + pw, "NSS_WRAPPER_GROUP=" + gr}
	if _, err := account.UID("dirk"); err == nil {
		t.Skip("this system's own user database has a dirk")
	}
	uid, found, err := nssUID(context.Background(), "dirk", env)
	if err != nil || !found || uid != 5123 {
		t.Fatalf("NSSUID(dirk) under nss_wrapper = %d %v %v, want 5123", uid, found, err)
	}
	if uid, found, err := nssUID(context.Background(), "nobody-here", env); err != nil || found {
		t.Fatalf("NSSUID(nobody-here) = %d %v %v, want not found", uid, found, err)
	}
	if uid, found, err := nssUID(context.Background(), "root", nil); err != nil || !found || uid != 0 {
		t.Fatalf("NSSUID(root) = %d %v %v, want 0", uid, found, err)
	}
	for _, bad := range []string{"", "-x", "a:b", "a\nb"} {
		if _, _, err := nssUID(context.Background(), bad, nil); err == nil {
			t.Errorf("NSSUID(%q): no error", bad)
		}
	}
}
