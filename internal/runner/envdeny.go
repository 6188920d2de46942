package runner

import (
	"slices"
	"strings"
)

// denyRule refuses a variable name, or every name with a prefix when pattern
// ends in '*'. Patterns are upper case and compared with the upper-cased
// name, so that no spelling slips through.
type denyRule struct {
	pattern string
	reason  string
}

// DenyEntry describes one deny-list pattern for documentation.
type DenyEntry struct {
	// Pattern is an upper-case name or a trailing-'*' prefix glob.
	Pattern string
	// Reason says why it is denied.
	Reason string
}

// DenyList returns the deny list: variables refused in every request and in
// env_allow, whatever the configuration says.
func DenyList() []DenyEntry {
	var out []DenyEntry
	for _, r := range denyRules() {
		out = append(out, DenyEntry{Pattern: r.pattern, Reason: r.reason})
	}
	return out
}

// Reasons shared by several rules.
const (
	reasonBase    = "the daemon sets it for the target user"
	reasonLoader  = "it makes the dynamic loader or the C library load other code or files"
	reasonShell   = "it makes shells run other code or parse scripts differently"
	reasonInterp  = "it makes an interpreter load or run other code"
	reasonProgram = "it names a program that other programs run"
	reasonTerm    = "it makes programs parse terminal descriptions from another place"
	reasonResolve = "it changes name resolution"
)

// denyRules is the deny list, the only place it is written: variables
// refused even when allowlisted, and refused in env_allow. It holds the base
// variables, glibc's list of variables it removes for set-user-id programs
// (sysdeps/generic/unsecvars.h), and those known to turn "run program X"
// into "run other code": shell startup hooks, interpreter search paths and
// option variables, and variables naming a program to start. It is a second
// line of defence; the allowlist is the first, so a variable missing here is
// still refused unless allowlisted.
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
		{"GETCONF_DIR", reasonLoader},
		{"LOCPATH", reasonLoader},
		{"MALLOC_*", "it makes the C library's allocator trace to a file or change behaviour"},
		{"NLSPATH", reasonLoader},
		{"PATH_LOCALE", reasonLoader},
		{"TZDIR", reasonLoader},
		{"TMPDIR", "it makes root programs create temporary files in a directory the caller chose"},
		{"GLIBC_TUNABLES", "it changes the C library's internals (see CVE-2023-4911)"},
		{"HOSTALIASES", reasonResolve},
		{"LOCALDOMAIN", reasonResolve},
		{"NIS_PATH", reasonResolve},
		{"RESOLV_HOST_CONF", reasonResolve},
		{"RES_OPTIONS", reasonResolve},
		{"TERMINFO", reasonTerm},
		{"TERMINFO_DIRS", reasonTerm},
		{"TERMCAP", reasonTerm},
		{"TERMPATH", reasonTerm},

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
		{"DEBCONF_*", "it changes where debconf reads its configuration and database, or how it runs"},
		{"MAKEFILES", "it makes make read other makefiles, which can run commands"},
		{"GIT_*", "git runs commands or reads configuration and repositories these name " +
			"(GIT_SSH_COMMAND, GIT_CONFIG_*, GIT_DIR); only the author and committer " +
			"name, email and date variables can be allowed, each by its full name"},

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
// harmless: git's identity variables, which etckeeper users need. They can
// be allowed by name only.
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
