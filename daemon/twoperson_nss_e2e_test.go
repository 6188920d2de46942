package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/approval"
	"github.com/agent-sudo/agent-sudo/internal/account"
	"github.com/agent-sudo/agent-sudo/internal/daemontest"
	"github.com/agent-sudo/agent-sudo/internal/passkey"
	"github.com/agent-sudo/agent-sudo/internal/passkeytest"
	"github.com/agent-sudo/agent-sudo/internal/web"
	"github.com/agent-sudo/agent-sudo/proto"
)

// nssWrapper is Debian's libnss-wrapper (.ci/run installs it).
const nssWrapper = "/usr/lib/x86_64-linux-gnu/libnss_wrapper.so"

// TestE2ETwoPersonDirectoryUser: over the real daemon, a user whom the
// system's name service knows and /etc/passwd does not (an LDAP or SSSD
// user; here nss_wrapper's, resolved by the real getent as enrolment
// resolves it) is one person: after her console (a process with her login
// uid) allowed a two-person request, her passkey's allow is refused as the
// same person's, and the command does not run. Issue 31, finding 3: the
// daemon looked the passkey's name up in /etc/passwd alone, counted the
// passkey and the console as two people, and ran the command.
func TestE2ETwoPersonDirectoryUser(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	if _, err := os.Stat(nssWrapper); err != nil {
		t.Skipf("libnss-wrapper is not installed (apt-get install libnss-wrapper): %v", err)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is needed for the console")
	}
	const name, uid = "dirk", 5123
	if _, err := account.UID(name); err == nil {
		t.Skipf("this system's /etc/passwd has a %s", name)
	}
	nss := t.TempDir()
	pw, gr := filepath.Join(nss, "passwd"), filepath.Join(nss, "group")
	if err := os.WriteFile(pw, fmt.Appendf(nil, "%s:x:%d:%d:Directory user:/home/%s:/bin/sh\n", name, uid, uid, name), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gr, fmt.Appendf(nil, "%s:x:%d:\n", name, uid), 0o644); err != nil {
		t.Fatal(err)
	}
	person, err := web.ResolvePerson(context.Background(), name, []string{"LD_PRELOAD=" + nssWrapper, "NSS_WRAPPER_PASSWD=" + pw, "NSS_WRAPPER_GROUP=" + gr})
	if err != nil || person != fmt.Sprintf("uid %d", uid) {
		t.Fatalf("ResolvePerson(%s) under nss_wrapper = %q %v, want uid %d", name, person, err, uid)
	}

	keys := passkeytest.Dir(t)
	k, err := passkeytest.New(name, "localhost", "https://localhost:8443")
	if err != nil {
		t.Fatal(err)
	}
	k.Person = person
	en, err := k.Enrolled()
	if err != nil {
		t.Fatal(err)
	}
	if err := (passkey.Store{Dir: keys}).Save(en); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "ran")
	d := daemontest.Start(t, daemontest.Config{ApprovalTimeout: "60s", Extra: fmt.Sprintf("passkeys = %q", keys), Rules: `
[[rule]]
name = "two people"
action = "ask"
match = ["touch", "**"]
approvals = 2
`})
	watcher := daemontest.Dial(t, d.ApproverSocket)
	asked := d.Ask(t, &proto.Request{ID: "dir-1", Pipeline: [][]string{{"touch", target}}, Session: "s1", Reason: "two people", Time: time.Now()})
	p := watcher.Pending("dir-1")

	// Dirk's console: his login uid, as his login session would have set it.
	console := exec.Command("/bin/sh", "-c", `echo "$TTY_UID" > /proc/self/loginuid || exit 3; exec python3 -c "$PY" "$SOCK"`)
	console.Env = []string{"PATH=/usr/bin:/bin", fmt.Sprintf("TTY_UID=%d", uid), "PY=" + consolePy, "SOCK=" + d.ApproverSocket}
	var out bytes.Buffer
	console.Stdout, console.Stderr = &out, &out
	if err := console.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 3 {
			t.Skipf("the login uid cannot be set here: %s", out.String())
		}
		t.Fatalf("console: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `"ok":true`) || !strings.Contains(out.String(), "1 of 2") {
		t.Fatalf("dirk's console's allow: %s, want counted as 1 of 2", out.String())
	}

	st := approval.Statement{Record: p.Record, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce,
		Scope: approval.ScopeOnce, Expires: time.Now().Add(time.Minute).UTC(), Nonce: passkeytest.Nonce()}
	sig, err := k.Sign(st)
	if err != nil {
		t.Fatal(err)
	}
	watcher.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.AllowOnce, Signed: &sig})
	if r := watcher.Result("dir-1"); r.OK || !strings.Contains(r.Error, "already allowed") || !strings.Contains(r.Error, fmt.Sprintf("uid %d", uid)) {
		t.Fatalf("dirk's passkey after dirk's console: %+v, want refused as the same person", r)
	}
	watcher.Send(approval.Message{Type: approval.MsgDecide, ID: p.ID, Hash: p.Hash, Decision: approval.DenyOnce})
	if resp := asked.Wait(); resp.Status != proto.StatusDenied {
		t.Fatalf("response %+v, want denied", resp)
	}
	if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s exists (%v): the command ran", target, err)
	}
}
