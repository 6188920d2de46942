package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/rules"
	"github.com/agent-sudo/agent-sudo/internal/runner"
	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

// examplePath is the packaged example, loaded by a test so that it cannot
// drift from what the loader accepts.
const examplePath = "../../packaging/config.example.toml"

// writeConfig writes content to a fresh 0600 file and returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadMissingDefaultPath(t *testing.T) {
	p := filepath.Join(t.TempDir(), "absent.toml")
	c, err := config.Load(p, false)
	if err != nil {
		t.Fatalf("Load(%q, explicit=false) of a missing file: unexpected error %v", p, err)
	}
	if want := config.Default(); !reflect.DeepEqual(c, want) {
		t.Errorf("Load(%q, explicit=false) of a missing file:\n got %+v\nwant %+v", p, c, want)
	}
}

func TestLoadMissingExplicit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "absent.toml")
	_, err := config.Load(p, true)
	if err == nil || !strings.Contains(err.Error(), "load config "+p) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Load(%q, explicit=true) of a missing file: got error %v, want one naming the file and saying it does not exist", p, err)
	}
}

func TestLoadDanglingSymlink(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.toml")
	if err := os.Symlink(filepath.Join(dir, "gone.toml"), p); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(p, false); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("Load(%q, explicit=false) of a dangling symlink: got error %v, want an error naming the file", p, err)
	}
}

func TestLoadSetsSource(t *testing.T) {
	p := writeConfig(t, "max_connections = 3\n")
	c, err := config.Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != p || c.MaxConnections != 3 {
		t.Errorf("Load(%q): Source = %q, MaxConnections = %d; want %q, 3", p, c.Source, c.MaxConnections, p)
	}
	if c.Socket != config.Default().Socket {
		t.Errorf("Load(%q): Socket = %q, want the default %q for a key left out", p, c.Socket, config.Default().Socket)
	}
}

func TestLoadSyntaxErrors(t *testing.T) {
	tests := []struct {
		name, content string
		want          []string
	}{
		{"syntax error", "socket = \"/run/x.sock\"\nexec = \"sudo\"\nmax_connections = = 3\n",
			[]string{"line 3"}},
		{"unterminated string", "# comment\n\nsocket = \"/run/x.sock\n",
			[]string{"line 3"}},
		{"duplicate key", "exec = \"sudo\"\nexec = \"direct\"\n",
			[]string{"line 2", "exec"}},
		{"wrong type", "exec = \"sudo\"\nmax_connections = \"64\"\n",
			[]string{"line 2", "max_connections"}},
		{"integer duration", "\n\n\napproval_timeout = 300\n",
			[]string{"line 4", "approval_timeout", `a duration must be a string with a unit, such as "90s"`}},
		{"unparsable duration", "kill_grace = \"5 seconds\"\n",
			[]string{"line 1", "kill_grace", `invalid duration "5 seconds"`}},
		{"rule is not a table array", "rule = \"allow\"\n",
			[]string{"line 1", "rule"}},
		{"privileged not a boolean", "[[rule]]\naction = \"allow\"\nmatch = [\"id\"]\nprivileged = \"yes\"\n",
			[]string{"line 4", "privileged"}},
		{"numeric user id not quoted", "allowed_users = [\"root\", 1000]\n",
			[]string{"line 1", "allowed_users"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeConfig(t, tt.content)
			_, err := config.Load(p, true)
			if err == nil {
				t.Fatalf("Load of %q: no error, want one containing %q", tt.content, tt.want)
			}
			for _, w := range append([]string{"load config " + p}, tt.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load of %q: got error %q, want it to contain %q", tt.content, err, w)
				}
			}
		})
	}
}

