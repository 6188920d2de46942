package rules

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
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
	Name string
	// Action is what the rule decides for a stage it applies to.
	Action Action
	// Match holds one pattern per argument, Match[0] being the program.
	Match []string
	// Privileged, when not nil, restricts the rule to requests whose
	// privileged flag equals *Privileged.
	Privileged *bool
	// Session, when not empty, restricts the rule to requests whose session
	// name matches this pattern.
	Session string
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
	program    glob
	fullPath   bool // match program against the full path, not the base name
	args       []glob
	rest       bool // a trailing "**" matches the remaining arguments
	privileged *bool
	session    *glob // nil: any session
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
	g, err := compileGlob(prog)
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
		g, err := compileGlob(p)
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
		g, err := compileGlob(r.Session)
		if err != nil {
			return c, fmt.Errorf("session: %w", err)
		}
		c.session = &g
	}
	return c, nil
}

// Engine applies an ordered list of rules. It is immutable and safe for
// concurrent use.
type Engine struct {
	rules   []compiledRule
	trusted map[string]bool
}

// New validates and compiles rules, in order, and returns an engine that
// lets bare program names match only in trustedDirs. An error names the
// first invalid rule by position and name. Every trusted directory must be a
// clean absolute path; an empty list is valid and means that only patterns
// with a full path can match a program.
func New(rules []Rule, trustedDirs []string) (*Engine, error) {
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
		seen[r.Name] = i + 1
		e.rules = append(e.rules, c)
	}
	return e, nil
}

// Stage is one pipeline stage as the engine sees it.
type Stage struct {
	// Program is the resolved, clean, absolute path of the program.
	Program string
	// Args are the arguments after argv[0].
	Args []string
}

// Query is what the engine decides about.
type Query struct {
	// Stages are the pipeline's stages, in order.
	Stages []Stage
	// Privileged is the request's privileged flag.
	Privileged bool
	// Session is the request's session name.
	Session string
}

// StageDecision is the outcome for one stage.
type StageDecision struct {
	// Action is the action of the rule that applied, or Ask when none did.
	Action Action
	// Rule is the name of the rule that applied, or "" when none did.
	Rule string
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
}

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
		switch {
		case sd.Action == Allow:
			continue
		case sd.Rule == "":
			parts = append(parts, fmt.Sprintf("no rule applies to %s", where(i)))
		default:
			addName(sd.Rule)
			parts = append(parts, fmt.Sprintf("rule %q asks for %s", sd.Rule, where(i)))
		}
	}
	d.Action, d.Rule = Ask, strings.Join(names, ", ")
	d.Reason = "needs approval: " + strings.Join(parts, "; ")
	return d
}

// decideStage returns the first applicable rule's action for s, or Ask.
func (e *Engine) decideStage(s Stage, q Query) StageDecision {
	for i := range e.rules {
		r := &e.rules[i]
		if r.applies(s, q, e.trusted) {
			return StageDecision{Action: r.action, Rule: r.name}
		}
	}
	return StageDecision{Action: Ask}
}

func (r *compiledRule) applies(s Stage, q Query, trusted map[string]bool) bool {
	if r.privileged != nil && *r.privileged != q.Privileged {
		return false
	}
	if r.session != nil && !r.session.match(q.Session) {
		return false
	}
	if r.fullPath {
		if !r.program.match(s.Program) {
			return false
		}
	} else if !trusted[filepath.Dir(s.Program)] || !r.program.match(filepath.Base(s.Program)) {
		return false
	}
	if len(s.Args) < len(r.args) || (!r.rest && len(s.Args) != len(r.args)) {
		return false
	}
	for i, g := range r.args {
		if !g.match(s.Args[i]) {
			return false
		}
	}
	return true
}
