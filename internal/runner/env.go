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
