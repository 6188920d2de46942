package rules_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/internal/rules"
)

// TestAllowPathArguments is the class of issue 10's H3: a wildcard in an
// allow rule's pattern must not reach outside what the pattern describes.
// Each hostile argument matches its pattern as a string; the allow rule must
// not apply, so the stage asks (or, with a deny rule after it, is denied).
func TestAllowPathArguments(t *testing.T) {
	tests := []struct {
		pattern string
		arg     string
		allowed bool
	}{
		// A directory prefix: "/var/log/*".
		{"/var/log/*", "/var/log/syslog", true},
		{"/var/log/*", "/var/log/nginx/access.log", true},
		{"/var/log/*", "/var/log/a..b", true},
		{"/var/log/*", "/var/log/...", true},
		{"/var/log/*", "/var/log/.hidden", true},
		{"/var/log/*", "/var/log/../../etc/shadow", false},
		{"/var/log/*", "/var/log/..", false},
		{"/var/log/*", "/var/log/.", false},
		{"/var/log/*", "/var/log/./x", false},
		{"/var/log/*", "/var/log/nginx/../../../etc/shadow", false},
		{"/var/log/*", "/var/log/nginx/..", false},
		{"/var/log/*", "/var/log//etc/shadow", false},
		{"/var/log/*", "/var/log/x//y", false},
		{"/var/log/*", "/var/log/", false},
		{"/var/log/*", "/var/log/nginx/", false},
		{"/var/log/*", "/var/log/x\x00/../../etc/shadow", false},
		{"/var/log/*", "/var/log/x\n", false},
		{"/var/log/*", "/var/log/x\x1b[2J", false},
		{"/var/log/*", "/var/log/x\u0085", false},
		{"/var/log/*", "/var/log/\xff", false},
		// A pattern that ends in '/' allows a trailing '/', nothing more.
		{"/srv/www/*/", "/srv/www/site/", true},
		{"/srv/www/*/", "/srv/www/../", false},
		{"/srv/www/*/", "/srv/www//", false},
		// A file name pattern inside a directory.
		{"/etc/nginx/sites-available/*.conf", "/etc/nginx/sites-available/a.conf", true},
		{"/etc/nginx/sites-available/*.conf", "/etc/nginx/sites-available/../../shadow.conf", false},
		// An option with a path value.
		{"--file=/var/log/*", "--file=/var/log/app.log", true},
		{"--file=/var/log/*", "--file=/var/log/../x", false},
		{"--file=/var/log/*", "--file=/var/log/x/../../../etc/shadow", false},
		// A relative directory prefix.
		{"build/*", "build/out.o", true},
		{"build/*", "build/../../etc/passwd", false},
		// A '/' only after a wildcard: the whole argument must be a clean
		// absolute path.
		{"*/access.log", "/var/log/nginx/access.log", true},
		{"*/access.log", "../../access.log", false},
		{"*/access.log", "/var/log/../../access.log", false},
		{"*/access.log", "x/access.log", false},
		{"--*=/etc/*", "--file=/etc/x", false},
		// A pattern without '/' is a name, never a path.
		{"*.conf", "site.conf", true},
		{"*.conf", "../../etc/x.conf", false},
		{"*.conf", "/etc/x.conf", false},
		{"*.conf", "sub/x.conf", false},
		{"*", "nginx", true},
		{"*", "..", false},
		{"*", ".", false},
		{"*", "/", false},
		{"*", "a\nb", false},
		{"--file=*", "--file=x", true},
		{"--file=*", "--file=..", false},
		{"--file=*", "--file=../x", false},
		{"*:*", "alice:alice", true},
		{"*:*", "alice:..", false},
		{"*.service", "nginx.service", true},
		// A leading wildcard never turns into an option.
		{"*.service", "-Hevil.service", false},
		{"*", "--help", false},
		{"*", "-", false},
		{"-*", "-v", true},
		{"--file=*", "--file=-", true},
		// Literal patterns match only what their author wrote, and so need
		// no check.
		{"/var/log/../x", "/var/log/../x", true},
		{".", ".", true},
	}
	for _, tt := range tests {
		e, err := rules.New([]rules.Rule{allow("r", "cat", tt.pattern), deny("no cat", "cat", "**")}, trusted, nil)
		if err != nil {
			t.Fatal(err)
		}
		d := e.Decide(q(st("/usr/bin/cat", tt.arg)))
		want := rules.Deny
		if tt.allowed {
			want = rules.Allow
		}
		if d.Action != want {
			t.Errorf("allow cat %q, then deny cat **; cat %q: got %s (%s), want %s", tt.pattern, tt.arg, d.Action, d.Reason, want)
		}
		// Without the deny rule the stage asks and says which rule passed.
		e, err = rules.New([]rules.Rule{allow("r", "cat", tt.pattern)}, trusted, nil)
		if err != nil {
			t.Fatal(err)
		}
		d = e.Decide(q(st("/usr/bin/cat", tt.arg)))
		if !tt.allowed && (d.Action != rules.Ask || len(d.Stages[0].Passed) != 1 || !strings.Contains(d.Reason, `(rule "r" does not allow it: argument 1 `)) {
			t.Errorf("allow cat %q; cat %q: got %s (%s), want ask naming rule r", tt.pattern, tt.arg, d.Action, d.Reason)
		}
		if !utf8.ValidString(d.Reason) || strings.ContainsAny(d.Reason, "\x00\n\x1b\u0085") {
			t.Errorf("reason carries the argument's control characters: %q", d.Reason)
		}
	}
}

