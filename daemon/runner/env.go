package runner

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agent-sudo/agent-sudo/proto"
)

// EnvError is a request variable that the environment policy refuses. The
// daemon reports it to the agent; Reason says why and, for a variable that is
// merely not allowlisted, how an administrator can allow it.
type EnvError struct {
	// Name is the variable as the request spelled it.
	Name string
	// Reason explains the refusal.
	Reason string
}

// Error implements error.
func (e *EnvError) Error() string {
	return fmt.Sprintf("environment variable %s refused: %s", e.Name, e.Reason)
}

// defaultAllow is the built-in allowlist: locale, time zone, terminal type,
// and the switches that keep Debian's package tools from prompting.
func defaultAllow() []string {
	return []string{"LANG", "LC_*", "TZ", "TERM", "DEBIAN_FRONTEND", "NEEDRESTART_MODE"}
}

// BuildEnv returns the complete environment for a pipeline run as t: a small
// clean base plus the request's variables, as sorted "NAME=value" strings.
//
// The base is PATH=securePath and HOME, USER and LOGNAME of t (HOME is "/"
// when t has none); nothing is inherited from the daemon. sshAuthSock, when
// not empty, becomes SSH_AUTH_SOCK; the caller passes it only for an
// unprivileged request that asked for the approver's agent.
//
// Each variable of reqEnv must be allowed by the built-in allowlist (LANG,
// LC_*, TZ, TERM, DEBIAN_FRONTEND, NEEDRESTART_MODE) or by allow, a list of
// names and trailing-'*' prefix globs from the env_allow setting. Variables
// that can make a program run or load other code, and those the base owns,
// are refused whatever the allowlist says. The values of the locale and
// terminal variables must not contain '/' or '%', and TZ must name a zone
// rather than an arbitrary file. Every refused variable is reported, each as
// an [*EnvError], joined into one error.
func BuildEnv(t Target, securePath string, reqEnv map[string]string, allow []string, sshAuthSock string) ([]string, error) {
	if t.Name == "" || strings.ContainsAny(t.Name, "\x00=") {
		return nil, fmt.Errorf("runner: target user name %q is not usable in the environment", t.Name)
	}
	home := t.Home
	if home == "" {
		home = "/"
	}
	if strings.IndexByte(home, 0) >= 0 {
		return nil, errors.New("runner: target home directory contains a NUL byte")
	}
	if err := ValidSecurePath(securePath); err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	for _, p := range allow {
		if err := ValidAllowPattern(p); err != nil {
			return nil, fmt.Errorf("runner: env_allow: %w", err)
		}
	}
	env := map[string]string{
		"PATH":    securePath,
		"HOME":    home,
		"USER":    t.Name,
		"LOGNAME": t.Name,
	}
	if sshAuthSock != "" {
		if !filepath.IsAbs(sshAuthSock) || strings.IndexByte(sshAuthSock, 0) >= 0 {
			return nil, fmt.Errorf("runner: SSH agent socket %q is not an absolute path", sshAuthSock)
		}
		env["SSH_AUTH_SOCK"] = sshAuthSock
	}
	patterns := append(defaultAllow(), allow...)
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(reqEnv)) {
		value := reqEnv[name]
		if reason := refuseVar(name, value, patterns); reason != "" {
			errs = append(errs, &EnvError{Name: name, Reason: reason})
			continue
		}
		env[name] = value
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := make([]string, 0, len(env))
	for _, name := range slices.Sorted(maps.Keys(env)) {
		out = append(out, name+"="+env[name])
	}
	return out, nil
}

// refuseVar says why the request variable name=value is refused, or "" when
// it is accepted.
func refuseVar(name, value string, patterns []string) string {
	if !validEnvName(name) {
		return "not a valid variable name (letters, digits and '_', not starting with a digit)"
	}
	if reason := denyReason(name); reason != "" {
		return reason + "; it can never be allowed"
	}
	if !slices.ContainsFunc(patterns, func(p string) bool { return matchAllow(p, name) }) {
		return fmt.Sprintf("not on the allowlist; an administrator can allow it by adding %q (or a prefix glob ending in '*') to env_allow in the daemon configuration", name)
	}
	if strings.IndexByte(value, 0) >= 0 {
		return "the value contains a NUL byte"
	}
	if name == "TZ" {
		return tzProblem(value)
	}
	if namesNoFile(name) && strings.ContainsAny(value, "/%") {
		return "the value must not contain '/' or '%', which would make programs read locale or terminal files from another place"
	}
	return ""
}

// namesNoFile reports whether name is a locale or terminal variable whose
// value must be a plain name, as sudo's env_check requires.
func namesNoFile(name string) bool {
	switch name {
	case "LANG", "LANGUAGE", "LINGUAS", "TERM", "COLORTERM":
		return true
	}
	return strings.HasPrefix(name, "LC_")
}

// zoneinfoDir is where an absolute TZ file must lie.
const zoneinfoDir = "/usr/share/zoneinfo/"

