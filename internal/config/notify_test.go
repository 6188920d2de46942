package config_test

import (
	"os/user"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/hint"
)

// TestNotifyKeys: notify is a list of argument vectors whose program is an
// absolute path and whose arguments hold only known placeholders (or
// doubled braces); notify_user is a user other than root; notify_timeout a
// positive duration. Every refusal says exactly what was wrong.
func TestNotifyKeys(t *testing.T) {
	refused := []struct {
		name, content, want string
	}{
		{"flat list", `notify = ["/usr/bin/notify-send", "command: {command}"]`,
			"notify: element 0 is a string; notify is a list of notifiers, each a list of strings\n" +
				`hint: one notifier is written notify = [["/usr/bin/notify-send", "agent-sudo: {session} asks", "command: {command}"]] (two pairs of brackets)`},
		// Where a placeholder may be (notify.checkPlacement): nowhere the
		// agent's value could be read as an option or a file reference.
		{"placeholder starts an argument", `notify = [["/usr/bin/notify-send", "agent-sudo", "{command}"]]`,
			"notify[0][2]: {command} starts the argument, so the agent's value could be read as an option (-x) or a file (@file)\n" +
				`hint: put fixed text before it, e.g. "command: {command}"`},
		{"placeholder in an option", `notify = [["/usr/bin/notify-send", "--app-name={session}", "x"]]`,
			`notify[0][1]: --app-name={session} holds {session} in an option ("--app-name="): the agent's value could become the option's or a file's name` +
				"\nhint: give the option as an argument of its own and the value as the next one, starting with fixed text"},
		{"placeholder attached to a short option", `notify = [["/usr/bin/curl", "-d{reason}", "https://x"]]`, `notify[0][1]: -d{reason} holds {reason} in an option ("-d")`},
		{"file reference", `notify = [["/usr/bin/curl", "-d", "@/tmp/{session}", "https://x"]]`,
			`notify[0][2]: @/tmp/{session} starts with "@", a file reference, and holds {session}: the agent would choose the file`},
		{"curl --data-urlencode without =", `notify = [["/usr/bin/curl", "--data-urlencode", "reason: {reason}", "https://x"]]`,
			"notify[0][2]: curl's --data-urlencode reads a file when its value holds an '@' before any '=', and {reason} may hold one\nhint: write a '=' before it"},
		{"curl --url-query without =", `notify = [["/usr/bin/curl", "--url-query", "q{reason}", "https://x"]]`, `notify[0][2]: curl's --url-query reads a file`},
		{"curl -F", `notify = [["/usr/bin/curl", "-F", "m={reason}", "https://x"]]`,
			"notify[0][2]: {reason} is an argument of curl where curl may read it as an option's file or name\n" +
				"hint: give it as the value of -d, --data, --data-ascii, --data-binary, --data-raw, -H, --header, --form-string, after '=' in the value of --data-urlencode or --url-query, or in an http(s) URL"},
		{"curl -K", `notify = [["/usr/bin/curl", "-K", "/etc/{session}", "https://x"]]`, `notify[0][2]: {session} is an argument of curl where curl may read it`},
		{"curl URL's host", `notify = [["/usr/bin/curl", "-g", "https://{host}/t"]]`,
			"notify[0][2]: the URL https://{host}/t holds {host} before the end of its host, so the agent would choose the server\nhint: put placeholders only after the host's /"},
		{"curl URL's host, extended", `notify = [["/usr/bin/curl", "-g", "https://ntfy.sh{session}"]]`, `notify[0][2]: the URL https://ntfy.sh{session} holds {session} before the end of its host`},
		{"curl URL without -g", `notify = [["/usr/bin/curl", "-d", "x", "https://ntfy.sh/{session}"]]`,
			`notify[0][3]: the URL https://ntfy.sh/{session} holds {session}, which curl would expand as a glob ([1-1000000] is a million requests); add -g (--globoff)`},
		{"not a list", `notify = "/usr/bin/notify-send"`, `notify`},
		{"empty notifier", `notify = [[]]`, "notify[0]: is empty\nhint: a notifier is a list whose first element is the program's absolute path"},
		{"relative program", `notify = [["notify-send", "x"]]`, `notify[0][0] (the program) "notify-send" is not an absolute path; no PATH is searched for a notifier`},
		{"unclean program", `notify = [["/usr/bin/../bin/curl"]]`, `notify[0][0] (the program) "/usr/bin/../bin/curl" is not a clean path; write "/usr/bin/curl"`},
		{"placeholder in program", `notify = [["/usr/bin/{session}"]]`, `notify[0][0] (the program) /usr/bin/{session} holds a brace; the program is a fixed path, placeholders go in its arguments`},
		{"empty program", `notify = [["", "x"]]`, `notify[0][0] (the program) is empty; it must be an absolute path`},
		{"unknown placeholder", `notify = [["/usr/bin/true", "ok", "{sesion} asks"]]`,
			`notify[0][2]: unknown placeholder {sesion} at byte 1; the placeholders are {id} {session} {host} {user} {uid} {run_as} {command} {reason}`},
		{"second notifier", `notify = [["/usr/bin/true"], ["/usr/bin/curl", "-d", "{cmd}", "http://x"]]`, `notify[1][2]: unknown placeholder {cmd} at byte 1`},
		{"not a placeholder", `notify = [["/usr/bin/true", "{\"text\": \"{command}\"}"]]`,
			`notify[0][1]: {"text": "{command} at byte 1 is not a placeholder; write {{ and }} for literal braces`},
		{"unclosed brace", `notify = [["/usr/bin/true", "a {session"]]`, `notify[0][1]: the "{" at byte 3 is not closed; write {{ for a literal {`},
		{"lone closing brace", `notify = [["/usr/bin/true", "a}"]]`, `notify[0][1]: the "}" at byte 2 closes no placeholder; write }} for a literal }`},
		{"NUL in argument", `notify = [["/usr/bin/true", "a\u0000b"]]`, `notify[0][1]: a\x00b contains a NUL byte`},
		{"too many", `notify = [["/a"],["/a"],["/a"],["/a"],["/a"],["/a"],["/a"],["/a"],["/a"]]`, `notify: lists 9 notifiers; at most 8 are allowed`},
		{"root user", `notify_user = "root"`, `notify_user: "root" is root; notifiers run commands with text the agent chose and never run as root`},
		{"root uid", `notify_user = "0"`, `notify_user: "0" is root`},
		{"empty user", `notify_user = ""`, `notify_user: must not be empty`},
		{"bad user", `notify_user = "a b"`, `notify_user: "a b" is not a valid user name`},
		{"zero timeout", `notify_timeout = "0s"`, `notify_timeout: "0s" is out of range: it must be from 100ms to 10m`},
		{"bare timeout", `notify_timeout = 10`, `a duration must be a string with a unit`},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tt.content + "\n"))
			if err == nil || !strings.Contains(withHints(err), tt.want) {
				t.Errorf("Parse(%q):\n got error %v\nwant one containing %q", tt.content, err, tt.want)
			}
		})
	}

	accepted := []struct {
		name, content string
		want          [][]string
	}{
		{"notify-send", `notify = [["/usr/bin/notify-send", "agent-sudo: {session} asks", "command: {command}"]]`,
			[][]string{{"/usr/bin/notify-send", "agent-sudo: {session} asks", "command: {command}"}}},
		{"two, multi-line", "notify = [\n  [\"/usr/bin/notify-send\", \"id {id}\"],\n  [\"/usr/bin/curl\", \"-fsS\", \"-d\", \"session {session}: {command} ({reason}) {user} {uid} {host} {run_as}\", \"http://127.0.0.1/t\"],\n]",
			[][]string{{"/usr/bin/notify-send", "id {id}"}, {"/usr/bin/curl", "-fsS", "-d", "session {session}: {command} ({reason}) {user} {uid} {host} {run_as}", "http://127.0.0.1/t"}}},
		{"curl's safe places", `notify = [["/usr/bin/curl", "-q", "-g", "-H", "Title: {session}", "--data-raw", "x {command}", "--data-urlencode", "reason={reason}", "--url-query", "=q {id}", "https://x/{host}"]]`,
			[][]string{{"/usr/bin/curl", "-q", "-g", "-H", "Title: {session}", "--data-raw", "x {command}", "--data-urlencode", "reason={reason}", "--url-query", "=q {id}", "https://x/{host}"}}},
		{"literal braces", `notify = [["/usr/bin/curl", "-d", "{{\"text\": \"{command}\"}}"]]`,
			[][]string{{"/usr/bin/curl", "-d", `{{"text": "{command}"}}`}}},
		{"program alone", `notify = [["/usr/local/bin/ping-me"]]`, [][]string{{"/usr/local/bin/ping-me"}}},
		{"none", `notify = []`, [][]string{}},
	}
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Parse([]byte(tt.content + "\n"))
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.content, err)
			}
			if !slices.EqualFunc(c.Notify, tt.want, slices.Equal) {
				t.Errorf("Parse(%q).Notify = %q, want %q", tt.content, c.Notify, tt.want)
			}
		})
	}

	d := config.Default()
	if len(d.Notify) != 0 || d.NotifyUser != "nobody" || d.NotifyTimeout.Duration != 10*time.Second {
		t.Errorf("defaults: notify %q, notify_user %q, notify_timeout %s; want none, \"nobody\", 10s", d.Notify, d.NotifyUser, d.NotifyTimeout)
	}
}