func TestUnknownKeys(t *testing.T) {
	tests := []struct {
		name, content string
		want          []string
		notWant       []string
	}{
		{"typo at top level", "soket = \"/run/x.sock\"\n",
			[]string{`unknown key "soket" (did you mean "socket"?)`}, nil},
		{"typo without suggestion", "frobnicate = true\n",
			[]string{`unknown key "frobnicate"`}, []string{"did you mean"}},
		{"several", "alowed_users = []\nexcec = \"sudo\"\n",
			[]string{`unknown key "alowed_users" (did you mean "allowed_users"?)`, `unknown key "excec" (did you mean "exec"?)`}, nil},
		{"unknown table reported once", "[extra]\nx = 1\ny = 2\n",
			[]string{`unknown key "extra"`}, []string{"extra.x", "extra.y"}},
		{"typo in a rule", "[[rule]]\nname = \"a\"\naction = \"allow\"\nmatch = [\"id\"]\n" +
			"[[rule]]\nname = \"b\"\naction = \"allow\"\nmatch = [\"ls\"]\nprivilegd = true\n",
			[]string{`unknown key "privilegd" in rule 2 ("b") (did you mean "privileged"?)`}, []string{"rule 1"}},
		{"typo in an unnamed rule", "[[rule]]\naction = \"deny\"\nmatch = [\"rm\"]\nsesion = \"x\"\n",
			[]string{`unknown key "sesion" in rule 1 (did you mean "session"?)`}, nil},
		{"typo in forward_agent", "[[rule]]\naction = \"allow\"\nmatch = [\"git\"]\nforward_agnet = true\n",
			[]string{`unknown key "forward_agnet" in rule 1 (did you mean "forward_agent"?)`}, nil},
		{"typo in env", "[[rule]]\naction = \"allow\"\nmatch = [\"git\"]\nenvs = [\"LANG\"]\n",
			[]string{`unknown key "envs" in rule 1 (did you mean "env"?)`}, nil},
		{"typo in group", "[[rule]]\naction = \"allow\"\nmatch = [\"git\"]\ngroupe = \"adm\"\n",
			[]string{`unknown key "groupe" in rule 1 (did you mean "group"?)`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeConfig(t, tt.content)
			_, err := config.Load(p, true)
			if err == nil {
				t.Fatalf("Load of %q: no error, want one containing %q", tt.content, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load of %q: got error %q, want it to contain %q", tt.content, err, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(err.Error(), w) {
					t.Errorf("Load of %q: got error %q, want it not to contain %q", tt.content, err, w)
				}
			}
		})
	}
}

