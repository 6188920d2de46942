package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/agent-sudo/agent-sudo/internal/account"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/rules"
	"github.com/agent-sudo/agent-sudo/internal/runner"
)

// Exit statuses of "agent-sudo rules test" besides 0 (the pipeline would run
// without asking), exitDenied and exitUsage.
const (
	exitRulesAsk    = 1  // a human would be asked
	exitRulesConfig = 78 // the configuration does not load (EX_CONFIG)
)

// rulesMain is "agent-sudo rules": only "rules test" exists.
func rulesMain(ctx context.Context, inv *invocation, args []string) int {
	return inv.runSubcommand(ctx, "rules", args)
}

// envFlags collects repeated --env NAME=VALUE flags.
type envFlags map[string]string

func (e envFlags) String() string { return "" }

func (e envFlags) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q is not NAME=VALUE", v)
	}
	if _, dup := e[name]; dup {
		return fmt.Errorf("%s is given twice", name)
	}
	e[name] = value
	return nil
}

// rulesTestOptions are the flags of rules test.
type rulesTestOptions struct {
	config, session, user        string
	unprivileged, forward, stdin bool
	env                          envFlags
}

func rulesTestFlags(_ *invocation) (*flag.FlagSet, *rulesTestOptions) {
	o := &rulesTestOptions{env: envFlags{}}
	fset := rulesTestUsage().newFlagSet()
	fset.StringVar(&o.config, "config", config.DefaultPath, "the configuration `file`; without the default file, the built-in defaults: everything asks")
	fset.StringVar(&o.session, "session", "", "the request's session `label`")
	fset.BoolVar(&o.unprivileged, "unprivileged", false, "decide a request with privileged = false (default: privileged)")
	fset.BoolVar(&o.forward, "forward-agent", false, "decide a request that forwards the SSH agent")
	fset.BoolVar(&o.stdin, "stdin", false, "decide a request that carries stdin (the stdin extension)")
	fset.StringVar(&o.user, "user", "", "decide as `user` (name or id) and its groups (default: you)")
	fset.Var(o.env, "env", "an environment variable the request carries, `NAME=VALUE`; repeatable")
	return fset, o
}

func rulesTestUsage() *usage {
	return &usage{
		name: "rules test",
		synopsis: []string{
			"agent-sudo rules test [flags] [--] CMD [ARG...] ['|' CMD [ARG...]]...",
		},
		text: `Decides a request with the rules of a configuration, as agent-sudod would,
and says how; it runs nothing and needs no daemon. For each stage it prints
the program as the daemon resolves it with secure_path, the allow rules that
match but were passed over and why (an argument outside what the pattern
describes, an environment variable the rule does not list, agent forwarding
the rule does not allow), and the rule that decides it or that none does.
Then the pipeline's verdict in the daemon's words, and the rule linter's
warnings: allow rules that may give root away.
`,
		exits: []exitDoc{
			{"0", "the pipeline would run without asking"},
			{"1", "a human would be asked"},
			{"2", "usage error: a bad flag or flag value, or an empty stage"},
			{"74", "the output could not be written"},
			{"77", "the pipeline would be denied, or refused before the rules"},
			{"78", "the configuration does not load"},
		},
		args: true,
	}
}

func rulesTestHelp(inv *invocation, w io.Writer) error {
	fset, _ := rulesTestFlags(inv)
	return rulesTestUsage().write(w, fset)
}

// rulesTestMain decides a pipeline with the configuration's rules as the
// daemon would, and prints how.
func rulesTestMain(_ context.Context, inv *invocation, args []string) int {
	fset, o := rulesTestFlags(inv)
	args, code, ok := inv.parse(rulesTestUsage(), fset, args)
	if !ok {
		return code
	}
	stages, err := splitStages(args)
	if err != nil {
		return inv.fail(exitUsage, "rules test: %v; see 'agent-sudo help rules test'", err)
	}
	explicit := flagSet(fset, "config")
	cfg, err := config.Load(o.config, explicit)
	if err != nil {
		return inv.fail(exitRulesConfig, "rules test: %v", err)
	}
	engine, err := cfg.Engine()
	if err != nil {
		return inv.fail(exitRulesConfig, "rules test: %v", err)
	}
	peer, err := testPeer(o.user)
	if err != nil {
		return inv.fail(exitUsage, "rules test: --user: %v", err)
	}
	out := &strings.Builder{}
	code = rulesDecide(out, cfg, engine, stages, rules.Query{
		Privileged: !o.unprivileged, Session: o.session, Peer: peer,
		Env: slices.Sorted(maps.Keys(o.env)), ForwardAgent: o.forward, Stdin: o.stdin,
	}, o.env)
	for _, w := range cfg.Lint() {
		fmt.Fprintf(out, "warning: %s\n", visible(w.String()))
	}
	if _, err := io.WriteString(inv.stdout, out.String()); err != nil {
		return inv.fail(exitIO, "write: %v", err)
	}
	return code
}