// TestDenyAndAskIgnoreAllowConditions: the conditions that stop an allow
// rule never stop a deny or ask rule, so they can only make a decision more
// careful.
func TestDenyAndAskIgnoreAllowConditions(t *testing.T) {
	e, err := rules.New([]rules.Rule{
		deny("no etc", "rm", "-rf", "/etc/*"),
		ask("tee asks", "tee", "/var/log/*"),
	}, trusted, nil)
	if err != nil {
		t.Fatal(err)
	}
	qq := q(st("/usr/bin/rm", "-rf", "/etc/../etc/x"))
	qq.Env, qq.ForwardAgent = []string{"DEBIAN_FRONTEND"}, true
	if d := e.Decide(qq); d.Action != rules.Deny {
		t.Errorf("deny rule with an unclean path, env and forward_agent: got %s (%s)", d.Action, d.Reason)
	}
	qq.Stages = []rules.Stage{st("/usr/bin/tee", "/var/log/../x")}
	if d := e.Decide(qq); d.Action != rules.Ask || d.Rule != "tee asks" {
		t.Errorf("ask rule with an unclean path: got %s by %q (%s)", d.Action, d.Rule, d.Reason)
	}
}

// TestAllowEnv is the rule half of issue 10's C1: an allow rule covers a
// request that carries environment variables only if it lists each of them.
func TestAllowEnv(t *testing.T) {
	withEnv := func(r rules.Rule, env ...string) rules.Rule { r.Env = env; return r }
	tests := []struct {
		name string
		rule rules.Rule
		env  []string
		want rules.Action
	}{
		{"no env, rule without env", allow("r", "dpkg-reconfigure", "**"), nil, rules.Allow},
		{"env, rule without env", allow("r", "dpkg-reconfigure", "**"), []string{"DEBIAN_FRONTEND"}, rules.Ask},
		{"env, rule with empty env", withEnv(allow("r", "dpkg-reconfigure", "**")), []string{"DEBIAN_FRONTEND"}, rules.Ask},
		{"env listed", withEnv(allow("r", "dpkg-reconfigure", "**"), "DEBIAN_FRONTEND"), []string{"DEBIAN_FRONTEND"}, rules.Allow},
		{"one of two listed", withEnv(allow("r", "dpkg-reconfigure", "**"), "DEBIAN_FRONTEND"), []string{"DEBIAN_FRONTEND", "TERM"}, rules.Ask},
		{"case matters", withEnv(allow("r", "dpkg-reconfigure", "**"), "DEBIAN_FRONTEND"), []string{"debian_frontend"}, rules.Ask},
		{"prefix", withEnv(allow("r", "locale"), "LC_*"), []string{"LC_ALL", "LC_CTYPE"}, rules.Allow},
		{"prefix does not cover others", withEnv(allow("r", "locale"), "LC_*"), []string{"LANG"}, rules.Ask},
		{"star", withEnv(allow("r", "locale"), "*"), []string{"LANG", "TZ"}, rules.Allow},
		{"listed but not sent", withEnv(allow("r", "locale"), "LANG"), nil, rules.Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := rules.New([]rules.Rule{tt.rule}, trusted, nil)
			if err != nil {
				t.Fatal(err)
			}
			qq := q(st("/usr/bin/"+tt.rule.Match[0], "-f", "noninteractive", "tzdata"))
			if tt.rule.Match[0] == "locale" {
				qq = q(st("/usr/bin/locale"))
			}
			qq.Env = tt.env
			if d := e.Decide(qq); d.Action != tt.want {
				t.Fatalf("env %q: got %s (%s), want %s", tt.env, d.Action, d.Reason, tt.want)
			}
		})
	}
	// A later rule that lists the variable still allows.
	e, err := rules.New([]rules.Rule{allow("plain", "apt-get", "update"), withEnv(allow("with env", "apt-get", "update"), "DEBIAN_FRONTEND")}, trusted, nil)
	if err != nil {
		t.Fatal(err)
	}
	qq := q(st("/usr/bin/apt-get", "update"))
	qq.Env = []string{"DEBIAN_FRONTEND"}
	if d := e.Decide(qq); d.Action != rules.Allow || d.Rule != "with env" {
		t.Errorf("got %s by %q (%s), want allow by the rule listing the variable", d.Action, d.Rule, d.Reason)
	}
}