// TestKeysCaseSensitive: the decoder matches keys to fields regardless of
// case; a key in another case is refused with its right spelling, so that
// SOCKET does not set socket and [[Rule]] does not replace the [[rule]]
// tables.
func TestKeysCaseSensitive(t *testing.T) {
	tests := []struct{ name, content, want string }{
		{"top level", "SOCKET = \"/run/x.sock\"\n", `key "SOCKET" must be written "socket": keys are case-sensitive`},
		{"mixed case", "Allowed_Users = []\n", `key "Allowed_Users" must be written "allowed_users"`},
		{"rule table", "[[rule]]\naction = \"deny\"\nmatch = [\"rm\"]\n[[Rule]]\naction = \"allow\"\nmatch = [\"/*\", \"**\"]\n",
			`key "Rule" must be written "rule"`},
		{"in a rule", "[[rule]]\nname = \"a\"\naction = \"ask\"\nmatch = [\"id\"]\n" +
			"[[rule]]\nname = \"b\"\naction = \"allow\"\nmatch = [\"ls\"]\nUSER = \"root\"\n",
			`key "USER" in rule 2 ("b") must be written "user": keys are case-sensitive`},
		{"in an inline rule", "rule = [{action = \"ask\", match = [\"id\"]}, {name = \"b\", action = \"ask\", match = [\"ls\"], Session = \"s\"}]\n",
			`key "Session" in rule 2 ("b") must be written "session"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tt.content))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", tt.content, err, tt.want)
			}
		})
	}
}

// TestEmptyRuleRestriction: user, group or session written as "" on a rule
// would be read as absent and restrict nothing; it is refused.
func TestEmptyRuleRestriction(t *testing.T) {
	for _, key := range []string{"user", "group", "session"} {
		t.Run(key, func(t *testing.T) {
			content := "[[rule]]\nname = \"x\"\naction = \"allow\"\nmatch = [\"id\"]\n" + key + " = \"\"\n"
			_, err := config.Parse([]byte(content))
			want := `rule 1 ("x"): ` + key + ` is empty, which would restrict nothing`
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", content, err, want)
			}
		})
	}
	// Only the rule that writes the key is refused, named by position, in
	// an inline array of rules too.
	inline := "rule = [{action = \"ask\", match = [\"id\"], user = \"root\"}, {action = \"ask\", match = [\"ls\"], user = \"\"}]\n"
	if _, err := config.Parse([]byte(inline)); err == nil || !strings.Contains(err.Error(), "rule 2: user is empty") || strings.Contains(err.Error(), "rule 1") {
		t.Fatalf("Parse(%q) = %v, want an error about rule 2's user only", inline, err)
	}
	// Only the rule that writes the key is refused, named by position.
	content := "[[rule]]\naction = \"ask\"\nmatch = [\"id\"]\nsession = \"s\"\n[[rule]]\naction = \"ask\"\nmatch = [\"ls\"]\nsession = \"\"\n"
	_, err := config.Parse([]byte(content))
	if err == nil || !strings.Contains(err.Error(), "rule 2: session is empty") || strings.Contains(err.Error(), "rule 1") {
		t.Fatalf("Parse(%q) = %v, want an error about rule 2's session only", content, err)
	}
}

func TestInvalidValues(t *testing.T) {
	long := "/run/" + strings.Repeat("s", 110) + ".sock"
	tests := []struct {
		content string
		want    string
	}{
		// Durations.
		{`approval_timeout = "0s"`, `approval_timeout: "0s" is out of range: it must be from 100ms to 24h`},
		{`command_timeout = "-1m"`, `command_timeout: "-1m" is out of range: it must be from 1s to 168h`},
		{`max_clock_skew = "0"`, `max_clock_skew: "0s" is out of range: it must be from 1s to 1h`},
		{`read_timeout = "10"`, `invalid duration "10"`},
		{`shutdown_timeout = ""`, `invalid duration ""`},
		{`kill_grace = "5q"`, `invalid duration "5q"`},
		// exec and connections.
		{`exec = "su"`, `exec: "su" is not valid; it must be "sudo" or "direct"`},
		{`exec = ""`, `exec: "" is not valid`},
		{`max_connections = 0`, `max_connections: 0 is out of range: it must be from 1 to 65536`},
		{`max_connections = -5`, `max_connections: -5 is out of range: it must be from 1 to 65536`},
		{`max_connections_per_user = 0`, `max_connections_per_user: 0 is out of range: it must be from 1 to 65536`},
		{`root_connections = -1`, `root_connections: -1 is out of range: it must be from 1 to 1024`},
		{`max_requests_per_minute = 0`, `max_requests_per_minute: 0 is out of range: it must be from 1 to 60000`},
		{`first_byte_timeout = "0s"`, `first_byte_timeout: "0s" is out of range: it must be from 10ms to 10m`},
		{`first_byte_timeout = 2`, `a duration must be a string with a unit`},
		// Issue 22: values no one means, above the ranges.
		{`max_clock_skew = "2562047h"`, `max_clock_skew: "2562047h" is out of range: it must be from 1s to 1h`},
		{`max_connections = 99999999999`, `max_connections: 99999999999 is out of range: it must be from 1 to 65536`},
		{`session_grant_ttl = "1000000h"`, `session_grant_ttl: "1000000h" is out of range: it must be from 1m to 168h`},
		{`kill_grace = "1ns"`, `kill_grace: "1ns" is out of range: it must be from 100ms to 10m`},
		// Rule keys added for issue 10.
		{"[[rule]]\naction = \"allow\"\nmatch = [\"id\"]\nuid = -1", `rule 1: uid: -1 is not a valid uid (0 to 4294967294)`},
		{"[[rule]]\naction = \"allow\"\nmatch = [\"id\"]\nuid = 4294967295", `rule 1: uid: 4294967295 is not a valid uid`},
		{"[[rule]]\naction = \"allow\"\nmatch = [\"id\"]\nuid = \"1000\"", `uid`},
		{"[[rule]]\naction = \"allow\"\nmatch = [\"id\"]\nuser = \"a b\"", `rule 1: user: "a b" is not a valid user name`},
		{"[[rule]]\naction = \"deny\"\nmatch = [\"id\"]\nenv = [\"LANG\"]", `rule 1: env is only meaningful on an allow rule`},
		{"[[rule]]\naction = \"ask\"\nmatch = [\"id\"]\nforward_agent = true", `rule 1: forward_agent is only meaningful on an allow rule`},
		{"[[rule]]\naction = \"allow\"\nmatch = [\"id\"]\nenv = [\"LD_*X\"]", `rule 1: env[0]: "LD_*X"`},
		{"[[rule]]\naction = \"allow\"\nmatch = [\"id\"]\nenv = \"LANG\"", `env`},
		// env_allow.
		{`env_allow = ["*"]`, `env_allow[0]: "*" would allow every variable`},
		{`env_allow = ["LC_*", "LC_*_X"]`, `env_allow[1]: "LC_*_X": '*' may only appear once, at the end`},
		{`env_allow = ["*_PROXY"]`, `env_allow[0]: "*_PROXY": '*' may only appear once, at the end`},
		{`env_allow = ["1BAD"]`, `env_allow[0]: "1BAD" is not a variable name`},
		{`env_allow = ["A-B*"]`, `env_allow[0]: "A-B*" is not a variable name, or a name prefix followed by one '*'`},
		{`env_allow = [""]`, `env_allow[0]: an empty string is not a variable name`},
		{`env_allow = ["LD_PRELOAD"]`, `env_allow[0]: "LD_PRELOAD" is on the deny list and can never be allowed`},
		{`env_allow = ["L*"]`, `env_allow[0]: "L*" would also match LOGNAME, LD_*, LOCPATH`},
		{`env_allow = ["BASH_ENV"]`, `env_allow[0]: "BASH_ENV" is on the deny list`},
		{`env_allow = ["SUDO_USER"]`, `env_allow[0]: "SUDO_USER" is on the deny list`},
		{`env_allow = ["PATH"]`, `env_allow[0]: "PATH" is on the deny list`},
		// Issue 9: the runner's deny list used to be unknown here.
		{`env_allow = ["PYTHONPATH"]`, `env_allow[0]: "PYTHONPATH" is on the deny list and can never be allowed: it makes an interpreter load or run other code`},
		{`env_allow = ["FOO", "NODE_OPTIONS"]`, `env_allow[1]: "NODE_OPTIONS" is on the deny list`},
		{`env_allow = ["PYTHON*"]`, `env_allow[0]: "PYTHON*" would also match PYTHONPATH`},
		{`env_allow = ["TMPDIR"]`, `env_allow[0]: "TMPDIR" is on the deny list`},
		{`env_allow = ["GIT_*"]`, `env_allow[0]: "GIT_*" would also match GIT_*`},
		// Paths.
		{`socket = "run/agent-sudo.sock"`, `socket: "run/agent-sudo.sock" is not an absolute path`},
		{`socket = "/run//agent-sudo.sock"`, `socket: "/run//agent-sudo.sock" is not a clean path; write "/run/agent-sudo.sock"`},
		{`socket = "` + long + `"`, `socket: "` + long + `" is 120 bytes long; a Unix socket path may be at most 107 bytes`},
		{`socket = ""`, `socket: must not be empty`},
		{`approver_socket = "/run/agent-sudo/agent-sudo.sock"`, `approver_socket: "/run/agent-sudo/agent-sudo.sock" is also the agents' socket`},
		{`audit_log = "audit.jsonl"`, `audit_log: "audit.jsonl" is not an absolute path`},
		{`sudo_path = "sudo"`, `sudo_path: "sudo" is not an absolute path`},
		{`secure_path = "/usr/bin::/bin"`, `secure_path: element 2 is empty`},
		{`secure_path = "/usr/bin:/bin:"`, `secure_path: element 3 is empty`},
		{`secure_path = "/usr/bin:bin"`, `secure_path: element 2: "bin" is not an absolute path`},
		{`secure_path = "/usr/bin/:/bin"`, `secure_path: element 1: "/usr/bin/" is not a clean path`},
		{`secure_path = ""`, `secure_path: must not be empty`},
		{`secure_path = "/usr/bin:/b\u0000in"`, `secure_path: element 2: "/b\x00in" contains a NUL byte`},
		// Accounts.
		{`socket_group = ""`, `socket_group: an empty string is not a group name or id`},
		{`socket_group = "agent sudo"`, `socket_group: "agent sudo" is not a valid group name or numeric id`},
		{`allowed_users = ["root", "-rf"]`, `allowed_users[1]: "-rf" is not a valid user name`},
		{`allowed_users = ["4294967295"]`, `allowed_users[0]: "4294967295" is not a valid numeric user id`},
		{`allowed_users = ["99999999999"]`, `allowed_users[0]: "99999999999" is not a valid numeric user id`},
		{`allowed_groups = ["wheel", ""]`, `allowed_groups[1]: an empty string is not a group name or id`},
		{`allowed_groups = ["a:b"]`, `allowed_groups[0]: "a:b" is not a valid group name`},
		{`unprivileged_user = "root"`, `unprivileged_user: "root" is root`},
		{`unprivileged_user = "0"`, `unprivileged_user: "0" is root`},
		{`unprivileged_user = "no/body"`, `unprivileged_user: "no/body" is not a valid user name`},
		// Rules.
		{"[[rule]]\nname = \"bad\"\naction = \"permit\"\nmatch = [\"id\"]",
			`rule 1 ("bad"): action "permit" is not valid`},
		{"[[rule]]\naction = \"allow\"\nmatch = [\"id\"]\n[[rule]]\naction = \"allow\"",
			`rule 2: match is empty`},
		{"[[rule]]\naction = \"allow\"\nmatch = [\"apt\", \"**\", \"install\"]",
			`rule 1: match[1] is "**", which is only allowed as the last element`},
		{"[[rule]]\naction = \"allow\"\nmatch = [\"echo\", \"\\\\x\"]",
			`rule 1: match[1]: pattern "\\x" has "\\x" at byte 0`},
		{"[[rule]]\nname = \"a\"\naction = \"allow\"\nmatch = [\"id\"]\n[[rule]]\nname = \"a\"\naction = \"deny\"\nmatch = [\"ls\"]",
			`rule 2 ("a"): name "a" is already used by rule 1`},
	}
	for _, tt := range tests {
		p := writeConfig(t, tt.content+"\n")
		_, err := config.Load(p, true)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Load of %q:\n got error %v\nwant one containing %q", tt.content, err, tt.want)
		}
	}
}

