package runner

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/proto"
)

// EnvError is a request variable that the environment policy refuses. The
// daemon reports it to the agent; Reason says why and, for a variable that is
// merely not allowlisted, how an administrator can allow it.
type EnvError struct {
	// Name is the variable as the request spelled it.
	Name string
	// Reason explains the refusal. It never quotes the value.
	Reason string
}

// Error implements error.
func (e *EnvError) Error() string {
	return fmt.Sprintf("environment variable %s refused: %s", e.Name, e.Reason)
}

// MaxReportedEnvErrors is how many refused variables an error from
// [EnvPolicy.BuildEnv] describes; the rest are only counted, so that a
// request with many refused names gets a short answer and a short audit
// record.
const MaxReportedEnvErrors = 5

// EnvPolicy is the compiled environment policy: the built-in allowlist, the
// administrator's env_allow entries, the deny list and the value grammars.
// [NewEnvPolicy] checks everything once, when the configuration is loaded;
// checking a request against a policy re-validates nothing. A policy is
// immutable and safe for concurrent use.
type EnvPolicy struct {
	securePath string
	allow      []string // built-in patterns, then env_allow's
}

// NewEnvPolicy compiles the policy for the secure path securePath (the PATH
// every stage gets) and the env_allow entries envAllow. It fails when
// securePath is not valid ([ValidSecurePath]) or when an entry is not
// ([ValidAllowPattern]); the error names every offending entry.
func NewEnvPolicy(securePath string, envAllow []string) (*EnvPolicy, error) {
	var errs []error
	if err := ValidSecurePath(securePath); err != nil {
		errs = append(errs, err)
	}
	for i, p := range envAllow {
		if err := ValidAllowPattern(p); err != nil {
			errs = append(errs, fmt.Errorf("env_allow[%d]: %w", i, err))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("environment policy: %w", errors.Join(errs...))
	}
	return &EnvPolicy{securePath: securePath, allow: append(DefaultAllowlist(), envAllow...)}, nil
}

// EnvNames returns the names of a request's variables, sorted: the form in
// which the daemon hands them to the rule engine.
func EnvNames(reqEnv map[string]string) []string {
	return slices.Sorted(maps.Keys(reqEnv))
}

// BuildEnv returns the complete environment for a pipeline run as t: a small
// clean base plus the request's variables, as sorted "NAME=value" strings.
//
// The base is PATH (the policy's secure path) and HOME, USER and LOGNAME of
// t (HOME is "/" when t has none); nothing is inherited from the daemon.
// sshAuthSock, when not empty, becomes SSH_AUTH_SOCK; the caller passes it
// only for an unprivileged request that asked for the approver's agent.
//
// Each variable of reqEnv must be allowed by the built-in allowlist
// ([DefaultAllowlist]) or by an env_allow entry, must not be on the deny
// list ([DenyList]), and its value must fit the variable's grammar (see the
// docs/execution.md, "Values"). Every refused variable is an [*EnvError]; the
// error describes the first [MaxReportedEnvErrors] of them, in name order,
// and counts the rest.
func (p *EnvPolicy) BuildEnv(t Target, reqEnv map[string]string, sshAuthSock string) ([]string, error) {
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
	env := map[string]string{
		"PATH":    p.securePath,
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
	if err := p.Check(reqEnv); err != nil {
		return nil, err
	}
	maps.Copy(env, reqEnv)
	out := make([]string, 0, len(env))
	for _, name := range slices.Sorted(maps.Keys(env)) {
		out = append(out, name+"="+env[name])
	}
	return out, nil
}

// Check reports whether every variable of reqEnv is allowed with its value,
// as [EnvPolicy.BuildEnv] describes; nil means all are.
func (p *EnvPolicy) Check(reqEnv map[string]string) error {
	var errs []error
	refused := 0
	for _, name := range EnvNames(reqEnv) {
		reason := p.refuseVar(name, reqEnv[name])
		if reason == "" {
			continue
		}
		refused++
		if refused <= MaxReportedEnvErrors {
			errs = append(errs, &EnvError{Name: name, Reason: reason})
		}
	}
	if more := refused - MaxReportedEnvErrors; more > 0 {
		errs = append(errs, fmt.Errorf("and %d more environment variables refused (only the first %d are described)", more, MaxReportedEnvErrors))
	}
	return errors.Join(errs...)
}

// refuseVar says why the request variable name=value is refused, or "" when
// it is accepted.
func (p *EnvPolicy) refuseVar(name, value string) string {
	if !proto.ValidEnvName(name) {
		return "not a valid variable name (letters, digits and '_', not starting with a digit)"
	}
	if reason := denyReason(name); reason != "" {
		return reason + "; it can never be allowed"
	}
	if !slices.ContainsFunc(p.allow, func(pat string) bool { return matchAllow(pat, name) }) {
		return fmt.Sprintf("not on the allowlist; an administrator can allow it by adding %q to env_allow in the daemon configuration", name)
	}
	g := grammarFor(name)
	if problem := g.check(value); problem != "" {
		return fmt.Sprintf("the value is refused: %s; %s accepts %s", problem, name, g.accepts)
	}
	return ""
}

// allowEntry is one entry of the built-in allowlist and the grammar its
// values must fit.
type allowEntry struct {
	pattern string
	grammar grammar
}

// builtinAllow is the built-in allowlist, the only place it is written:
// locale, time zone, terminal type, and the switches that keep Debian's
// package tools from prompting.
func builtinAllow() []allowEntry {
	return []allowEntry{
		{"LANG", localeGrammar()},
		{"LC_*", localeGrammar()},
		{"TZ", tzGrammar()},
		{"TERM", termGrammar()},
		{"DEBIAN_FRONTEND", debconfGrammar()},
		{"NEEDRESTART_MODE", needrestartGrammar()},
	}
}

// DefaultAllowlist returns the patterns of the built-in allowlist: names and
// trailing-'*' prefix globs that requests may set without any env_allow.
func DefaultAllowlist() []string {
	var out []string
	for _, e := range builtinAllow() {
		out = append(out, e.pattern)
	}
	return out
}

// namedGrammar gives the variables names a grammar of their own when an
// administrator allows them with env_allow.
type namedGrammar struct {
	names   []string
	grammar grammar
}

// namedGrammars are the grammars of a few variables administrators commonly
// add; every other variable allowed by env_allow gets wordGrammar.
func namedGrammars() []namedGrammar {
	return []namedGrammar{
		{[]string{"LANGUAGE", "LINGUAS"}, languageGrammar()},
		{[]string{"COLORTERM"}, termGrammar()},
		{[]string{"GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"}, personGrammar()},
		{[]string{"GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"}, dateGrammar()},
	}
}

// grammarFor returns the grammar of the values of the variable name: the
// built-in allowlist's for its variables, a named one for a few variables
// administrators commonly add, and the conservative default otherwise.
func grammarFor(name string) grammar {
	for _, e := range builtinAllow() {
		if matchAllow(e.pattern, name) {
			return e.grammar
		}
	}
	for _, n := range namedGrammars() {
		if slices.Contains(n.names, name) {
			return n.grammar
		}
	}
	return wordGrammar()
}

// grammar is the set of values a variable accepts.
type grammar struct {
	// accepts completes "NAME accepts ...", saying what is accepted.
	accepts string
	// check says what is wrong with v, or "" when v is accepted.
	check func(v string) string
}

// badByte describes the first byte (or character) of v that ok refuses, or
// returns "" when there is none. The value itself is never quoted: it may be
// long or hostile, and the description goes to the agent, the daemon log and
// the audit log.
func badByte(v string, ok func(r rune) bool) string {
	for i, r := range v {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(v[i:]); size <= 1 {
				return fmt.Sprintf("byte %d is not valid UTF-8", i)
			}
		}
		if !ok(r) {
			return fmt.Sprintf("byte %d is %s, which is not allowed", i, strconv.QuoteRuneToASCII(r))
		}
	}
	return ""
}

// tooLong describes v when it is longer than maxLen bytes, or returns "".
func tooLong(v string, maxLen int) string {
	if len(v) > maxLen {
		return fmt.Sprintf("it is %d bytes long, more than %d", len(v), maxLen)
	}
	return ""
}

func isASCIILetter(r rune) bool { return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' }
func isASCIIDigit(r rune) bool  { return '0' <= r && r <= '9' }
func isASCIIAlnum(r rune) bool  { return isASCIILetter(r) || isASCIIDigit(r) }

// enumGrammar accepts exactly one of values.
func enumGrammar(values ...string) grammar {
	return grammar{
		accepts: "one of: " + strings.Join(values, ", "),
		check: func(v string) string {
			if slices.Contains(values, v) {
				return ""
			}
			if p := badByte(v, isASCIIAlnum); p != "" {
				return p
			}
			if p := tooLong(v, 32); p != "" {
				return p
			}
			if v == "" {
				return "it is empty"
			}
			return "it is not one of the accepted values"
		},
	}
}

// debconfFrontends are the debconf frontends a request may choose (the
// modules under /usr/share/perl5/Debconf/FrontEnd/ that can be chosen, less
// those of [debconfRefusedFrontends]).
func debconfFrontends() []string {
	return []string{"noninteractive", "readline", "dialog", "teletype", "text", "gnome", "kde", "editor", "passthrough"}
}

// debconfRefusedFrontends are debconf frontends that a request may never
// choose, each with why. The web frontend serves root's questions on
// http://127.0.0.1:8001/ and takes the answers from whoever connects first:
// the agent itself, or any other local user, would answer the questions of a
// package a rule lets configure "noninteractively".
func debconfRefusedFrontends() map[string]string {
	return map[string]string{
		"web": "the web frontend serves root's debconf questions on a local TCP port and takes the answers from any local user",
	}
}

// debconfGrammar accepts a debconf frontend name, in lower case or with an
// upper-case first letter, the two spellings debconf itself accepts; the
// frontends of [debconfRefusedFrontends] are refused, saying why.
func debconfGrammar() grammar {
	values := debconfFrontends()
	for _, f := range debconfFrontends() {
		values = append(values, strings.ToUpper(f[:1])+f[1:])
	}
	g := enumGrammar(values...)
	g.accepts = "a debconf frontend: " + strings.Join(debconfFrontends(), ", ") + " (lower case, or with an upper-case first letter; never web)"
	enum := g.check
	g.check = func(v string) string {
		if why, refused := debconfRefusedFrontends()[strings.ToLower(v)]; refused && enum(strings.ToLower(v)) != "" {
			return why
		}
		return enum(v)
	}
	return g
}

// needrestartGrammar accepts needrestart's restart modes: (l)ist only,
// (i)nteractive, (a)utomatic. needrestart itself accepts nothing else.
func needrestartGrammar() grammar {
	g := enumGrammar("a", "l", "i")
	g.accepts = "a needrestart mode: a (restart automatically), l (list only) or i (interactive)"
	return g
}

// maxLocaleLen bounds a locale name; real ones are far shorter.
const maxLocaleLen = 64

// localeGrammar accepts an empty value (the category is then unset), C,
// POSIX, or language[_TERRITORY][.codeset][@modifier] with a two- or
// three-letter lower-case language, a territory of two upper-case letters
// or three digits, and a codeset and modifier of letters, digits, '-' and
// '_'. No '/', so no locale is read from a file the agent chose.
func localeGrammar() grammar {
	return grammar{
		accepts: "an empty value, C, POSIX or a locale name like en_US.UTF-8, C.UTF-8 or de_DE@euro (language[_TERRITORY][.codeset][@modifier], letters, digits, '-' and '_'; no '/'), at most 64 bytes",
		check: func(v string) string {
			if p := tooLong(v, maxLocaleLen); p != "" {
				return p
			}
			if p := badByte(v, func(r rune) bool { return isASCIIAlnum(r) || strings.ContainsRune("_.@-", r) }); p != "" {
				return p
			}
			if v == "" || validLocale(v) {
				return ""
			}
			return "it is not a locale name"
		},
	}
}

// validLocale reports whether v is C, POSIX or a locale name as
// localeGrammar describes.
func validLocale(v string) bool {
	rest, modifier, hasMod := strings.Cut(v, "@")
	if hasMod && !isCodeToken(modifier) {
		return false
	}
	base, codeset, hasCodeset := strings.Cut(rest, ".")
	if hasCodeset && !isCodeToken(codeset) {
		return false
	}
	if base == "C" || base == "POSIX" {
		return true
	}
	lang, terr, hasTerr := strings.Cut(base, "_")
	if len(lang) < 2 || len(lang) > 3 || strings.IndexFunc(lang, func(r rune) bool { return r < 'a' || r > 'z' }) >= 0 {
		return false
	}
	if !hasTerr {
		return true
	}
	upper := len(terr) == 2 && strings.IndexFunc(terr, func(r rune) bool { return r < 'A' || r > 'Z' }) < 0
	digits := len(terr) == 3 && strings.IndexFunc(terr, func(r rune) bool { return !isASCIIDigit(r) }) < 0
	return upper || digits
}

// isCodeToken reports whether s is a codeset or modifier: an ASCII letter or
// digit followed by letters, digits, '-' and '_'.
func isCodeToken(s string) bool {
	if s == "" || !isASCIIAlnum(rune(s[0])) {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool { return !isASCIIAlnum(r) && r != '-' && r != '_' }) < 0
}

// languageGrammar accepts LANGUAGE's form: locale names separated by ':'.
func languageGrammar() grammar {
	return grammar{
		accepts: "locale names separated by ':', like de_DE:de:en",
		check: func(v string) string {
			if p := tooLong(v, 4*maxLocaleLen); p != "" {
				return p
			}
			if p := badByte(v, func(r rune) bool { return isASCIIAlnum(r) || strings.ContainsRune("_.@-:", r) }); p != "" {
				return p
			}
			for l := range strings.SplitSeq(v, ":") {
				if l != "" && !validLocale(l) {
					return "it is not a list of locale names"
				}
			}
			return ""
		},
	}
}

// tzGrammar accepts a time zone name as tzdata spells them: components of
// ASCII letters, digits, '.', '_', '+' and '-', each starting with a letter,
// separated by single '/' (Europe/Paris, UTC, Etc/GMT+1,
// America/Argentina/Buenos_Aires). No leading '/' or ':' (which name a file),
// no "..", and no ',' or '<', so no POSIX rule with daylight-saving dates.
// Whether the zone exists is not checked: glibc reads a name it finds no
// zone file for as a POSIX offset (XYZ-3), or as UTC, and reads no other
// file.
func tzGrammar() grammar {
	return grammar{
		accepts: "a time zone name like UTC, Europe/Paris or Etc/GMT+1: letters, digits and . _ + -, in components that start with a letter, separated by '/' (no leading '/' or ':'; a name without a zone file, like XYZ-3, is a fixed offset), at most 64 bytes",
		check: func(v string) string {
			if p := tooLong(v, 64); p != "" {
				return p
			}
			if v == "" {
				return "it is empty (leave TZ out for the system's zone)"
			}
			if p := badByte(v, func(r rune) bool { return isASCIIAlnum(r) || strings.ContainsRune("/._+-", r) }); p != "" {
				return p
			}
			if v[0] == '/' {
				return "byte 0 is '/', which is not allowed at the start (it names a file)"
			}
			for c := range strings.SplitSeq(v, "/") {
				if c == "" || !isASCIILetter(rune(c[0])) {
					return "a component is empty or does not start with a letter"
				}
			}
			return ""
		},
	}
}

// termGrammar accepts a terminal type name: an ASCII letter or digit, then
// letters, digits, '.', '_', '+' and '-' (xterm-256color, screen.xterm,
// vt100, dumb), at most 64 bytes. No '/', so no terminal description is
// read from a file the agent chose.
func termGrammar() grammar {
	return grammar{
		accepts: "a terminal type like xterm-256color or dumb: letters, digits and . _ + -, starting with a letter or digit, at most 64 bytes",
		check: func(v string) string {
			if p := tooLong(v, 64); p != "" {
				return p
			}
			if v == "" {
				return "it is empty"
			}
			if p := badByte(v, func(r rune) bool { return isASCIIAlnum(r) || strings.ContainsRune("._+-", r) }); p != "" {
				return p
			}
			if !isASCIIAlnum(rune(v[0])) {
				return "it does not start with a letter or digit"
			}
			return ""
		},
	}
}

// maxWordLen bounds the values of variables an administrator allows.
const maxWordLen = 1024

// wordGrammar is the default for variables an administrator allows with
// env_allow: ASCII letters, digits and _ . , : / @ % + = -, at most
// maxWordLen bytes. It has no white space, quotes, or shell or Perl
// metacharacters; docs/execution.md ("Values") says why.
func wordGrammar() grammar {
	return grammar{
		accepts: fmt.Sprintf("ASCII letters, digits and _ . , : / @ %% + = - only, at most %d bytes (the default for variables allowed by env_allow)", maxWordLen),
		check: func(v string) string {
			if p := tooLong(v, maxWordLen); p != "" {
				return p
			}
			return badByte(v, func(r rune) bool { return isASCIIAlnum(r) || strings.ContainsRune("_.,:/@%+=-", r) })
		},
	}
}

// personGrammar accepts a person's name for git: letters and digits of any
// script, combining marks, spaces and . , ' _ @ + -, at most 256 bytes.
func personGrammar() grammar {
	return grammar{
		accepts: "a person's name: letters and digits of any script, spaces and . , ' _ @ + - only, at most 256 bytes",
		check: func(v string) string {
			if p := tooLong(v, 256); p != "" {
				return p
			}
			return badByte(v, func(r rune) bool {
				return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || strings.ContainsRune(" .,'_@+-", r)
			})
		},
	}
}

// dateGrammar accepts a date as git reads it: "1700000000 +0100",
// "2005-04-07T22:13:13+02:00", "Thu, 07 Apr 2005 22:13:13 +0200".
func dateGrammar() grammar {
	return grammar{
		accepts: "a date: ASCII letters, digits, spaces and : + - . , only, at most 64 bytes",
		check: func(v string) string {
			if p := tooLong(v, 64); p != "" {
				return p
			}
			return badByte(v, func(r rune) bool { return isASCIIAlnum(r) || strings.ContainsRune(" :+-.,", r) })
		},
	}
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

// ValidAllowPattern reports whether p is usable in env_allow: a variable
// name, or a prefix of one followed by a single trailing '*', that can match
// no variable of the deny list. A lone "*" is refused, and so is an entry
// such as "PYTHONPATH", "LD_*" or "L*" (which covers LD_PRELOAD): it would
// suggest a permission that does not exist. The error quotes p.
func ValidAllowPattern(p string) error {
	prefix, glob := strings.CutSuffix(p, "*")
	switch {
	case p == "":
		return errors.New("an empty string is not a variable name")
	case p == "*":
		return errors.New(`"*" would allow every variable, including LD_PRELOAD; list names or prefixes such as "MYAPP_*"`)
	case strings.Contains(prefix, "*"):
		return fmt.Errorf("%q: '*' may only appear once, at the end, as in \"MYAPP_*\"", p)
	case !proto.ValidEnvName(prefix):
		return fmt.Errorf("%q is not a variable name, or a name prefix followed by one '*' ([A-Za-z_][A-Za-z0-9_]*)", p)
	}
	if !glob {
		if reason := denyReason(p); reason != "" {
			return fmt.Errorf("%q is on the deny list and can never be allowed: %s", p, reason)
		}
		return nil
	}
	upper := strings.ToUpper(prefix)
	var hits []string
	for _, r := range denyRules() {
		dp, isPrefix := strings.CutSuffix(r.pattern, "*")
		if strings.HasPrefix(dp, upper) || isPrefix && strings.HasPrefix(upper, dp) {
			hits = append(hits, r.pattern)
		}
	}
	if len(hits) > 0 {
		return fmt.Errorf("%q would also match %s, on the deny list; list the names you need, or a narrower prefix", p, strings.Join(hits, ", "))
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
