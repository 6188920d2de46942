package runner

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/proto"
)

func TestBuildEnvBase(t *testing.T) {
	alice := Target{Name: "alice", UID: 1000, GID: 1000, Home: "/home/alice"}
	tests := []struct {
		name  string
		t     Target
		req   map[string]string
		allow []string
		sock  string
		want  []string
	}{
		{
			name: "base only, nothing inherited",
			t:    alice,
			want: []string{"HOME=/home/alice", "LOGNAME=alice", "PATH=" + testSecurePath, "USER=alice"},
		},
		{
			name: "no home means /",
			t:    Target{Name: "svc"},
			want: []string{"HOME=/", "LOGNAME=svc", "PATH=" + testSecurePath, "USER=svc"},
		},
		{
			name: "agent socket",
			t:    alice,
			sock: "/run/agent-sudo/fwd/1.sock",
			want: []string{"HOME=/home/alice", "LOGNAME=alice", "PATH=" + testSecurePath, "SSH_AUTH_SOCK=/run/agent-sudo/fwd/1.sock", "USER=alice"},
		},
		{
			name: "request variables sorted in",
			t:    alice,
			req:  map[string]string{"TZ": "UTC", "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C", "NEEDRESTART_MODE": "a", "TERM": "dumb"},
			want: []string{
				"DEBIAN_FRONTEND=noninteractive", "HOME=/home/alice", "LANG=C.UTF-8", "LC_ALL=C", "LOGNAME=alice",
				"NEEDRESTART_MODE=a", "PATH=" + testSecurePath, "TERM=dumb", "TZ=UTC", "USER=alice",
			},
		},
		{
			name:  "empty locale and a value with '='",
			t:     alice,
			req:   map[string]string{"LANG": "", "MYAPP_OPT": "a=b"},
			allow: []string{"MYAPP_*"},
			want:  []string{"HOME=/home/alice", "LANG=", "LOGNAME=alice", "MYAPP_OPT=a=b", "PATH=" + testSecurePath, "USER=alice"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("LD_PRELOAD_TEST_MARKER", "from-daemon")
			got, err := mustPolicy(t, tt.allow).BuildEnv(tt.t, tt.req, tt.sock)
			if err != nil {
				t.Fatalf("BuildEnv: %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestBuildEnvDeterministic(t *testing.T) {
	req := map[string]string{"LC_A": "C", "LC_B": "C", "LC_C": "C", "LANG": "C", "TZ": "UTC", "X_1": "1", "X_2": "2"}
	p := mustPolicy(t, []string{"X_*"})
	first, err := p.BuildEnv(Target{Name: "a"}, req, "")
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, err := p.BuildEnv(Target{Name: "a"}, req, "")
		if err != nil || !slices.Equal(again, first) {
			t.Fatalf("BuildEnv not deterministic: %q vs %q (%v)", again, first, err)
		}
	}
}

func TestBuildEnvAllowlist(t *testing.T) {
	tests := []struct {
		name  string
		allow []string
		req   map[string]string
		ok    bool
	}{
		{"default LANG", nil, map[string]string{"LANG": "de_DE.UTF-8"}, true},
		{"default LC_ glob", nil, map[string]string{"LC_MESSAGES": "C"}, true},
		{"default TZ", nil, map[string]string{"TZ": "Europe/Paris"}, true},
		{"default TERM", nil, map[string]string{"TERM": "xterm-256color"}, true},
		{"default DEBIAN_FRONTEND", nil, map[string]string{"DEBIAN_FRONTEND": "noninteractive"}, true},
		{"default NEEDRESTART_MODE", nil, map[string]string{"NEEDRESTART_MODE": "l"}, true},
		{"not allowlisted is refused, not dropped", nil, map[string]string{"FOO": "1"}, false},
		{"lowercase proxy not allowlisted", nil, map[string]string{"http_proxy": "http://p:3128"}, false},
		{"configured name", []string{"FOO"}, map[string]string{"FOO": "1"}, true},
		{"configured name is exact", []string{"FOO"}, map[string]string{"FOOBAR": "1"}, false},
		{"configured glob", []string{"MYAPP_*"}, map[string]string{"MYAPP_MODE": "fast", "MYAPP_": "x"}, true},
		{"glob does not match shorter", []string{"MYAPP_*"}, map[string]string{"MYAPP": "x"}, false},
		{"allowlist is case-sensitive", []string{"FOO"}, map[string]string{"foo": "1"}, false},
		{"configured lowercase", []string{"http_proxy", "https_proxy"}, map[string]string{"http_proxy": "http://user:p%40ss@proxy.example:3128/"}, true},
		{"LANGUAGE is not LANG", nil, map[string]string{"LANGUAGE": "de"}, false},
		{"one bad among good refuses all", nil, map[string]string{"LANG": "C", "FOO": "1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := mustPolicy(t, tt.allow).BuildEnv(Target{Name: "u"}, tt.req, "")
			if tt.ok {
				if err != nil {
					t.Fatalf("BuildEnv: %v", err)
				}
				for k, v := range tt.req {
					if !slices.Contains(env, k+"="+v) {
						t.Errorf("%s=%s missing from %q", k, v, env)
					}
				}
				return
			}
			if err == nil {
				t.Fatalf("BuildEnv accepted %v: %q", tt.req, env)
			}
			if env != nil {
				t.Errorf("BuildEnv returned an environment with its error")
			}
			if !strings.Contains(err.Error(), "env_allow") {
				t.Errorf("error %q does not say how to allow the variable", err)
			}
		})
	}
}

// TestBuildEnvDenied checks the deny list as a second line of defence: a
// policy built by hand (bypassing NewEnvPolicy, which would refuse these
// globs) that allowlists everything still refuses every denied variable,
// under any spelling.
func TestBuildEnvDenied(t *testing.T) {
	names := []string{
		"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "ld_preload", "Ld_Preload", "DYLD_INSERT_LIBRARIES", "_RLD_ROOT",
		"BASH_ENV", "ENV", "BASH_FUNC_ls", "BASH_XTRACEFD", "BASH_LOADABLES_PATH",
		"PATH", "Path", "HOME", "USER", "LOGNAME", "SSH_AUTH_SOCK",
		"IFS", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "CDPATH", "GLOBIGNORE", "ZDOTDIR",
		"PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONWARNINGS", "PYTHONUSERBASE", "PYTHONINSPECT",
		"PERL5LIB", "PERL5OPT", "PERLLIB", "PERL5DB", "RUBYOPT", "RUBYLIB", "GEM_PATH",
		"NODE_OPTIONS", "NODE_PATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "CLASSPATH", "LUA_INIT", "LUA_PATH",
		"GCONV_PATH", "GETCONF_DIR", "LOCPATH", "NLSPATH", "GLIBC_TUNABLES", "TZDIR", "TMPDIR", "MALLOC_TRACE",
		"NIS_PATH", "RESOLV_HOST_CONF", "HOSTALIASES", "RES_OPTIONS", "TERMINFO",
		"OPENSSL_CONF", "APT_CONFIG", "DEBCONF_SYSTEMRC", "MAKEFILES",
		"SUDO_ASKPASS", "SUDO_EDITOR", "SUDO_USER",
		"GIT_SSH_COMMAND", "GIT_CONFIG_COUNT", "GIT_DIR", "GIT_EXEC_PATH",
		"EDITOR", "VISUAL", "PAGER", "SYSTEMD_PAGER", "LESSOPEN", "SHELL", "SSH_ASKPASS",
	}
	allowAll := &EnvPolicy{securePath: testSecurePath, allow: []string{"A*", "B*", "C*", "D*", "E*", "F*", "G*", "H*", "I*", "J*", "L*", "M*", "N*", "O*", "P*",
		"R*", "S*", "T*", "U*", "V*", "Z*", "_*", "l*"}}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			_, err := allowAll.BuildEnv(Target{Name: "u"}, map[string]string{name: "x"}, "")
			var ee *EnvError
			if !errors.As(err, &ee) {
				t.Fatalf("BuildEnv: %v, want an *EnvError", err)
			}
			if ee.Name != name || !strings.Contains(err.Error(), name) || !strings.Contains(ee.Reason, "never") {
				t.Errorf("error %q does not name %s and say it can never be allowed", err, name)
			}
		})
	}
}

func TestBuildEnvGitIdentity(t *testing.T) {
	req := map[string]string{"GIT_AUTHOR_NAME": "Renée O'Brien-Smith", "GIT_COMMITTER_EMAIL": "a@example.org", "GIT_AUTHOR_DATE": "1700000000 +0100"}
	if _, err := mustPolicy(t, nil).BuildEnv(Target{Name: "u"}, req, ""); err == nil {
		t.Error("git identity accepted without being allowlisted")
	}
	p := mustPolicy(t, []string{"GIT_AUTHOR_NAME", "GIT_COMMITTER_EMAIL", "GIT_AUTHOR_DATE"})
	if _, err := p.BuildEnv(Target{Name: "u"}, req, ""); err != nil {
		t.Errorf("allowlisted git identity refused: %v", err)
	}
	for _, bad := range []string{"$(id)", "a`id`", "x\ny", "a;b", "<a@b>"} {
		if _, err := p.BuildEnv(Target{Name: "u"}, map[string]string{"GIT_AUTHOR_NAME": bad}, ""); err == nil {
			t.Errorf("GIT_AUTHOR_NAME=%q accepted", bad)
		}
	}
}

// hostileValues are values no grammar may accept, whatever the variable:
// code for the evaluators that have read environment values (Perl, shells),
// path traversal, control characters, invisible characters and sheer size.
func hostileValues() []string {
	return []string{
		"noninteractive;BEGIN{system(\"id\")}#",
		`noninteractive;BEGIN{system("chmod u+s /bin/bash")}#`,
		"Noninteractive qx/id/",
		"noninteractive::qx",
		"a;b",
		"a`id`",
		"$(id)",
		"${IFS}",
		"a|b",
		"a&b",
		"a>b",
		"a\nb",
		"a\rb",
		"a\tb",
		"a\x1b[2Jb",
		"a\u202eb",
		"a\x00b",
		"a b",
		"a'b",
		`a"b`,
		`a\b`,
		"../../tmp/evil",
		"\xff",
		strings.Repeat("a", 70000),
	}
}

func TestEnvValueGrammarsRefuseHostileValues(t *testing.T) {
	p := mustPolicy(t, []string{"MYAPP_X", "LANGUAGE", "COLORTERM", "GIT_AUTHOR_DATE"})
	vars := []string{"DEBIAN_FRONTEND", "NEEDRESTART_MODE", "LANG", "LC_ALL", "LC_MESSAGES", "TZ", "TERM", "MYAPP_X", "LANGUAGE", "COLORTERM", "GIT_AUTHOR_DATE"}
	for _, name := range vars {
		for _, v := range hostileValues() {
			if name == "GIT_AUTHOR_DATE" && v == "a b" {
				continue // dates have spaces
			}
			if (name == "MYAPP_X" || name == "GIT_AUTHOR_DATE") && (v == "../../tmp/evil" || v == "noninteractive::qx") {
				continue // paths and colons are fine in a variable the administrator allowed
			}
			t.Run(fmt.Sprintf("%s=%.20q", name, v), func(t *testing.T) {
				_, err := p.BuildEnv(Target{Name: "u"}, map[string]string{name: v}, "")
				var ee *EnvError
				if !errors.As(err, &ee) || ee.Name != name {
					t.Fatalf("BuildEnv: %v, want an *EnvError for %s", err, name)
				}
				if !strings.Contains(ee.Reason, "the value is refused") {
					t.Errorf("reason %q does not say the value was refused", ee.Reason)
				}
				if len(v) > 8 && strings.Contains(err.Error(), v) {
					t.Errorf("error %q quotes the hostile value", err)
				}
				if len(err.Error()) > 600 {
					t.Errorf("error is %d bytes long", len(err.Error()))
				}
			})
		}
	}
}

func TestEnvValueGrammars(t *testing.T) {
	tests := []struct {
		name, value string
		ok          bool
		// want is a part of the reason, for refusals.
		want string
	}{
		{"DEBIAN_FRONTEND", "noninteractive", true, ""},
		{"DEBIAN_FRONTEND", "Noninteractive", true, ""},
		{"DEBIAN_FRONTEND", "readline", true, ""},
		{"DEBIAN_FRONTEND", "dialog", true, ""},
		{"DEBIAN_FRONTEND", "teletype", true, ""},
		{"DEBIAN_FRONTEND", "text", true, ""},
		{"DEBIAN_FRONTEND", "web", false, "takes the answers from any local user"},
		{"DEBIAN_FRONTEND", "Web", false, "takes the answers from any local user"},
		{"DEBIAN_FRONTEND", "WEB", false, "takes the answers from any local user"},
		{"DEBIAN_FRONTEND", "gnome", true, ""},
		{"DEBIAN_FRONTEND", "kde", true, ""},
		{"DEBIAN_FRONTEND", "editor", true, ""},
		{"DEBIAN_FRONTEND", "passthrough", true, ""},
		{"DEBIAN_FRONTEND", "NONINTERACTIVE", false, "accepts a debconf frontend"},
		{"DEBIAN_FRONTEND", "", false, "it is empty"},
		{"DEBIAN_FRONTEND", "noninteractive;BEGIN{system(\"id\")}#", false, "byte 14 is ';'"},
		{"DEBIAN_FRONTEND", "noninteractive\n", false, "byte 14 is '\\n'"},
		{"DEBIAN_FRONTEND", "qt", false, "not one of the accepted values"},
		{"NEEDRESTART_MODE", "a", true, ""},
		{"NEEDRESTART_MODE", "l", true, ""},
		{"NEEDRESTART_MODE", "i", true, ""},
		{"NEEDRESTART_MODE", "A", false, "a (restart automatically)"},
		{"NEEDRESTART_MODE", "a\n", false, "byte 1 is '\\n'"},
		{"NEEDRESTART_MODE", "auto", false, "not one of"},
		{"LANG", "", true, ""},
		{"LANG", "C", true, ""},
		{"LANG", "POSIX", true, ""},
		{"LANG", "C.UTF-8", true, ""},
		{"LANG", "C.utf8", true, ""},
		{"LANG", "en_US.UTF-8", true, ""},
		{"LANG", "de_DE@euro", true, ""},
		{"LANG", "ca_ES.UTF-8@valencia", true, ""},
		{"LANG", "es_419.UTF-8", true, ""},
		{"LANG", "ber_MA", true, ""},
		{"LC_ALL", "sr_RS@latin", true, ""},
		{"LANG", "../../tmp/evil", false, "byte 2 is '/'"},
		{"LANG", "/tmp/locale", false, "byte 0 is '/'"},
		{"LC_ALL", "C%s", false, "byte 1 is '%'"},
		{"LANG", "en_us", false, "not a locale name"},
		{"LANG", "EN_US", false, "not a locale name"},
		{"LANG", "english", false, "not a locale name"},
		{"LANG", "en_US..UTF-8", false, "not a locale name"},
		{"LANG", "en_US.", false, "not a locale name"},
		{"LANG", "C.UTF-8@", false, "not a locale name"},
		{"LANG", strings.Repeat("a", 65), false, "65 bytes long"},
		{"TZ", "UTC", true, ""},
		{"TZ", "Europe/Paris", true, ""},
		{"TZ", "Etc/GMT+1", true, ""},
		{"TZ", "Etc/GMT-14", true, ""},
		{"TZ", "America/Argentina/Buenos_Aires", true, ""},
		{"TZ", "America/Port-au-Prince", true, ""},
		{"TZ", "EST5EDT", true, ""},
		{"TZ", "XYZ-3", true, ""}, // no zone file: glibc reads a fixed offset
		{"TZ", "UTC0", true, ""},
		{"TZ", ":Europe/Paris", false, "byte 0 is ':'"},
		{"TZ", "/usr/share/zoneinfo/UTC", false, "byte 0 is '/'"},
		{"TZ", "/etc/shadow", false, "byte 0 is '/'"},
		{"TZ", "Europe/../../x", false, "does not start with a letter"},
		{"TZ", "../../tmp/evil", false, "does not start with a letter"},
		{"TZ", "Europe//Paris", false, "is empty"},
		{"TZ", "Europe/Paris/", false, "is empty"},
		{"TZ", "EST5EDT,M3.2.0,M11.1.0", false, "byte 7 is ','"},
		{"TZ", "<+03>-3", false, "byte 0 is '<'"},
		{"TZ", "Europe/Paris ", false, "byte 12 is ' '"},
		{"TZ", "", false, "it is empty"},
		{"TZ", strings.Repeat("A", 300), false, "300 bytes long"},
		{"TERM", "xterm", true, ""},
		{"TERM", "xterm-256color", true, ""},
		{"TERM", "screen.xterm-256color", true, ""},
		{"TERM", "rxvt-unicode", true, ""},
		{"TERM", "vt100", true, ""},
		{"TERM", "/tmp/terminfo", false, "byte 0 is '/'"},
		{"TERM", "-x", false, "does not start with a letter or digit"},
		{"TERM", "", false, "it is empty"},
		{"MYAPP_X", "", true, ""},
		{"MYAPP_X", "fast", true, ""},
		{"MYAPP_X", "/opt/app/bin", true, ""},
		{"MYAPP_X", "http://user:p%40ss@proxy.example:3128/", true, ""},
		{"MYAPP_X", "a=b,c=d", true, ""},
		{"MYAPP_X", "2026-01-01T00:00:00+01:00", true, ""},
		{"MYAPP_X", "a b", false, "byte 1 is ' '"},
		{"MYAPP_X", "x$(id)", false, "byte 1 is '$'"},
		{"MYAPP_X", "é", false, "byte 0 is '\\u00e9'"},
		{"MYAPP_X", strings.Repeat("a", 1025), false, "1025 bytes long"},
		{"LANGUAGE", "de_DE:de:en", true, ""},
		{"LANGUAGE", "../x", false, "byte 2 is '/'"},
		{"LANGUAGE", "x", false, "not a list of locale names"},
	}
	p := mustPolicy(t, []string{"MYAPP_X", "LANGUAGE"})
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s=%.40q", tt.name, tt.value), func(t *testing.T) {
			_, err := p.BuildEnv(Target{Name: "u"}, map[string]string{tt.name: tt.value}, "")
			if tt.ok {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			var ee *EnvError
			if !errors.As(err, &ee) || ee.Name != tt.name {
				t.Fatalf("BuildEnv: %v, want an *EnvError for %s", err, tt.name)
			}
			if !strings.Contains(ee.Reason, tt.want) {
				t.Errorf("reason %q does not contain %q", ee.Reason, tt.want)
			}
			// Every refusal says what is accepted.
			accepts := grammarFor(tt.name).accepts
			if !strings.Contains(ee.Reason, accepts) {
				t.Errorf("reason %q does not say what is accepted (%q)", ee.Reason, accepts)
			}
		})
	}
}