func TestAllErrorsReported(t *testing.T) {
	p := writeConfig(t, "exec = \"x\"\nmax_connections = 0\nkill_grace = \"0s\"\n")
	_, err := config.Load(p, true)
	for _, w := range []string{"exec:", "max_connections:", "kill_grace:"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Load with three bad values: got error %v, want it to contain %q", err, w)
		}
	}
}

func TestAllowedListsSetOrNot(t *testing.T) {
	tests := []struct {
		content                  string
		wantUsers, wantGroups    []string
		wantUsersSet, wantGrpSet bool
	}{
		{"", nil, nil, false, false},
		{"allowed_users = []", []string{}, nil, true, false},
		{"allowed_groups = []", nil, []string{}, false, true},
		{"allowed_users = []\nallowed_groups = []", []string{}, []string{}, true, true},
		{`allowed_users = ["alice", "1000"]`, []string{"alice", "1000"}, nil, true, false},
		{`allowed_groups = ["adm", "27"]`, nil, []string{"adm", "27"}, false, true},
	}
	for _, tt := range tests {
		c, err := config.Load(writeConfig(t, tt.content+"\n"), true)
		if err != nil {
			t.Errorf("Load of %q: unexpected error %v", tt.content, err)
			continue
		}
		if c.AllowedUsersSet != tt.wantUsersSet || len(c.AllowedUsers) != len(tt.wantUsers) ||
			(len(tt.wantUsers) > 0 && !reflect.DeepEqual(c.AllowedUsers, tt.wantUsers)) {
			t.Errorf("Load of %q: AllowedUsers = %q (set %v), want %q (set %v)",
				tt.content, c.AllowedUsers, c.AllowedUsersSet, tt.wantUsers, tt.wantUsersSet)
		}
		if c.AllowedGroupsSet != tt.wantGrpSet || len(c.AllowedGroups) != len(tt.wantGroups) ||
			(len(tt.wantGroups) > 0 && !reflect.DeepEqual(c.AllowedGroups, tt.wantGroups)) {
			t.Errorf("Load of %q: AllowedGroups = %q (set %v), want %q (set %v)",
				tt.content, c.AllowedGroups, c.AllowedGroupsSet, tt.wantGroups, tt.wantGrpSet)
		}
	}
}