// TestAllowForwardAgent is issue 10's M2: an allow rule covers a request
// that forwards the human's SSH agent only if it says forward_agent = true.
func TestAllowForwardAgent(t *testing.T) {
	fwd := allow("git fwd", "git", "fetch")
	fwd.ForwardAgent = true
	for _, tt := range []struct {
		rule    rules.Rule
		forward bool
		want    rules.Action
	}{
		{allow("git", "git", "fetch"), false, rules.Allow},
		{allow("git", "git", "fetch"), true, rules.Ask},
		{fwd, true, rules.Allow},
		{fwd, false, rules.Allow},
	} {
		e, err := rules.New([]rules.Rule{tt.rule}, trusted, nil)
		if err != nil {
			t.Fatal(err)
		}
		qq := q(st("/usr/bin/git", "fetch"))
		qq.ForwardAgent = tt.forward
		if d := e.Decide(qq); d.Action != tt.want {
			t.Errorf("rule forward_agent=%v, request forward_agent=%v: got %s (%s), want %s", tt.rule.ForwardAgent, tt.forward, d.Action, d.Reason, tt.want)
		}
	}
}

// fakeAccounts resolves a fixed set of names.
type fakeAccounts struct{}

func (fakeAccounts) LookupUser(name string) (uint32, error) {
	if name == "alice" {
		return 1000, nil
	}
	return 0, errors.New("unknown user")
}

func (fakeAccounts) LookupGroup(name string) (uint32, error) {
	if name == "devs" {
		return 2000, nil
	}
	return 0, errors.New("unknown group")
}