// tzProblem says what is wrong with the TZ value v, or "" when it is safe:
// printable, bounded, and a zone name, a POSIX rule, or a file under the
// system zoneinfo directory, never reaching outside it with "..". These are
// the checks sudo applies to TZ.
func tzProblem(v string) string {
	const bad = "TZ must be a zone name like Europe/Paris, a POSIX rule, or a file under " + zoneinfoDir
	if len(v) > 255 {
		return bad + " (the value is too long)"
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] >= 0x7f {
			return bad + " (the value has a space or a non-printable character)"
		}
	}
	zone := strings.TrimPrefix(v, ":")
	if strings.HasPrefix(zone, "/") && !strings.HasPrefix(zone, zoneinfoDir) {
		return bad
	}
	if slices.Contains(strings.Split(zone, "/"), "..") {
		return bad + " (the value contains \"..\")"
	}
	return ""
}

// matchAllow reports whether the allow pattern p, a name or a prefix glob
// ending in '*', matches name. Matching is case-sensitive, as variable names
// are.
func matchAllow(p, name string) bool {
	if prefix, ok := strings.CutSuffix(p, "*"); ok {
		return strings.HasPrefix(name, prefix)
	}
	return p == name
}

// ValidAllowPattern reports whether p is usable in env_allow: a variable name,
// or a prefix of one followed by a single trailing '*'. A lone "*" is refused
// (it would allow everything), and so is a pattern that could only ever match
// variables that are always refused, such as "LD_PRELOAD" or "LD_*", because
// it would suggest a permission that does not exist.
func ValidAllowPattern(p string) error {
	prefix, glob := strings.CutSuffix(p, "*")
	switch {
	case p == "":
		return errors.New("empty allow pattern")
	case p == "*":
		return errors.New(`allow pattern "*" would allow every variable; list names or prefixes such as "MYAPP_*"`)
	case !validEnvName(prefix):
		return fmt.Errorf("allow pattern %q: want a variable name, optionally followed by one trailing '*'", p)
	}
	if !glob {
		if reason := denyReason(p); reason != "" {
			return fmt.Errorf("allow pattern %q: %s is always refused: %s", p, p, reason)
		}
		return nil
	}
	upper := strings.ToUpper(prefix)
	for _, r := range denyRules() {
		dp, isPrefix := strings.CutSuffix(r.pattern, "*")
		if !isPrefix || !strings.HasPrefix(upper, dp) {
			continue
		}
		if slices.ContainsFunc(denyExceptions(), func(e string) bool { return strings.HasPrefix(e, upper) }) {
			continue
		}
		return fmt.Errorf("allow pattern %q only matches variables that are always refused: %s", p, r.reason)
	}
	return nil
}

// ValidSecurePath reports whether p is usable as the secure path: a
// non-empty, colon-separated list of absolute directories. An empty or
// relative entry would make a lookup depend on the working directory.
func ValidSecurePath(p string) error {
	if p == "" {
		return errors.New("secure path is empty")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return errors.New("secure path contains a NUL byte")
	}
	for dir := range strings.SplitSeq(p, ":") {
		if !filepath.IsAbs(dir) {
			return fmt.Errorf("secure path %q: entry %q is not an absolute directory", p, dir)
		}
	}
	return nil
}

// validEnvName is proto.ValidEnvName: letters, digits and '_', not starting
// with a digit. The runner relies on it to keep names free of '=', ',' and
// NUL, which sudo's --preserve-env list would misread.
func validEnvName(name string) bool { return proto.ValidEnvName(name) }

// denyRule refuses a variable name, or every name with a prefix when pattern
// ends in '*'. Patterns are upper case and compared with the upper-cased
// name, so that no spelling slips through.
type denyRule struct {
	pattern string
	reason  string
}

// Reasons shared by several rules.
const (
	reasonBase    = "the daemon sets it for the target user"
	reasonLoader  = "it makes the dynamic loader or the C library load other code or files"
	reasonShell   = "it makes shells run other code or parse scripts differently"
	reasonInterp  = "it makes an interpreter load or run other code"
	reasonProgram = "it names a program that other programs run"
)