// TestLocaleGrammarAcceptsSupportedLocales checks the locale grammar against
// every locale glibc can build (/usr/share/i18n/SUPPORTED), when present.
func TestLocaleGrammarAcceptsSupportedLocales(t *testing.T) {
	f, err := os.Open("/usr/share/i18n/SUPPORTED")
	if err != nil {
		t.Skipf("no list of supported locales: %v", err)
	}
	defer f.Close()
	g := localeGrammar()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		n++
		if p := g.check(fields[0]); p != "" {
			t.Errorf("locale %q refused: %s", fields[0], p)
		}
	}
	if n == 0 {
		t.Error("no locale read")
	}
}

// TestTZGrammarAcceptsZoneinfo checks the TZ grammar against every file
// under /usr/share/zoneinfo, when present.
func TestTZGrammarAcceptsZoneinfo(t *testing.T) {
	const dir = "/usr/share/zoneinfo"
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no zoneinfo: %v", err)
	}
	g := tzGrammar()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		name, _ := filepath.Rel(dir, path)
		if p := g.check(name); p != "" {
			t.Errorf("zone %q refused: %s", name, p)
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("walking %s: %v (%d files)", dir, err, n)
	}
}

// TestBuildEnvReportIsBounded: a request with very many refused names gets
// an error that describes the first few and counts the rest (issue 10, M5).
func TestBuildEnvReportIsBounded(t *testing.T) {
	req := map[string]string{}
	for i := range 100_000 {
		req[fmt.Sprintf("V%05d", i)] = ""
	}
	_, err := mustPolicy(t, nil).BuildEnv(Target{Name: "u"}, req, "")
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	if len(msg) > 2048 {
		t.Errorf("error is %d bytes long, want at most 2048", len(msg))
	}
	for _, want := range []string{"V00000", "V00004", "and 99995 more"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "V00005") {
		t.Errorf("error %q describes more than %d variables", msg, MaxReportedEnvErrors)
	}
}

