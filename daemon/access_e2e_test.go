package daemon_test

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/daemontest"
)

// cliAs runs the agent-sudo binary as u (nil: root) against d and returns
// its exit status and its output: stdout, then stderr. stdout alone is
// what a command run through it printed.
func cliAs(t *testing.T, d *daemontest.Daemon, u *daemontest.User, args ...string) (code int, out, stdout string) {
	t.Helper()
	cli := d.PublicCLI()
	args = append([]string{args[0], "--socket", d.Socket}, args[1:]...)
	var cmd *exec.Cmd
	if u == nil {
		cmd = exec.Command(cli, args...)
	} else {
		cmd = u.Command(cli, args...)
	}
	cmd.Env = daemontest.RaceEnv([]string{"PATH=/usr/bin:/bin"})
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, o.String() + e.String(), o.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), o.String() + e.String(), o.String()
	}
	t.Fatalf("agent-sudo %v: %v", args, err)
	return 0, "", ""
}

// TestE2EAccessControl checks docs/config.md "Who can connect" over the
// wire, with real users and groups: every test user is in socket_group, so
// every one can open the socket, and allowed_users/allowed_groups alone
// decide who is served. Each case asks `agent-sudo status` as each user and
// sends a rule-allowed request with `agent-sudo run`: an allowed user gets
// "may use it" and its command runs; a refused one gets exit status 77 and
// "not allowed", and nothing runs.
func TestE2EAccessControl(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	if testing.Short() {
		t.Skip("starts a daemon per case")
	}
	sock, sockGID := daemontest.AddGroup(t, "acc")
	extra, extraGID := daemontest.AddGroup(t, "acx")
	plain := daemontest.AddUser(t, "acp", sock)          // socket_group only
	inExtra := daemontest.AddUser(t, "ace", sock, extra) // socket_group and extra
	other := daemontest.AddUser(t, "aco", sock)          // socket_group only
	// A uid with no entry in the user database, in socket_group.
	ghost := &daemontest.User{Name: "4000001", UID: 4000001, GID: sockGID}
	users := map[string]*daemontest.User{"root": nil, "plain": plain, "inExtra": inExtra, "other": other, "ghost": ghost}
	u := strconv.Quote

	cases := []struct {
		name    string
		extra   string
		allowed []string // the rest of users are refused
		status  bool     // ask status too
	}{
		{"neither key: root and socket_group", "", []string{"root", "plain", "inExtra", "other", "ghost"}, true},
		{"only allowed_users: nobody else", `allowed_users = ["root"]`, []string{"root"}, false},
		{"only allowed_groups: root is not listed", fmt.Sprintf("allowed_groups = [%s]", u(extra)), []string{"inExtra"}, false},
		{"only allowed_groups = socket_group", fmt.Sprintf("allowed_groups = [%s]", u(sock)), []string{"plain", "inExtra", "other", "ghost"}, false},
		{"both keys", fmt.Sprintf("allowed_users = [%s]\nallowed_groups = [%s]", u(plain.Name), u(extra)), []string{"plain", "inExtra"}, true},
		{"empty users list, groups unset", "allowed_users = []", nil, false},
		{"empty groups list, users unset", "allowed_groups = []", nil, false},
		{"both lists empty", "allowed_users = []\nallowed_groups = []", nil, true},
		{"numeric ids", fmt.Sprintf("allowed_users = [%s, %s]\nallowed_groups = [%s]",
			u(strconv.Itoa(int(other.UID))), u("4000001"), u(strconv.Itoa(int(extraGID)))), []string{"other", "inExtra", "ghost"}, false},
		{"root by numeric id", `allowed_users = ["0"]`, []string{"root"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := daemontest.Start(t, daemontest.Config{SocketGroup: sock, Rules: daemontest.AllowAll, Extra: tc.extra})
			for label, usr := range users {
				want := false
				for _, a := range tc.allowed {
					want = want || a == label
				}
				// The daemon decides who may connect once, at accept, for
				// a ping as for a request: status, which pings, is asked
				// in the cases marked, run in every one.
				if tc.status {
					code, out, _ := cliAs(t, d, usr, "status")
					switch {
					case want && (code != 0 || !strings.Contains(out, "may use it")):
						t.Errorf("%s: status = %d %q, want 0 and \"may use it\"", label, code, out)
					case !want && (code != 77 || !strings.Contains(out, "not allowed")):
						t.Errorf("%s: status = %d %q, want 77 and \"not allowed\"", label, code, out)
					}
				}
				// stdout alone: run tells on stderr when an answer is slow.
				code, out, stdout := cliAs(t, d, usr, "run", "--unprivileged", "--reason", "access test", "--", "id", "-u")
				wantUID := "0"
				if usr != nil {
					wantUID = strconv.Itoa(int(usr.UID))
				}
				switch {
				case want && usr == ghost:
					// Served, but a uid without a user name cannot be an
					// unprivileged request's target: refused after the
					// access check, not by it.
					if code == 0 || strings.Contains(out, "not allowed") || !strings.Contains(out, "unknown user 4000001") {
						t.Errorf("%s: run = %d %q, want the target user refused", label, code, out)
					}
				case want && (code != 0 || strings.TrimSpace(stdout) != wantUID):
					t.Errorf("%s: run = %d %q, want 0 and %s", label, code, out, wantUID)
				case !want && (code != 77 || !strings.Contains(out, "not allowed: user ") || stdout != ""):
					t.Errorf("%s: run = %d %q, want 77 with \"not allowed\" and nothing run", label, code, out)
				}
			}
		})
	}
}

// TestE2EAccessNamesMustResolve: a name in allowed_users or allowed_groups
// that does not resolve stops the daemon at start, with a message naming
// the key, the entry's index and the name; a numeric id needs no entry.
func TestE2EAccessNamesMustResolve(t *testing.T) {
	t.Parallel()
	daemontest.RequireRoot(t)
	sock, _ := daemontest.AddGroup(t, "acr")
	for _, tc := range []struct{ extra, want string }{
		{`allowed_users = ["root", "asudo-no-such-user-x"]`, `allowed_users[1]: user "asudo-no-such-user-x": user: unknown user asudo-no-such-user-x`},
		{`allowed_groups = ["asudo-no-such-group-x"]`, `allowed_groups[0]: group "asudo-no-such-group-x": group: unknown group asudo-no-such-group-x`},
	} {
		t.Run(tc.extra, func(t *testing.T) {
			t.Parallel()
			bin, _ := daemontest.Binaries(t)
			d := daemontest.Configure(t, daemontest.Config{SocketGroup: sock, Extra: tc.extra})
			out, err := exec.Command(bin, "--config", d.ConfigPath).CombinedOutput()
			if err == nil || !strings.Contains(string(out), tc.want) {
				t.Fatalf("agent-sudod: %v\n%s\nwant a failure containing %q", err, out, tc.want)
			}
		})
	}
}