func TestValues(t *testing.T) {
	content := `
socket = "/run/a/a.sock"
socket_group = "1234"
approver_socket = "/run/a/b.sock"
passkeys = "/etc/a/passkeys"
audit_log = "/var/log/a.jsonl"
audit_env_values = true
audit_stdin = true
exec = "direct"
sudo_path = "/usr/local/bin/sudo"
secure_path = "/usr/bin:/bin"
unprivileged_user = "nobody"
env_allow = ["LC_*", "TZ", "HTTP*"]
max_clock_skew = "1m30s"
approval_timeout = "1h"
command_timeout = "2h"
kill_grace = "500ms"
read_timeout = "3s"
shutdown_timeout = "45s"
request_pids_max = 512
session_grant_ttl = "2h"
max_connections = 7
max_connections_per_user = 3
root_connections = 2
first_byte_timeout = "750ms"
max_requests_per_minute = 90

[[rule]]
action = "allow"
match = ["apt-get", "update"]
privileged = true
session = "c-*"
`
	c, err := config.Load(writeConfig(t, content), true)
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	want := &config.Config{
		Source:           c.Source,
		Socket:           "/run/a/a.sock",
		SocketGroup:      "1234",
		ApproverSocket:   "/run/a/b.sock",
		Passkeys:         "/etc/a/passkeys",
		AuditLog:         "/var/log/a.jsonl",
		AuditEnvValues:   true,
		AuditStdin:       true,
		Exec:             runner.ModeDirect,
		Cgroup:           config.CgroupRequired,
		SudoPath:         "/usr/local/bin/sudo",
		SecurePath:       "/usr/bin:/bin",
		UnprivilegedUser: "nobody",
		EnvAllow:         []string{"LC_*", "TZ", "HTTP*"},
		MaxClockSkew:     config.Duration{Duration: 90 * time.Second},
		ApprovalTimeout:  config.Duration{Duration: time.Hour},
		CommandTimeout:   config.Duration{Duration: 2 * time.Hour},
		KillGrace:        config.Duration{Duration: 500 * time.Millisecond},
		ReadTimeout:      config.Duration{Duration: 3 * time.Second},
		ShutdownTimeout:  config.Duration{Duration: 45 * time.Second},
		RequestPidsMax:   512,
		SessionGrantTTL:  config.Duration{Duration: 2 * time.Hour},
		MaxConnections:   7,

		MaxConnectionsPerUser: 3,
		RootConnections:       2,
		FirstByteTimeout:      config.Duration{Duration: 750 * time.Millisecond},
		MaxRequestsPerMinute:  90,
		NotifyUser:            "nobody",
		NotifyTimeout:         config.Duration{Duration: 10 * time.Second},
		Rules: []rules.Rule{{Action: rules.Allow, Match: []string{"apt-get", "update"},
			Privileged: &yes, Session: "c-*"}},
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("Load of %s:\n got %+v\nwant %+v", content, c, want)
	}
	if got, want := c.TrustedDirs(), []string{"/usr/bin", "/bin"}; !reflect.DeepEqual(got, want) {
		t.Errorf("TrustedDirs() = %q, want %q", got, want)
	}
}