// TestPeerIdentity is issue 10's L5: the session is a label the client
// chooses; user, uid and group are what the kernel says.
func TestPeerIdentity(t *testing.T) {
	uid := func(r rules.Rule, id int64) rules.Rule { r.UID = &id; return r }
	usr := func(r rules.Rule, u string) rules.Rule { r.User = u; return r }
	grp := func(r rules.Rule, g string) rules.Rule { r.Group = g; return r }
	sess := func(r rules.Rule, s string) rules.Rule { r.Session = s; return r }
	alice := &rules.Peer{UID: 1000, GIDs: []uint32{1000, 2000}}
	mallory := &rules.Peer{UID: 1001, GIDs: []uint32{1001}}
	tests := []struct {
		name string
		rule rules.Rule
		peer *rules.Peer
		want rules.Action
	}{
		{"user name, right peer", usr(allow("r", "id"), "alice"), alice, rules.Allow},
		{"user name, other peer with the session label", sess(usr(allow("r", "id"), "alice"), "claude-*"), mallory, rules.Ask},
		{"session alone lets anyone in", sess(allow("r", "id"), "claude-*"), mallory, rules.Allow},
		{"user id string", usr(allow("r", "id"), "1000"), alice, rules.Allow},
		{"user id string, other", usr(allow("r", "id"), "1000"), mallory, rules.Ask},
		{"uid", uid(allow("r", "id"), 1000), alice, rules.Allow},
		{"uid, other", uid(allow("r", "id"), 1000), mallory, rules.Ask},
		{"group name", grp(allow("r", "id"), "devs"), alice, rules.Allow},
		{"group name, other", grp(allow("r", "id"), "devs"), mallory, rules.Ask},
		{"group id", grp(allow("r", "id"), "1001"), mallory, rules.Allow},
		{"unknown peer", uid(allow("r", "id"), 1000), nil, rules.Ask},
		{"deny by user", usr(deny("r", "id"), "alice"), alice, rules.Deny},
		{"deny by user, other", usr(deny("r", "id"), "alice"), mallory, rules.Ask},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := rules.New([]rules.Rule{tt.rule}, trusted, fakeAccounts{})
			if err != nil {
				t.Fatal(err)
			}
			qq := q(st("/usr/bin/id"))
			qq.Peer = tt.peer
			if d := e.Decide(qq); d.Action != tt.want {
				t.Fatalf("got %s (%s), want %s", d.Action, d.Reason, tt.want)
			}
		})
	}
	// Without accounts a name cannot be resolved, so the rule never applies.
	e, err := rules.New([]rules.Rule{usr(allow("r", "id"), "alice")}, trusted, nil)
	if err != nil {
		t.Fatal(err)
	}
	qq := q(st("/usr/bin/id"))
	qq.Peer = alice
	if d := e.Decide(qq); d.Action != rules.Ask {
		t.Errorf("unresolved user name: got %s, want ask", d.Action)
	}
	// A name the accounts do not know is an error naming the rule.
	if _, err := rules.New([]rules.Rule{usr(allow("r", "id"), "bob")}, trusted, fakeAccounts{}); err == nil || !strings.Contains(err.Error(), `rule 1 ("r"): user "bob"`) {
		t.Errorf("unknown user: got %v", err)
	}
	if _, err := rules.New([]rules.Rule{grp(allow("r", "id"), "ops")}, trusted, fakeAccounts{}); err == nil || !strings.Contains(err.Error(), `group "ops"`) {
		t.Errorf("unknown group: got %v", err)
	}
}