func TestBuildEnvBadNames(t *testing.T) {
	p := &EnvPolicy{securePath: testSecurePath, allow: []string{"A*", "B*", "L*"}}
	for _, name := range []string{"", "1ABC", "A-B", "A B", "A=B", "BASH_FUNC_ls%%", "A,B", "LANG\x00", "É"} {
		_, err := p.BuildEnv(Target{Name: "u"}, map[string]string{name: "x"}, "")
		var ee *EnvError
		if !errors.As(err, &ee) || !strings.Contains(ee.Reason, "valid variable name") {
			t.Errorf("name %q: %v, want an invalid-name *EnvError", name, err)
		}
	}
}

func TestBuildEnvReportsEveryProblem(t *testing.T) {
	_, err := mustPolicy(t, nil).BuildEnv(Target{Name: "u"}, map[string]string{"LD_PRELOAD": "x", "FOO": "1", "LANG": "C"}, "")
	if err == nil {
		t.Fatal("accepted")
	}
	for _, name := range []string{"LD_PRELOAD", "FOO"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not mention %s", err, name)
		}
	}
	if strings.Contains(err.Error(), "LANG") {
		t.Errorf("error %q mentions the accepted LANG", err)
	}
}

func TestBuildEnvBadArguments(t *testing.T) {
	ok := Target{Name: "u", Home: "/home/u"}
	tests := []struct {
		name string
		t    Target
		sock string
	}{
		{"no user name", Target{}, ""},
		{"user name with =", Target{Name: "a=b"}, ""},
		{"home with NUL", Target{Name: "u", Home: "/h\x00"}, ""},
		{"relative agent socket", ok, "agent.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if env, err := mustPolicy(t, nil).BuildEnv(tt.t, nil, tt.sock); err == nil {
				t.Errorf("BuildEnv accepted: %q", env)
			}
		})
	}
}

