package rules

import (
	"github.com/agent-sudo/agent-sudo/internal/glob"
	"github.com/agent-sudo/agent-sudo/internal/hint"
	"github.com/agent-sudo/agent-sudo/proto"

	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/agent-sudo/agent-sudo/internal/account"
)

// Action is what a rule, or a decision, says to do with a request.
type Action string

// The three actions. No others exist.
const (
	// Allow runs the stage (or pipeline) without asking a human.
	Allow Action = "allow"
	// Deny refuses it without asking a human.
	Deny Action = "deny"
	// Ask leaves the decision to a human. It is what applies when no rule
	// does.
	Ask Action = "ask"
)

// Valid reports whether a is Allow, Deny or Ask.
func (a Action) Valid() bool {
	switch a {
	case Allow, Deny, Ask:
		return true
	}
	return false
}

// RestArgs is the Match element that, as the last element, matches zero or
// more remaining arguments.
const RestArgs = "**"

// Rule is one rule as the human wrote it. See the package documentation for
// the meaning of each field.
type Rule struct {
	// Name identifies the rule in decisions and the audit log. Empty means
	// "rule N", N being the rule's 1-based position in the list given to
	// [New].
	Name string `toml:"name"`
	// Action is what the rule decides for a stage it applies to.
	Action Action `toml:"action"`
	// Match holds one pattern per argument, Match[0] being the program.
	Match []string `toml:"match"`
	// Privileged, when not nil, restricts the rule to requests whose
	// privileged flag equals *Privileged.
	Privileged *bool `toml:"privileged"`
	// Session, when not empty, restricts the rule to requests whose session
	// name matches this pattern. The session is a label the client chooses;
	// it authenticates nothing.
	Session string `toml:"session"`
	// User, when not empty, restricts the rule to requests whose peer (as
	// the kernel reported it) is this user: a name, or a numeric id
	// written as a string.
	User string `toml:"user"`
	// UID, when not nil, restricts the rule to requests whose peer has
	// this uid, 0 to 4294967294. It is an int64, as the file's integers
	// are, so that a value out of range is reported rather than wrapped.
	UID *int64 `toml:"uid"`
	// Group, when not empty, restricts the rule to requests whose peer has
	// this group as its primary or a supplementary group: a name, or a
	// numeric id written as a string.
	Group string `toml:"group"`
	// Env lists the environment variables an allow rule permits a request
	// to carry: names, or prefixes ending in '*' ("LC_*"), or "*" for any.
	// An allow rule does not apply to a request carrying a variable it does
	// not list. Only allow rules may have it.
	Env []string `toml:"env"`
	// ForwardAgent lets an allow rule apply to requests that ask for the
	// human's SSH agent to be forwarded; without it such requests are not
	// covered. Only allow rules may have it.
	ForwardAgent bool `toml:"forward_agent"`
	// Stdin lets an allow rule apply to requests that carry the stdin
	// extension: content the agent chose, fed to the first stage and
	// flowing down the pipeline. Without it such requests are not covered,
	// so that a rule written for "tee /etc/motd" does not let an agent
	// write whatever it likes there. Only allow rules may have it.
	Stdin bool `toml:"stdin"`
	// Approvals, on an ask rule, is how many different people must allow
	// a request it asks for: 2 asks for two (the two-person rule); 1, or
	// nil (the key absent), means one. Any other value, and the key on an
	// allow or deny rule, is refused.
	Approvals *int64 `toml:"approvals"`
}

// Validate reports the first thing that makes r unusable, or nil. The error
// names the offending field but not the rule; [New] adds which rule it is.
func (r Rule) Validate() error {
	_, err := compile(r)
	return err
}

// compiledRule is a Rule with its patterns parsed.
type compiledRule struct {
	name       string
	action     Action
	program    glob.Pattern
	fullPath   bool // match program against the full path, not the base name
	args       []glob.Pattern
	rest       bool // a trailing "**" matches the remaining arguments
	privileged *bool
	session    *glob.Pattern // nil: any session
	// uid and gid, when not nil, are the peer's required uid and group;
	// userName and groupName are the names as written, kept when they
	// could not be resolved to ids (the rule then never applies).
	uid, gid            *uint32
	userName, groupName string
	unresolved          bool
	env                 []string // allow rules: permitted names and "PREFIX*"
	forwardAgent        bool
	stdin               bool
	approvals           int
}