// rulesDecide writes, for each stage, the program as resolved and the rule
// that decides it, then the verdict, and returns the exit status. q has
// everything but the stages.
func rulesDecide(out io.Writer, cfg *config.Config, engine *rules.Engine, stages [][]string, q rules.Query, env map[string]string) int {
	policy, err := cfg.EnvPolicy()
	if err != nil {
		fmt.Fprintf(out, "verdict: error: %s\n", visible(err.Error()))
		return exitRulesConfig
	}
	if err := policy.Check(env); err != nil {
		fmt.Fprintf(out, "verdict: refused before the rules: %s\n", visible(err.Error()))
		return exitDenied
	}
	var real []string
	for i, st := range stages {
		r, err := runner.Resolve(st[0], cfg.SecurePath)
		if err != nil {
			fmt.Fprintf(out, "verdict: refused before the rules: pipeline[%d]: %s\n", i, visible(err.Error()))
			return exitDenied
		}
		// As the daemon: rules see the path found in the secure path,
		// before symbolic links.
		q.Stages = append(q.Stages, rules.Stage{Program: r.Link, Args: st[1:]})
		real = append(real, r.Path)
	}
	d := engine.Decide(q)
	n := len(q.Stages)
	for i, s := range q.Stages {
		fmt.Fprintf(out, "stage %d of %d: %s\n", i+1, n, visible(strings.Join(append([]string{strconv.Quote(s.Program)}, quoteAll(s.Args)...), " ")))
		if real[i] != s.Program {
			fmt.Fprintf(out, "  the program is a symbolic link to %s; rules see the path above\n", visible(strconv.Quote(real[i])))
		}
		if d.Stages == nil {
			continue
		}
		sd := d.Stages[i]
		for _, p := range sd.Passed {
			fmt.Fprintf(out, "  passed over: rule %s does not allow it: %s\n", visible(strconv.Quote(p.Rule)), visible(p.Why))
		}
		if sd.Rule == "" {
			fmt.Fprintf(out, "  no rule applies: ask\n")
		} else {
			fmt.Fprintf(out, "  rule %s: %s\n", visible(strconv.Quote(sd.Rule)), sd.Action)
		}
	}
	fmt.Fprintf(out, "verdict: %s\n", visible(d.Reason))
	switch d.Action {
	case rules.Allow:
		return 0
	case rules.Deny:
		return exitDenied
	}
	return exitRulesAsk
}

// quoteAll quotes each argument as Go would, so that spaces and empty
// arguments are visible.
func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strconv.Quote(a)
	}
	return out
}

// testPeer is the peer a test request comes from: this process's user and
// groups, or the named user and the groups the user database gives it.
func testPeer(name string) (*rules.Peer, error) {
	if name == "" {
		p := &rules.Peer{UID: uint32(os.Getuid()), GIDs: []uint32{uint32(os.Getgid())}}
		groups, err := os.Getgroups()
		if err != nil {
			return nil, err
		}
		for _, g := range groups {
			p.GIDs = append(p.GIDs, uint32(g))
		}
		return p, nil
	}
	u, err := user.LookupId(name)
	if err != nil || strings.TrimLeft(name, "0123456789") != "" {
		u, err = user.Lookup(name)
	}
	if err != nil {
		return nil, err
	}
	uid, err := account.ParseID(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("user %q has the uid %q in the user database: %w", name, u.Uid, err)
	}
	p := &rules.Peer{UID: uid}
	gids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("groups of %q: %w", name, err)
	}
	for _, g := range append([]string{u.Gid}, gids...) {
		if id, err := account.ParseID(g); err == nil {
			p.GIDs = append(p.GIDs, id)
		}
	}
	return p, nil
}
