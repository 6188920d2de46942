package runner

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestBuildEnvBase(t *testing.T) {
	alice := Target{Name: "alice", UID: 1000, GID: 1000, Home: "/home/alice"}
	tests := []struct {
		name string
		t    Target
		req  map[string]string
		sock string
		want []string
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
			name: "empty value and value with '=' and newline",
			t:    alice,
			req:  map[string]string{"LANG": "", "DEBIAN_FRONTEND": "a=b\nc"},
			want: []string{"DEBIAN_FRONTEND=a=b\nc", "HOME=/home/alice", "LANG=", "LOGNAME=alice", "PATH=" + testSecurePath, "USER=alice"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("LD_PRELOAD_TEST_MARKER", "from-daemon")
			got, err := BuildEnv(tt.t, testSecurePath, tt.req, nil, tt.sock)
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
	first, err := BuildEnv(Target{Name: "a"}, testSecurePath, req, []string{"X_*"}, "")
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, err := BuildEnv(Target{Name: "a"}, testSecurePath, req, []string{"X_*"}, "")
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
		{"configured lowercase", []string{"http_proxy", "https_proxy"}, map[string]string{"http_proxy": "http://p:3128"}, true},
		{"LANGUAGE is not LANG", nil, map[string]string{"LANGUAGE": "de"}, false},
		{"one bad among good refuses all", nil, map[string]string{"LANG": "C", "FOO": "1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := BuildEnv(Target{Name: "u"}, testSecurePath, tt.req, tt.allow, "")
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

func TestBuildEnvDenied(t *testing.T) {
	// Every one is allowlisted by a catch-all set of globs, and must still be
	// refused, under any spelling.
	names := []string{
		"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "ld_preload", "Ld_Preload", "DYLD_INSERT_LIBRARIES", "_RLD_ROOT",
		"BASH_ENV", "ENV", "BASH_FUNC_ls", "BASH_XTRACEFD", "BASH_LOADABLES_PATH",
		"PATH", "Path", "HOME", "USER", "LOGNAME", "SSH_AUTH_SOCK",
		"IFS", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "CDPATH", "GLOBIGNORE", "ZDOTDIR",
		"PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONWARNINGS", "PYTHONUSERBASE", "PYTHONINSPECT",
		"PERL5LIB", "PERL5OPT", "PERLLIB", "PERL5DB", "RUBYOPT", "RUBYLIB", "GEM_PATH",
		"NODE_OPTIONS", "NODE_PATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "CLASSPATH", "LUA_INIT", "LUA_PATH",
		"GCONV_PATH", "LOCPATH", "NLSPATH", "GLIBC_TUNABLES", "TZDIR", "HOSTALIASES", "RES_OPTIONS", "TERMINFO",
		"OPENSSL_CONF", "APT_CONFIG", "MAKEFILES",
		"SUDO_ASKPASS", "SUDO_EDITOR", "SUDO_USER",
		"GIT_SSH_COMMAND", "GIT_CONFIG_COUNT", "GIT_DIR", "GIT_EXEC_PATH",
		"EDITOR", "VISUAL", "PAGER", "SYSTEMD_PAGER", "LESSOPEN", "SHELL", "SSH_ASKPASS",
	}
	allowAll := []string{"A*", "B*", "C*", "D*", "E*", "F*", "G*", "H*", "I*", "J*", "L*", "M*", "N*", "O*", "P*",
		"R*", "S*", "T*", "U*", "V*", "Z*", "_*", "l*"}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			_, err := BuildEnv(Target{Name: "u"}, testSecurePath, map[string]string{name: "x"}, allowAll, "")
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
	req := map[string]string{"GIT_AUTHOR_NAME": "Approver", "GIT_COMMITTER_EMAIL": "a@example.org"}
	if _, err := BuildEnv(Target{Name: "u"}, testSecurePath, req, nil, ""); err == nil {
		t.Error("git identity accepted without being allowlisted")
	}
	if _, err := BuildEnv(Target{Name: "u"}, testSecurePath, req, []string{"GIT_AUTHOR_*", "GIT_COMMITTER_*"}, ""); err != nil {
		t.Errorf("allowlisted git identity refused: %v", err)
	}
}

func TestBuildEnvValues(t *testing.T) {
	tests := []struct {
		name, value string
		ok          bool
	}{
		{"LANG", "en_US.UTF-8", true},
		{"LANG", "../../tmp/evil", false},
		{"LANG", "/tmp/locale", false},
		{"LC_ALL", "C%s", false},
		{"TERM", "xterm", true},
		{"TERM", "/tmp/terminfo", false},
		{"TZ", "UTC", true},
		{"TZ", "Europe/Paris", true},
		{"TZ", ":Europe/Paris", true},
		{"TZ", "EST5EDT,M3.2.0,M11.1.0", true},
		{"TZ", "<+03>-3", true},
		{"TZ", "/usr/share/zoneinfo/UTC", true},
		{"TZ", ":/usr/share/zoneinfo/Asia/Tokyo", true},
		{"TZ", "/etc/shadow", false},
		{"TZ", ":/tmp/evil", false},
		{"TZ", "/usr/share/zoneinfo/../../../etc/shadow", false},
		{"TZ", "../../tmp/evil", false},
		{"TZ", "Europe/../../x", false},
		{"TZ", "Europe/Paris ", false},
		{"TZ", "Eu\trope", false},
		{"TZ", strings.Repeat("A", 300), false},
		{"DEBIAN_FRONTEND", "a\x00b", false},
		{"DEBIAN_FRONTEND", "any/thing%goes", true},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			_, err := BuildEnv(Target{Name: "u"}, testSecurePath, map[string]string{tt.name: tt.value}, nil, "")
			if tt.ok && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !tt.ok {
				var ee *EnvError
				if !errors.As(err, &ee) || ee.Name != tt.name {
					t.Errorf("BuildEnv: %v, want an *EnvError for %s", err, tt.name)
				}
			}
		})
	}
}

func TestBuildEnvBadNames(t *testing.T) {
	for _, name := range []string{"", "1ABC", "A-B", "A B", "A=B", "BASH_FUNC_ls%%", "A,B", "LANG\x00", "É"} {
		_, err := BuildEnv(Target{Name: "u"}, testSecurePath, map[string]string{name: "x"}, []string{"A*", "B*", "L*"}, "")
		var ee *EnvError
		if !errors.As(err, &ee) || !strings.Contains(ee.Reason, "valid variable name") {
			t.Errorf("name %q: %v, want an invalid-name *EnvError", name, err)
		}
	}
}

func TestBuildEnvReportsEveryProblem(t *testing.T) {
	_, err := BuildEnv(Target{Name: "u"}, testSecurePath, map[string]string{"LD_PRELOAD": "x", "FOO": "1", "LANG": "C"}, nil, "")
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
		name  string
		t     Target
		path  string
		allow []string
		sock  string
	}{
		{"no user name", Target{}, testSecurePath, nil, ""},
		{"user name with =", Target{Name: "a=b"}, testSecurePath, nil, ""},
		{"home with NUL", Target{Name: "u", Home: "/h\x00"}, testSecurePath, nil, ""},
		{"empty secure path", ok, "", nil, ""},
		{"relative secure path entry", ok, "/usr/bin:bin", nil, ""},
		{"empty secure path entry", ok, "/usr/bin::/bin", nil, ""},
		{"bad allow pattern", ok, testSecurePath, []string{"*"}, ""},
		{"denied allow pattern", ok, testSecurePath, []string{"LD_PRELOAD"}, ""},
		{"relative agent socket", ok, testSecurePath, nil, "agent.sock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if env, err := BuildEnv(tt.t, tt.path, nil, tt.allow, tt.sock); err == nil {
				t.Errorf("BuildEnv accepted: %q", env)
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
		{"M*", true},
		{"_X", true},
		{"GIT_*", true}, // GIT_AUTHOR_* and GIT_COMMITTER_* can pass
		{"GIT_AUTHOR_*", true},
		{"GIT_AUTHOR_NAME", true},
		{"PYTHON*", true}, // PYTHONUNBUFFERED and others are harmless
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
		{"BASH_FUNC_*", false},
		{"SUDO_*", false},
		{"GIT_SSH*", false},
		{"PATH", false},
		{"SSH_AUTH_SOCK", false},
	}
	for _, tt := range tests {
		err := ValidAllowPattern(tt.p)
		if (err == nil) != tt.ok {
			t.Errorf("ValidAllowPattern(%q) = %v, want ok %v", tt.p, err, tt.ok)
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