func compile(r Rule) (compiledRule, error) {
	c := compiledRule{name: r.Name, action: r.Action}
	if strings.IndexFunc(r.Name, unicode.IsControl) >= 0 {
		return c, fmt.Errorf("name %q contains a control character", r.Name)
	}
	if r.Action == "" {
		return c, errors.New(`action is missing; it must be "allow", "deny" or "ask"`)
	}
	if !r.Action.Valid() {
		return c, fmt.Errorf(`action %q is not valid; it must be "allow", "deny" or "ask"`, string(r.Action))
	}
	if len(r.Match) == 0 {
		return c, errors.New(`match is empty; it needs at least the program, e.g. ["apt-get", "update"]`)
	}
	prog := r.Match[0]
	switch {
	case prog == "":
		return c, errors.New("match[0] is empty; it must name the program")
	case prog == RestArgs:
		return c, errors.New(`match[0] is the program and cannot be "**"; write "/*" for any program, followed by "**" for any arguments`)
	case hasSlash(prog) && !strings.HasPrefix(prog, "/"):
		return c, fmt.Errorf("match[0] %q contains '/' but does not start with '/'; a program pattern with '/' is matched against the absolute path", prog)
	}
	g, err := glob.Compile(prog)
	if err != nil {
		return c, fmt.Errorf("match[0]: %w", err)
	}
	c.program, c.fullPath = g, hasSlash(prog)
	for i, p := range r.Match[1:] {
		if p == RestArgs {
			if i+1 != len(r.Match)-1 {
				return c, fmt.Errorf(`match[%d] is "**", which is only allowed as the last element`, i+1)
			}
			c.rest = true
			break
		}
		g, err := glob.Compile(p)
		if err != nil {
			return c, fmt.Errorf("match[%d]: %w", i+1, err)
		}
		c.args = append(c.args, g)
	}
	if r.Privileged != nil {
		v := *r.Privileged
		c.privileged = &v
	}
	if r.Session != "" {
		g, err := glob.Compile(r.Session)
		if err != nil {
			return c, fmt.Errorf("session: %w", err)
		}
		c.session = &g
	}
	if err := compileIdentity(r, &c); err != nil {
		return c, err
	}
	if r.Approvals != nil {
		if n := *r.Approvals; n != 1 && n != 2 {
			return c, fmt.Errorf("approvals = %d: it must be 1 or 2 (the two-person rule)", n)
		}
		if r.Action != Ask {
			return c, fmt.Errorf("approvals is only meaningful on an ask rule (this one is %q): only a request a human is asked about can wait for two", string(r.Action))
		}
		c.approvals = int(*r.Approvals)
	}
	if r.Action != Allow {
		if r.Env != nil {
			return c, hint.Wrap(fmt.Errorf("env is only meaningful on an allow rule (this one is %q)", string(r.Action)),
				"deny and ask rules apply whatever the request's environment: remove env from this rule")
		}
		if r.ForwardAgent {
			return c, hint.Wrap(fmt.Errorf("forward_agent is only meaningful on an allow rule (this one is %q)", string(r.Action)),
				"deny and ask rules apply whether or not the request forwards the SSH agent: remove forward_agent from this rule")
		}
		if r.Stdin {
			return c, hint.Wrap(fmt.Errorf("stdin is only meaningful on an allow rule (this one is %q)", string(r.Action)),
				"deny and ask rules apply whether or not the request carries stdin: remove stdin from this rule")
		}
	}
	for i, e := range r.Env {
		if err := checkEnvEntry(e); err != nil {
			return c, fmt.Errorf("env[%d]: %w", i, err)
		}
	}
	c.env = append([]string(nil), r.Env...)
	c.forwardAgent = r.ForwardAgent
	c.stdin = r.Stdin
	return c, nil
}

// compileIdentity checks the user, uid and group constraints and keeps
// them in c, numeric ids parsed.
func compileIdentity(r Rule, c *compiledRule) error {
	if r.User != "" && r.UID != nil {
		return errors.New("user and uid both name the peer; use one of them")
	}
	if r.User != "" {
		if err := CheckAccount(r.User, "user"); err != nil {
			return fmt.Errorf("user: %w", err)
		}
		if id, err := account.ParseID(r.User); err == nil {
			c.uid = &id
		} else {
			c.userName = r.User
		}
	}
	if r.UID != nil {
		if *r.UID < 0 || *r.UID >= 1<<32-1 {
			return fmt.Errorf("uid: %d is not a valid uid (0 to 4294967294)", *r.UID)
		}
		v := uint32(*r.UID)
		c.uid = &v
	}
	if r.Group != "" {
		if err := CheckAccount(r.Group, "group"); err != nil {
			return fmt.Errorf("group: %w", err)
		}
		if id, err := account.ParseID(r.Group); err == nil {
			c.gid = &id
		} else {
			c.groupName = r.Group
		}
	}
	return nil
}