// TestLintNotifyUser: with notifiers, the linter (and so --check-config)
// warns when notify_user may use the agent socket, whether by
// allowed_users, by allowed_groups, or by socket_group when neither is
// set; not when the user may not, nor without notifiers.
func TestLintNotifyUser(t *testing.T) {
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	grp, err := user.LookupGroupId(nobody.Gid)
	if err != nil {
		t.Skipf("nobody's group %s has no name: %v", nobody.Gid, err)
	}
	const notifier = "notify = [[\"/usr/bin/true\"]]\nnotify_user = \"nobody\"\n"
	tests := []struct {
		name, content, want string
	}{
		{"allowed_users", notifier + "allowed_users = [\"nobody\"]\n", `"nobody" is listed in allowed_users as "nobody", so it may use the agent socket`},
		{"allowed_groups", notifier + "allowed_groups = [\"" + grp.Name + "\"]\n", `"nobody" is a member of allowed_groups "` + grp.Name + `", so it may use the agent socket`},
		{"socket_group", notifier + "socket_group = \"" + grp.Name + "\"\n", `"nobody" is a member of socket_group "` + grp.Name + `", so it may use the agent socket`},
		{"not allowed", notifier + "allowed_users = [\"root\"]\n", ""},
		{"socket_group set aside by allowed_users", notifier + "socket_group = \"" + grp.Name + "\"\nallowed_users = [\"root\"]\n", ""},
		{"no notifiers", "notify_user = \"nobody\"\nallowed_users = [\"nobody\"]\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Parse([]byte(tt.content))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range c.Lint() {
				if w.Rule == config.NotifyUserWarning {
					got = append(got, w.Message)
				}
			}
			switch {
			case tt.want == "" && len(got) != 0:
				t.Errorf("warned %q, want no warning", got)
			case tt.want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], tt.want) || !strings.Contains(got[0], "notifications only inform, decide at a console")):
				t.Errorf("warnings %q, want one starting %q that says notifications only inform", got, tt.want)
			}
		})
	}
}

// withHints is err's message, then each of its hints (package hint) on a
// line of its own after "hint: ", as the binaries print them.
func withHints(err error) string {
	s := err.Error()
	for _, h := range hint.Of(err) {
		s += "\nhint: " + h
	}
	return s
}