func TestDefault(t *testing.T) {
	c := config.Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v, want nil", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Socket", c.Socket, "/run/agent-sudo/agent-sudo.sock"},
		{"SocketGroup", c.SocketGroup, "agent-sudo"},
		{"ApproverSocket", c.ApproverSocket, "/run/agent-sudo/approver.sock"},
		{"Passkeys", c.Passkeys, "/etc/agent-sudo/passkeys"},
		{"AuditLog", c.AuditLog, "/var/log/agent-sudo/audit.jsonl"},
		{"Exec", c.Exec, runner.ModeSudo},
		{"SudoPath", c.SudoPath, "/usr/bin/sudo"},
		{"SecurePath", c.SecurePath, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		{"MaxClockSkew", c.MaxClockSkew.Duration, 60 * time.Second},
		{"ApprovalTimeout", c.ApprovalTimeout.Duration, 5 * time.Minute},
		{"CommandTimeout", c.CommandTimeout.Duration, 10 * time.Minute},
		{"KillGrace", c.KillGrace.Duration, 5 * time.Second},
		{"ReadTimeout", c.ReadTimeout.Duration, 10 * time.Second},
		{"ShutdownTimeout", c.ShutdownTimeout.Duration, 30 * time.Second},
		{"RequestPidsMax", c.RequestPidsMax, 1024},
		{"MaxConnections", c.MaxConnections, 64},
		{"MaxConnectionsPerUser", c.MaxConnectionsPerUser, 8},
		{"RootConnections", c.RootConnections, 8},
		{"FirstByteTimeout", c.FirstByteTimeout.Duration, 2 * time.Second},
		{"MaxRequestsPerMinute", c.MaxRequestsPerMinute, 300},
		{"AllowedUsersSet", c.AllowedUsersSet, false},
		{"AllowedGroupsSet", c.AllowedGroupsSet, false},
		{"UnprivilegedUser", c.UnprivilegedUser, ""},
		{"AuditEnvValues", c.AuditEnvValues, false},
		{"AuditStdin", c.AuditStdin, false},
		{"Rules", len(c.Rules), 0},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("Default().%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	e, err := c.Engine()
	if err != nil {
		t.Fatalf("Default().Engine(): %v", err)
	}
	d := e.Decide(rules.Query{Stages: []rules.Stage{{Program: "/usr/bin/id"}}, Privileged: true})
	if d.Action != rules.Ask {
		t.Errorf("default engine on /usr/bin/id: got %q, want %q", d.Action, rules.Ask)
	}
	// Default must return a fresh value each time.
	c.Socket = "/changed"
	if config.Default().Socket == "/changed" {
		t.Error("changing one Default() result changed the next one")
	}
}

func TestEngineRejectsHandEditedConfig(t *testing.T) {
	c := config.Default()
	c.Rules = []rules.Rule{{Name: "x", Action: "maybe", Match: []string{"id"}}}
	if _, err := c.Engine(); err == nil || !strings.Contains(err.Error(), `rule 1 ("x"): action "maybe"`) {
		t.Errorf("Engine() with an invalid rule: got error %v, want one naming rule 1", err)
	}
}

func TestFileChecks(t *testing.T) {
	t.Run("group writable", func(t *testing.T) {
		p := writeConfig(t, "")
		if err := os.Chmod(p, 0o664); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(p, true)
		if err == nil || !strings.Contains(err.Error(), "writable by group or others (mode 0664)") {
			t.Errorf("Load of a 0664 file: got error %v, want one about group or others writing", err)
		}
	})
	t.Run("world writable", func(t *testing.T) {
		p := writeConfig(t, "")
		if err := os.Chmod(p, 0o602); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(p, true)
		if err == nil || !strings.Contains(err.Error(), "writable by group or others (mode 0602)") {
			t.Errorf("Load of a 0602 file: got error %v, want one about group or others writing", err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		p := t.TempDir()
		_, err := config.Load(p, false)
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Load of a directory: got error %v, want one saying it is not a regular file", err)
		}
	})
	t.Run("hard link", func(t *testing.T) {
		p := writeConfig(t, "")
		if err := os.Link(p, p+".2"); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(p, true)
		if err == nil || !strings.Contains(err.Error(), "has 2 hard links") {
			t.Errorf("Load of a file with two links: got error %v, want one about its links", err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		p := writeConfig(t, "# "+strings.Repeat("x", config.MaxFileBytes)+"\n")
		_, err := config.Load(p, true)
		if err == nil || !strings.Contains(err.Error(), "larger than") {
			t.Errorf("Load of a %d-byte file: got error %v, want one about its size", config.MaxFileBytes+4, err)
		}
	})
	t.Run("owned by another user", func(t *testing.T) {
		testenv.NeedsRoot(t) // to give the file to another user
		p := writeConfig(t, "")
		if err := os.Chown(p, 12345, 0); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(p, true)
		if err == nil || !strings.Contains(err.Error(), "owned by uid 12345") {
			t.Errorf("Load of a file owned by uid 12345: got error %v, want one naming the owner", err)
		}
	})
}

// TestExample loads the packaged example so it can never rot, and checks
// that its rules decide as its comments say.
func TestExample(t *testing.T) {
	data, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	// Load a private copy: the checkout's mode depends on the umask.
	c, err := config.Load(writeConfig(t, string(data)), true)
	if err != nil {
		t.Fatalf("Load(%s): %v", examplePath, err)
	}
	if !c.AllowedUsersSet || !c.AllowedGroupsSet || len(c.EnvAllow) == 0 || len(c.Rules) == 0 {
		t.Errorf("Load(%s): the example should set allowed_users, allowed_groups, env_allow and rules; got %+v", examplePath, c)
	}
	e, err := c.Engine()
	if err != nil {
		t.Fatal(err)
	}
	if ws := c.Lint(); len(ws) != 0 {
		t.Errorf("the linter warns about the example's rules: %q", ws)
	}
	// The same rules with unprivileged_user empty hand the human's SSH agent
	// to a command running as the agent's own user: the linter says so.
	c.UnprivilegedUser = ""
	if ws := c.Lint(); len(ws) != 1 || !strings.Contains(ws[0].String(), "forward_agent = true with unprivileged_user empty") {
		t.Errorf("with unprivileged_user empty, the linter should warn once about the forward_agent rule; got %q", ws)
	}
	dev := &rules.Peer{UID: 1000, GIDs: []uint32{1000}}
	root := &rules.Peer{UID: 0, GIDs: []uint32{0}}
	tests := []struct {
		argv       []string
		privileged bool
		session    string
		want       rules.Action
		peer       *rules.Peer
		env        []string
		forward    bool
		stdin      bool
	}{
		{argv: []string{"/usr/bin/systemctl", "status", "nginx.service"}, privileged: true, want: rules.Allow, env: []string{"LANG", "LC_ALL"}},
		{argv: []string{"/usr/bin/systemctl", "status", "nginx.service"}, privileged: true, want: rules.Ask, env: []string{"SYSTEMD_PAGER"}},
		{argv: []string{"/usr/bin/systemctl", "status", "sshd.service"}, privileged: true, want: rules.Ask},
		{argv: []string{"/usr/bin/systemctl", "restart", "myapp.service"}, privileged: true, session: "claude-1", want: rules.Allow, peer: dev},
		{argv: []string{"/usr/bin/systemctl", "restart", "myapp.service"}, privileged: true, session: "claude-1", want: rules.Ask, peer: root},
		{argv: []string{"/usr/bin/id"}, privileged: false, want: rules.Allow, peer: root},
		{argv: []string{"/usr/bin/id"}, privileged: false, want: rules.Ask, peer: dev},
		{argv: []string{"/usr/bin/git", "-C", "/srv/myapp", "fetch", "origin"}, want: rules.Allow, peer: dev, forward: true},
		{argv: []string{"/usr/bin/tee", "/etc/motd"}, want: rules.Allow, peer: dev, stdin: true},
		{argv: []string{"/usr/bin/tee", "/etc/motd"}, want: rules.Ask, peer: root, stdin: true},
		{argv: []string{"/usr/bin/git", "-C", "/srv/myapp", "fetch", "origin"}, want: rules.Ask, peer: root, forward: true},
		{[]string{"/usr/bin/apt-get", "update"}, true, "", rules.Allow, nil, nil, false, false},
		{[]string{"/tmp/apt-get", "update"}, true, "", rules.Ask, nil, nil, false, false},
		{[]string{"/usr/bin/apt-get", "install", "nginx"}, true, "", rules.Ask, nil, nil, false, false},
		{[]string{"/bin/rm", "-rf", "/"}, true, "", rules.Deny, nil, nil, false, false},
		{[]string{"/bin/rm", "-r", "-f", "/"}, true, "", rules.Deny, nil, nil, false, false},
		{[]string{"/bin/rm", "--no-preserve-root", "-rf", "/"}, true, "", rules.Deny, nil, nil, false, false},
		{[]string{"/bin/rm", "/tmp/x"}, true, "", rules.Ask, nil, nil, false, false},
		{[]string{"/sbin/mkfs.ext4", "/dev/sda1"}, true, "", rules.Deny, nil, nil, false, false},
		{[]string{"/usr/bin/systemctl", "status", "nginx"}, true, "", rules.Ask, nil, nil, false, false},
		{[]string{"/usr/bin/systemctl", "restart", "myapp.service"}, true, "claude-1", rules.Ask, nil, nil, false, false},
		{[]string{"/usr/bin/systemctl", "restart", "myapp.service"}, true, "other", rules.Ask, nil, nil, false, false},
		{[]string{"/usr/bin/id"}, false, "", rules.Ask, nil, nil, false, false},
		{[]string{"/usr/bin/id"}, true, "", rules.Ask, nil, nil, false, false},
	}
	for _, tt := range tests {
		q := rules.Query{
			Stages:     []rules.Stage{{Program: tt.argv[0], Args: tt.argv[1:]}},
			Privileged: tt.privileged, Session: tt.session,
			Peer: tt.peer, Env: tt.env, ForwardAgent: tt.forward, Stdin: tt.stdin,
		}
		if got := e.Decide(q); got.Action != tt.want {
			t.Errorf("example rules on %q (privileged=%v session=%q): got %q (%s), want %q",
				tt.argv, tt.privileged, tt.session, got.Action, got.Reason, tt.want)
		}
	}
}

// TestCgroupKey: "cgroup" defaults to "required", accepts "best-effort",
// and refuses anything else with a message naming both valid values.
func TestCgroupKey(t *testing.T) {
	for _, tc := range []struct {
		content string
		want    config.CgroupMode
		err     string
	}{
		{"", config.CgroupRequired, ""},
		{`cgroup = "required"`, config.CgroupRequired, ""},
		{`cgroup = "best-effort"`, config.CgroupBestEffort, ""},
		{`cgroup = "off"`, "", `cgroup: "off" is not valid; it must be "required" or "best-effort"`},
		{`cgroup = ""`, "", `cgroup: "" is not valid`},
		{`cgroup = true`, "", "cgroup"},
	} {
		c, err := config.Load(writeConfig(t, tc.content+"\n"), true)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v; want one containing %q", tc.content, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.content, err)
		case c.Cgroup != tc.want:
			t.Errorf("%q: Cgroup = %q; want %q", tc.content, c.Cgroup, tc.want)
		}
	}
}