// maxAccountName is the longest user or group name accepted; Linux tools
// limit names to 32 bytes, but some directories allow more.
const maxAccountName = 256

// CheckAccount accepts a numeric id or a user or group name made of the
// portable characters (letters, digits, '_', '.', '-', not starting with
// '-' or '.'), optionally ending in '$' as Samba machine accounts do. kind
// is "user" or "group", for the message. The daemon's configuration uses it
// for every account it names, so that a rule's user and group mean what
// allowed_users and allowed_groups do.
func CheckAccount(s, kind string) error {
	if s == "" {
		return fmt.Errorf("an empty string is not a %s name or id", kind)
	}
	if isDigits(s) {
		if _, err := account.ParseID(s); err != nil {
			return fmt.Errorf("%q is not a valid numeric %s id (0 to 4294967294)", s, kind)
		}
		return nil
	}
	if len(s) > maxAccountName {
		return fmt.Errorf("%s name is %d bytes long; at most %d are allowed", kind, len(s), maxAccountName)
	}
	name := strings.TrimSuffix(s, "$")
	ok := name != "" && name[0] != '-' && name[0] != '.'
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
	}
	if !ok {
		return fmt.Errorf("%q is not a valid %s name or numeric id (names use letters, digits, '_', '.' and '-', and do not start with '-' or '.')", s, kind)
	}
	return nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// checkEnvEntry accepts a variable name, a name prefix followed by one
// trailing '*', or "*" alone.
func checkEnvEntry(e string) error {
	if e == "*" {
		return nil
	}
	prefix, star := strings.CutSuffix(e, "*")
	if !proto.ValidEnvName(prefix) {
		if star {
			return fmt.Errorf("%q: write a variable name, a name prefix followed by one '*' (\"LC_*\"), or \"*\"", e)
		}
		return fmt.Errorf("%q is not a valid variable name ([A-Za-z_][A-Za-z0-9_]*)", e)
	}
	return nil
}

// Engine applies an ordered list of rules. It is immutable and safe for
// concurrent use.
type Engine struct {
	rules   []compiledRule
	trusted map[string]bool
}

// Accounts resolves the user and group names that rules name to ids. The
// daemon resolves them once, when it builds its engine, so that a misspelt
// name stops it instead of silently matching nobody.
type Accounts interface {
	// LookupUser returns the uid of the user called name.
	LookupUser(name string) (uint32, error)
	// LookupGroup returns the gid of the group called name.
	LookupGroup(name string) (uint32, error)
}