// TestNewEnvPolicyRefusesBadConfiguration: the policy is checked once, when
// it is built; an entry it refuses is named (issue 9).
func TestNewEnvPolicyRefusesBadConfiguration(t *testing.T) {
	tests := []struct {
		name  string
		path  string
		allow []string
		want  string
	}{
		{"empty secure path", "", nil, "secure path is empty"},
		{"relative secure path entry", "/usr/bin:bin", nil, `entry "bin" is not an absolute directory`},
		{"empty secure path entry", "/usr/bin::/bin", nil, `entry "" is not an absolute directory`},
		{"denied entry", testSecurePath, []string{"FOO", "PYTHONPATH"}, `env_allow[1]: "PYTHONPATH" is on the deny list`},
		{"glob over the deny list", testSecurePath, []string{"L*"}, `env_allow[0]: "L*" would also match LOGNAME, LD_*, LOCPATH`},
		{"every bad entry", testSecurePath, []string{"TMPDIR", "*"}, `env_allow[0]: "TMPDIR"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewEnvPolicy(tt.path, tt.allow)
			if err == nil {
				t.Fatalf("NewEnvPolicy accepted: %+v", p)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestValidAllowPattern(t *testing.T) {
	tests := []struct {
		p  string
		ok bool
	}{
		{"FOO", true},
		{"http_proxy", true},
		{"MYAPP_*", true},
		{"_X", true},
		{"LC_*", true},
		{"LANGUAGE", true},
		{"GIT_AUTHOR_NAME", true},
		{"GIT_COMMITTER_DATE", true},
		{"git_author_name", true},
		{"", false},
		{"*", false},
		{"**", false},
		{"A*B", false},
		{"*FOO", false},
		{"FOO**", false},
		{"1FOO", false},
		{"FOO-BAR", false},
		{"FOO BAR", false},
		{"LD_PRELOAD", false},
		{"ld_preload", false},
		{"LD_*", false},
		{"LD_P*", false},
		{"L*", false},
		{"l*", false},
		{"M*", false},      // MALLOC_*, MAKEFILES, MANPAGER
		{"T*", false},      // TMPDIR, TZDIR, TERMINFO
		{"PYTHON*", false}, // PYTHONPATH
		{"PYTHONPATH", false},
		{"TMPDIR", false},
		{"BASH_FUNC_*", false},
		{"SUDO_*", false},
		{"GIT_*", false},
		{"GIT_AUTHOR_*", false}, // would match GIT_AUTHOR_X, which GIT_* denies
		{"GIT_SSH*", false},
		{"DEBCONF_DEBUG", false},
		{"PATH", false},
		{"SSH_AUTH_SOCK", false},
	}
	for _, tt := range tests {
		err := ValidAllowPattern(tt.p)
		if (err == nil) != tt.ok {
			t.Errorf("ValidAllowPattern(%q) = %v, want ok %v", tt.p, err, tt.ok)
		}
		if err != nil && tt.p != "" && !strings.Contains(err.Error(), fmt.Sprintf("%q", tt.p)) {
			t.Errorf("ValidAllowPattern(%q) = %v, which does not name the entry", tt.p, err)
		}
	}
}

// TestBuiltinAllowlistIsConsistent: the built-in allowlist is valid as an
// env_allow entry would be (so it overlaps no deny rule), and each entry's
// grammar is the one its variables get.
func TestBuiltinAllowlistIsConsistent(t *testing.T) {
	for _, p := range DefaultAllowlist() {
		if err := ValidAllowPattern(p); err != nil {
			t.Errorf("built-in %q: %v", p, err)
		}
	}
	for _, d := range DenyList() {
		if d.Pattern != strings.ToUpper(d.Pattern) || d.Reason == "" {
			t.Errorf("deny entry %+v: patterns are upper case and have a reason", d)
		}
	}
}

func TestValidSecurePath(t *testing.T) {
	tests := []struct {
		p  string
		ok bool
	}{
		{"/usr/bin", true},
		{testSecurePath, true},
		{"", false},
		{":", false},
		{"/usr/bin:", false},
		{".:/usr/bin", false},
		{"/usr/bin:bin", false},
		{"/usr/bin\x00", false},
	}
	for _, tt := range tests {
		if err := ValidSecurePath(tt.p); (err == nil) != tt.ok {
			t.Errorf("ValidSecurePath(%q) = %v, want ok %v", tt.p, err, tt.ok)
		}
	}
}

// TestDebconfFrontendsMatchDebconf checks the DEBIAN_FRONTEND enumeration
// against the frontends debconf has installed, when it is: each accepted
// name is a module debconf can load, and every installed frontend module
// but the base classes is accepted.
func TestDebconfFrontendsMatchDebconf(t *testing.T) {
	const dir = "/usr/share/perl5/Debconf/FrontEnd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("debconf is not installed: %v", err)
	}
	installed := map[string]bool{}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".pm"); ok && !e.IsDir() {
			installed[name] = true
		}
	}
	baseClasses := []string{"ScreenSize", "Tty"}
	for _, f := range debconfFrontends() {
		if module := strings.ToUpper(f[:1]) + f[1:]; !installed[module] {
			t.Errorf("DEBIAN_FRONTEND=%s is accepted, but debconf has no %s/%s.pm", f, dir, module)
		}
	}
	g := debconfGrammar()
	for module := range installed {
		_, refused := debconfRefusedFrontends()[strings.ToLower(module)]
		switch accepted := g.check(strings.ToLower(module)) == ""; {
		case slices.Contains(baseClasses, module):
		case refused && accepted:
			t.Errorf("debconf frontend %s is on the refused list but DEBIAN_FRONTEND=%s is accepted", module, strings.ToLower(module))
		case !refused && !accepted:
			t.Errorf("debconf frontend %s is installed but DEBIAN_FRONTEND=%s is refused", module, strings.ToLower(module))
		}
	}
}

// FuzzEnvPolicyCheck: whatever a request carries, Check does not panic, its
// error stays short, and an accepted variable is allowlisted, not denied,
// and has a value without control characters, white space other than the
// space of the few grammars that allow it, or shell metacharacters.
func FuzzEnvPolicyCheck(f *testing.F) {
	for _, s := range [][2]string{
		{"DEBIAN_FRONTEND", "noninteractive"}, {"DEBIAN_FRONTEND", "noninteractive;BEGIN{system(\"id\")}#"},
		{"LANG", "en_US.UTF-8"}, {"TZ", "Europe/Paris"}, {"TZ", ":/etc/shadow"}, {"TERM", "xterm-256color"},
		{"MYAPP_X", "http://p:3128/"}, {"GIT_AUTHOR_NAME", "Renée O'Brien"}, {"LD_PRELOAD", "/tmp/x.so"},
	} {
		f.Add(s[0], s[1])
	}
	p, err := NewEnvPolicy(testSecurePath, []string{"MYAPP_*", "GIT_AUTHOR_NAME", "GIT_AUTHOR_DATE", "LANGUAGE"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		err := p.Check(map[string]string{name: value})
		if err != nil {
			if len(err.Error()) > 1024+len(name)*2 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if !proto.ValidEnvName(name) || denyReason(name) != "" || !slices.ContainsFunc(p.allow, func(pat string) bool { return matchAllow(pat, name) }) {
			t.Fatalf("%q accepted", name)
		}
		spaceOK := name == "GIT_AUTHOR_NAME" || name == "GIT_AUTHOR_DATE"
		for _, r := range value {
			if r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) || strings.ContainsRune("`$;|&<>(){}\\\"*?![]#~", r) || (r == ' ' && !spaceOK) {
				t.Fatalf("%s=%q accepted with %q", name, value, r)
			}
		}
	})
}