// denyRules is the hard deny list: variables refused even when allowlisted.
// It holds the base variables and those known to turn "run program X" into
// "run other code": loader and libc switches, shell startup hooks,
// interpreter search paths and option variables, and variables naming a
// program to start. It is a second line of defence; the allowlist is the
// first, so a variable missing here is still refused unless allowlisted.
func denyRules() []denyRule {
	return []denyRule{
		{"PATH", reasonBase + " from the secure path"},
		{"HOME", reasonBase},
		{"USER", reasonBase},
		{"LOGNAME", reasonBase},
		{"SSH_AUTH_SOCK", "the daemon sets it, and only for forward_agent requests"},
		{"SUDO_*", "sudo sets these itself or runs the programs they name"},

		{"LD_*", reasonLoader},
		{"DYLD_*", reasonLoader},
		{"_RLD*", reasonLoader},
		{"GCONV_PATH", reasonLoader},
		{"LOCPATH", reasonLoader},
		{"NLSPATH", reasonLoader},
		{"PATH_LOCALE", reasonLoader},
		{"TZDIR", reasonLoader},
		{"GLIBC_TUNABLES", "it changes the C library's internals (see CVE-2023-4911)"},
		{"HOSTALIASES", "it changes name resolution"},
		{"LOCALDOMAIN", "it changes name resolution"},
		{"RES_OPTIONS", "it changes name resolution"},
		{"TERMINFO", "it makes programs parse terminal descriptions from another place"},
		{"TERMINFO_DIRS", "it makes programs parse terminal descriptions from another place"},
		{"TERMCAP", "it makes programs parse terminal descriptions from another place"},
		{"TERMPATH", "it makes programs parse terminal descriptions from another place"},

		{"BASH_*", reasonShell}, // BASH_ENV, BASH_FUNC_*, BASH_XTRACEFD, BASH_LOADABLES_PATH
		{"ENV", reasonShell},
		{"IFS", reasonShell},
		{"SHELLOPTS", reasonShell},
		{"BASHOPTS", reasonShell},
		{"PS4", reasonShell},
		{"PROMPT_COMMAND", reasonShell},
		{"CDPATH", reasonShell},
		{"GLOBIGNORE", reasonShell},
		{"ZDOTDIR", reasonShell},
		{"FPATH", reasonShell},
		{"NULLCMD", reasonShell},
		{"READNULLCMD", reasonShell},
		{"TMPPREFIX", reasonShell},

		{"PYTHONPATH", reasonInterp},
		{"PYTHONSTARTUP", reasonInterp},
		{"PYTHONHOME", reasonInterp},
		{"PYTHONINSPECT", reasonInterp},
		{"PYTHONUSERBASE", reasonInterp},
		{"PYTHONWARNINGS", reasonInterp + " (a warning category imports a module)"},
		{"PYTHONBREAKPOINT", reasonInterp},
		{"PYTHONEXECUTABLE", reasonInterp},
		{"PYTHONPLATLIBDIR", reasonInterp},
		{"PYTHONPYCACHEPREFIX", reasonInterp},
		{"PERL5LIB", reasonInterp},
		{"PERLLIB", reasonInterp},
		{"PERL5OPT", reasonInterp},
		{"PERL5DB", reasonInterp},
		{"PERLIO_DEBUG", "it makes perl write a file it names"},
		{"RUBYOPT", reasonInterp},
		{"RUBYLIB", reasonInterp},
		{"GEM_HOME", reasonInterp},
		{"GEM_PATH", reasonInterp},
		{"BUNDLE_GEMFILE", reasonInterp},
		{"NODE_OPTIONS", reasonInterp},
		{"NODE_PATH", reasonInterp},
		{"JAVA_TOOL_OPTIONS", reasonInterp},
		{"_JAVA_OPTIONS", reasonInterp},
		{"JDK_JAVA_OPTIONS", reasonInterp},
		{"CLASSPATH", reasonInterp},
		{"LUA_*", reasonInterp}, // LUA_INIT runs code
		{"TCLLIBPATH", reasonInterp},
		{"PHPRC", reasonInterp},
		{"PHP_INI_SCAN_DIR", reasonInterp},
		{"OPENSSL_*", "it makes OpenSSL load another configuration, engines or modules"},
		{"APT_CONFIG", "it makes apt read another configuration, which can run commands"},
		{"MAKEFILES", "it makes make read other makefiles, which can run commands"},
		{"GIT_*", "git runs commands or reads configuration and repositories these name " +
			"(GIT_SSH_COMMAND, GIT_CONFIG_*, GIT_DIR); only the author and committer " +
			"name, email and date variables can be allowed"},

		{"EDITOR", reasonProgram},
		{"VISUAL", reasonProgram},
		{"PAGER", reasonProgram},
		{"MANPAGER", reasonProgram},
		{"SYSTEMD_EDITOR", reasonProgram},
		{"SYSTEMD_PAGER", reasonProgram},
		{"LESSOPEN", reasonProgram},
		{"LESSCLOSE", reasonProgram},
		{"BROWSER", reasonProgram},
		{"SHELL", reasonProgram},
		{"SSH_ASKPASS", reasonProgram},
	}
}

// denyExceptions are names a prefix rule covers that are nevertheless
// harmless: git's identity variables, which etckeeper users need.
func denyExceptions() []string {
	return []string{
		"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
		"GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
	}
}

// denyReason says why name is always refused, or "" when it is not.
func denyReason(name string) string {
	upper := strings.ToUpper(name)
	if slices.Contains(denyExceptions(), upper) {
		return ""
	}
	for _, r := range denyRules() {
		if matchAllow(r.pattern, upper) {
			return r.reason
		}
	}
	return ""
}