// TestNewRuleKeyErrors covers the validation of the keys added for issue 10.
func TestNewRuleKeyErrors(t *testing.T) {
	id := int64(5)
	bad, neg := int64(1<<32-1), int64(-1)
	tests := []struct {
		rule rules.Rule
		want string
	}{
		{rules.Rule{Action: rules.Deny, Match: []string{"x"}, Env: []string{"A"}}, `env is only meaningful on an allow rule (this one is "deny")`},
		{rules.Rule{Action: rules.Ask, Match: []string{"x"}, Env: []string{}}, `env is only meaningful on an allow rule`},
		{rules.Rule{Action: rules.Deny, Match: []string{"x"}, ForwardAgent: true}, `forward_agent is only meaningful on an allow rule`},
		{rules.Rule{Action: rules.Allow, Match: []string{"x"}, Env: []string{"1A"}}, `env[0]: "1A" is not a valid variable name`},
		{rules.Rule{Action: rules.Allow, Match: []string{"x"}, Env: []string{"A", "B*C"}}, `env[1]: "B*C"`},
		{rules.Rule{Action: rules.Allow, Match: []string{"x"}, Env: []string{"**"}}, `env[0]: "**"`},
		{rules.Rule{Action: rules.Allow, Match: []string{"x"}, User: "a b"}, `user: "a b" is not a valid user name`},
		{rules.Rule{Action: rules.Allow, Match: []string{"x"}, User: "-a"}, `user: "-a"`},
		{rules.Rule{Action: rules.Allow, Match: []string{"x"}, User: "4294967295"}, `user: "4294967295" is not a valid numeric user id`},
		{rules.Rule{Action: rules.Allow, Match: []string{"x"}, User: "a", UID: &id}, `user and uid both name the peer`},
		{rules.Rule{Action: rules.Allow, Match: []string{"x"}, UID: &bad}, `uid: 4294967295 is not a valid uid`},
		{rules.Rule{Action: rules.Allow, Match: []string{"x"}, UID: &neg}, `uid: -1 is not a valid uid (0 to 4294967294)`},
		{rules.Rule{Action: rules.Allow, Match: []string{"x"}, Group: "a:b"}, `group: "a:b" is not a valid group name`},
	}
	for _, tt := range tests {
		_, err := rules.New([]rules.Rule{tt.rule}, trusted, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v): got %v, want an error containing %q", tt.rule, err, tt.want)
		}
	}
}

// TestAllowStdin: an allow rule covers a request carrying the stdin
// extension only if it says stdin = true, for every stage (the content
// flows down the pipeline); a rule without it still covers requests
// without stdin, and deny rules apply whatever the stdin.
func TestAllowStdin(t *testing.T) {
	tee := allow("tee motd", "tee", "/etc/motd")
	teeStdin := tee
	teeStdin.Stdin = true
	catStdin := allow("cat", "cat")
	catStdin.Stdin = true
	for _, tt := range []struct {
		name  string
		rules []rules.Rule
		q     rules.Query
		want  rules.Action
	}{
		{"no stdin, plain rule", []rules.Rule{tee}, q(st("/usr/bin/tee", "/etc/motd")), rules.Allow},
		{"stdin, plain rule", []rules.Rule{tee}, withStdin(q(st("/usr/bin/tee", "/etc/motd"))), rules.Ask},
		{"stdin, rule says stdin", []rules.Rule{teeStdin}, withStdin(q(st("/usr/bin/tee", "/etc/motd"))), rules.Allow},
		{"no stdin, rule says stdin", []rules.Rule{teeStdin}, q(st("/usr/bin/tee", "/etc/motd")), rules.Allow},
		{"stdin through a stage whose rule does not say it", []rules.Rule{catStdin, tee},
			withStdin(q(st("/usr/bin/cat"), st("/usr/bin/tee", "/etc/motd"))), rules.Ask},
		{"stdin, every stage's rule says it", []rules.Rule{catStdin, teeStdin},
			withStdin(q(st("/usr/bin/cat"), st("/usr/bin/tee", "/etc/motd"))), rules.Allow},
		{"deny applies with stdin", []rules.Rule{deny("no tee", "tee", "**"), teeStdin},
			withStdin(q(st("/usr/bin/tee", "/etc/motd"))), rules.Deny},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := rules.New(tt.rules, trusted, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := e.Decide(tt.q); d.Action != tt.want {
				t.Errorf("got %s (%s), want %s", d.Action, d.Reason, tt.want)
			}
		})
	}
	bad := deny("d", "tee", "**")
	bad.Stdin = true
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "stdin is only meaningful on an allow rule") {
		t.Errorf("stdin on a deny rule: got %v", err)
	}
}

func withStdin(qq rules.Query) rules.Query {
	qq.Stdin = true
	return qq
}