// New validates and compiles rules, in order, and returns an engine that
// lets bare program names match only in trustedDirs. An error names the
// first invalid rule by position and name. Every trusted directory must be a
// clean absolute path; an empty list is valid and means that only patterns
// with a full path can match a program.
//
// accounts resolves the user and group names of the rules; a name it cannot
// resolve is an error. With a nil accounts names are only checked for shape,
// and a rule that names a user or group by name never applies.
func New(rules []Rule, trustedDirs []string, accounts Accounts) (*Engine, error) {
	e := &Engine{trusted: make(map[string]bool, len(trustedDirs))}
	for _, d := range trustedDirs {
		if !filepath.IsAbs(d) || filepath.Clean(d) != d {
			return nil, fmt.Errorf("trusted directory %q is not a clean absolute path", d)
		}
		e.trusted[d] = true
	}
	seen := make(map[string]int, len(rules))
	for i, r := range rules {
		label := "rule " + strconv.Itoa(i+1)
		if r.Name == "" {
			r.Name = label
		} else {
			label = fmt.Sprintf("%s (%q)", label, r.Name)
		}
		c, err := compile(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		if prev, dup := seen[r.Name]; dup {
			return nil, fmt.Errorf("%s: name %q is already used by rule %d; decisions name their rule, so names must be unique", label, r.Name, prev)
		}
		if err := c.resolve(accounts); err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		seen[r.Name] = i + 1
		e.rules = append(e.rules, c)
	}
	return e, nil
}

// resolve turns the user and group names of c into ids with accounts, or
// marks c unresolved when accounts is nil.
func (c *compiledRule) resolve(accounts Accounts) error {
	if c.userName == "" && c.groupName == "" {
		return nil
	}
	if accounts == nil {
		c.unresolved = true
		return nil
	}
	if c.userName != "" {
		id, err := accounts.LookupUser(c.userName)
		if err != nil {
			return fmt.Errorf("user %q: %w", c.userName, err)
		}
		c.uid = &id
	}
	if c.groupName != "" {
		id, err := accounts.LookupGroup(c.groupName)
		if err != nil {
			return fmt.Errorf("group %q: %w", c.groupName, err)
		}
		c.gid = &id
	}
	return nil
}

// Stage is one pipeline stage as the engine sees it.
type Stage struct {
	// Program is the resolved, clean, absolute path of the program.
	Program string
	// Args are the arguments after argv[0].
	Args []string
}

// Peer is who sent the request, as the kernel reported it: never what the
// request says about itself.
type Peer struct {
	// UID is the peer's user id.
	UID uint32
	// GIDs are the peer's primary and supplementary group ids.
	GIDs []uint32
}

// Query is what the engine decides about.
type Query struct {
	// Stages are the pipeline's stages, in order.
	Stages []Stage
	// Privileged is the request's privileged flag.
	Privileged bool
	// Session is the request's session name, a label the client chose.
	Session string
	// Peer is the requesting peer; nil when unknown, and then no rule with
	// a user, uid or group applies.
	Peer *Peer
	// Env holds the names of the environment variables the request
	// carries.
	Env []string
	// ForwardAgent is the request's forward_agent flag.
	ForwardAgent bool
	// Stdin reports whether the request carries the stdin extension.
	Stdin bool
}

// StageDecision is the outcome for one stage.
type StageDecision struct {
	// Action is the action of the rule that applied, or Ask when none did.
	Action Action
	// Rule is the name of the rule that applied, or "" when none did.
	Rule string
	// Passed lists, in order, the allow rules tried before the deciding
	// one (or before none applied) whose match, privileged, session and
	// peer constraints held but which did not apply because of a condition
	// only allow rules have, each with why: the rules a rule author most
	// likely expected to allow the stage.
	Passed []Passed
	// Approvals is the applying ask rule's approvals (0 when it has none).
	Approvals int
}

// Passed is an allow rule that matched a stage but did not apply to it.
type Passed struct {
	// Rule is the rule's name.
	Rule string
	// Why says which allow-only condition failed. It quotes nothing the
	// request chose except positions and variable names, which are
	// [A-Za-z_][A-Za-z0-9_]*.
	Why string
}

// Decision is the outcome for a whole query.
type Decision struct {
	// Action is Deny if any stage is denied, Allow if every stage is
	// allowed, and Ask otherwise.
	Action Action
	// Rule names the deciding rule(s): for Deny the rule that denied stage
	// Stage; for Allow the distinct allowing rules in stage order, separated
	// by ", "; for Ask the distinct rules that said ask, or "" when the ask
	// is only because no rule applied. Stages holds the same information
	// per stage, unambiguously.
	Rule string
	// Stage is the 0-based index of the denied stage for Deny, and -1
	// otherwise (and for a query denied because it is malformed).
	Stage int
	// Reason explains the decision for a human. It counts stages from 1,
	// as in "stage 2 of 3".
	Reason string
	// Stages has one entry per stage of the query; it is nil when the
	// query was malformed.
	Stages []StageDecision
	// Approvals, on an Ask, is how many different people must allow the
	// request: the most any asking rule says, and at least 1.
	Approvals int
}

// AskPrefix starts the Reason of every Ask decision.
const AskPrefix = "needs approval: "

// Decide applies the rules to q. It never fails: a malformed query (no
// stages, or a program that is not a clean absolute path) is denied with a
// reason, because it can only come from a bug in the caller.
func (e *Engine) Decide(q Query) Decision {
	n := len(q.Stages)
	if n == 0 {
		return Decision{Action: Deny, Stage: -1, Reason: "denied: the pipeline has no stages"}
	}
	for i, s := range q.Stages {
		if !filepath.IsAbs(s.Program) || filepath.Clean(s.Program) != s.Program || s.Program == "/" {
			return Decision{Action: Deny, Stage: -1, Reason: fmt.Sprintf(
				"denied: stage %d of %d: program %q is not a clean absolute path, so no rule can be applied to it", i+1, n, s.Program)}
		}
	}
	d := Decision{Stage: -1, Stages: make([]StageDecision, n)}
	for i, s := range q.Stages {
		d.Stages[i] = e.decideStage(s, q)
	}
	where := func(i int) string {
		return fmt.Sprintf("stage %d of %d: %s", i+1, n, q.Stages[i].Program)
	}
	for i, sd := range d.Stages {
		if sd.Action == Deny {
			d.Action, d.Rule, d.Stage = Deny, sd.Rule, i
			d.Reason = fmt.Sprintf("denied by rule %q (%s)", sd.Rule, where(i))
			return d
		}
	}
	var names, parts []string
	seen := map[string]bool{}
	addName := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	allowed := true
	for _, sd := range d.Stages {
		allowed = allowed && sd.Action == Allow
	}
	if allowed {
		for i, sd := range d.Stages {
			addName(sd.Rule)
			parts = append(parts, fmt.Sprintf("rule %q (%s)", sd.Rule, where(i)))
		}
		d.Action, d.Rule = Allow, strings.Join(names, ", ")
		d.Reason = "allowed by " + strings.Join(parts, ", ")
		return d
	}
	for i, sd := range d.Stages {
		var part string
		switch {
		case sd.Action == Allow:
			continue
		case sd.Rule == "":
			part = fmt.Sprintf("no rule applies to %s", where(i))
		default:
			addName(sd.Rule)
			part = fmt.Sprintf("rule %q asks for %s", sd.Rule, where(i))
		}
		for _, p := range sd.Passed {
			part += fmt.Sprintf(" (rule %q does not allow it: %s)", p.Rule, p.Why)
		}
		parts = append(parts, part)
	}
	d.Action, d.Rule, d.Approvals = Ask, strings.Join(names, ", "), 1
	for _, sd := range d.Stages {
		if sd.Action == Ask {
			d.Approvals = max(d.Approvals, sd.Approvals)
		}
	}
	d.Reason = AskPrefix + strings.Join(parts, "; ")
	if d.Approvals > 1 {
		d.Reason += fmt.Sprintf("; %d different people must allow it", d.Approvals)
	}
	return d
}

// decideStage returns the first applicable rule's action for s, or Ask.
func (e *Engine) decideStage(s Stage, q Query) StageDecision {
	var sd StageDecision
	for i := range e.rules {
		r := &e.rules[i]
		if !r.matches(s, q, e.trusted) {
			continue
		}
		if r.action == Allow {
			if why := r.allowBlocked(s, q); why != "" {
				sd.Passed = append(sd.Passed, Passed{Rule: r.name, Why: why})
				continue
			}
		}
		sd.Action, sd.Rule, sd.Approvals = r.action, r.name, r.approvals
		return sd
	}
	sd.Action = Ask
	return sd
}

// matches reports whether r's match, privileged, session and peer
// constraints hold for s, the conditions that apply to every action.
func (r *compiledRule) matches(s Stage, q Query, trusted map[string]bool) bool {
	if r.privileged != nil && *r.privileged != q.Privileged {
		return false
	}
	if r.session != nil && !r.session.Match(q.Session) {
		return false
	}
	if r.unresolved {
		return false
	}
	if r.uid != nil && (q.Peer == nil || q.Peer.UID != *r.uid) {
		return false
	}
	if r.gid != nil && (q.Peer == nil || !slices.Contains(q.Peer.GIDs, *r.gid)) {
		return false
	}
	if r.fullPath {
		if !r.program.Match(s.Program) {
			return false
		}
	} else if !trusted[filepath.Dir(s.Program)] || !r.program.Match(filepath.Base(s.Program)) {
		return false
	}
	if len(s.Args) < len(r.args) || (!r.rest && len(s.Args) != len(r.args)) {
		return false
	}
	for i, g := range r.args {
		if !g.Match(s.Args[i]) {
			return false
		}
	}
	return true
}

// allowBlocked returns why the allow rule r, which matches s, must not allow
// it, or "" when it may: an argument its pattern's wildcard matched is not
// the kind of path or name the pattern describes, the request carries a
// variable r does not list, or it forwards the SSH agent and r does not say
// forward_agent.
func (r *compiledRule) allowBlocked(s Stage, q Query) string {
	for i, g := range r.args {
		if why := argProblem(g, s.Args[i]); why != "" {
			return fmt.Sprintf("argument %d %s", i+1, why)
		}
	}
	for _, name := range q.Env {
		if !r.permitsEnv(name) {
			if !proto.ValidEnvName(name) {
				return "the request carries an environment variable the rule does not list"
			}
			return fmt.Sprintf("the request carries the environment variable %s, which the rule's env does not list", name)
		}
	}
	if q.ForwardAgent && !r.forwardAgent {
		return "the request forwards the SSH agent and the rule does not say forward_agent = true"
	}
	// stdin enters the first stage and flows down the pipeline, so every
	// stage's allow rule must accept it.
	if q.Stdin && !r.stdin {
		return "the request carries stdin and the rule does not say stdin = true"
	}
	return ""
}

// permitsEnv reports whether r's env list covers the variable name.
func (r *compiledRule) permitsEnv(name string) bool {
	for _, e := range r.env {
		if e == name || e == "*" || strings.HasSuffix(e, "*") && strings.HasPrefix(name, e[:len(e)-1]) {
			return true
		}
	}
	return false
}
