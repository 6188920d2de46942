package cli

import (
	"context"
	"errors"
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
	pid                          int
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
	fset.StringVar(&o.user, "user", "", "decide as `user` (name or id) and the groups the user database gives it (default: you)")
	fset.IntVar(&o.pid, "pid", 0, "decide as the running process `PID`, with the uid and groups the kernel gives it, as the daemon sees a connecting process")
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

The first line says whose uid and groups decide, and where they came from.
The daemon uses the groups the kernel gives the connecting process; --user
reads the user database instead, and the two differ for a process started
before its user's groups changed (gpasswd -d removes a user from a group,
but its running processes keep it). --pid PID decides as that running
process, with the kernel's view of it.
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
	var (
		peer   *rules.Peer
		source string
	)
	switch {
	case o.user != "" && flagSet(fset, "pid"):
		return inv.fail(exitUsage, "rules test: --user and --pid cannot both be given; see 'agent-sudo help rules test'")
	case flagSet(fset, "pid"):
		peer, source, err = processPeer(o.pid)
		if err != nil {
			return inv.fail(exitUsage, "rules test: --pid: %v", err)
		}
	default:
		peer, source, err = testPeer(o.user)
		if err != nil {
			return inv.fail(exitUsage, "rules test: --user: %v", err)
		}
	}
	out := &strings.Builder{}
	fmt.Fprintf(out, "peer: %s; %s\n", visible(peerText(peer)), source)
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

// Where rules test's peer came from, for its first line.
const (
	sourceSelf = "uid and groups from the kernel: this process's, as the daemon reads a connecting process's"
	sourceDB   = "groups from the user database (/etc/group), not from a process: the daemon uses the connecting process's kernel groups, " +
		"which differ for a process started before the user's groups changed; use --pid to decide as a running process"
)

// peerText is "uid N (name), groups G1,G2" for the first line of rules test.
func peerText(p *rules.Peer) string {
	t := "uid " + strconv.FormatUint(uint64(p.UID), 10)
	if u, err := user.LookupId(strconv.FormatUint(uint64(p.UID), 10)); err == nil {
		t += " (" + u.Username + ")"
	}
	gs := make([]string, len(p.GIDs))
	for i, g := range p.GIDs {
		gs[i] = strconv.FormatUint(uint64(g), 10)
	}
	return t + ", groups " + strings.Join(gs, ",")
}

// processPeer is the peer the daemon would see if the process pid
// connected: its effective uid and gid and its supplementary groups, as
// SO_PEERCRED and SO_PEERGROUPS report them, read from /proc/PID/status.
func processPeer(pid int) (*rules.Peer, string, error) {
	if pid <= 0 {
		return nil, "", fmt.Errorf("%d is not a process id (a positive number)", pid)
	}
	path := fmt.Sprintf("/proc/%d/status", pid)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("process %d: %w", pid, err)
	}
	p, err := parseStatusCreds(string(b))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return p, fmt.Sprintf("uid and groups from the kernel: %s, as the daemon reads a connecting process's", path), nil
}

// parseStatusCreds reads the effective uid and gid (the second field of
// "Uid:" and "Gid:") and the "Groups:" of a /proc/PID/status. A field that
// is missing, given twice or not a number is an error naming it.
func parseStatusCreds(status string) (*rules.Peer, error) {
	var uid, gid *uint32
	var groups []uint32
	seenGroups := false
	for n, line := range strings.Split(status, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch key {
		case "Uid", "Gid":
			f := strings.Fields(val)
			if len(f) != 4 {
				return nil, fmt.Errorf("line %d: %s: %d fields, want 4 (real, effective, saved, filesystem)", n+1, key, len(f))
			}
			id, err := account.ParseID(f[1])
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: field 2 (effective): %w", n+1, key, err)
			}
			dst := &uid
			if key == "Gid" {
				dst = &gid
			}
			if *dst != nil {
				return nil, fmt.Errorf("line %d: %s given twice", n+1, key)
			}
			*dst = &id
		case "Groups":
			if seenGroups {
				return nil, fmt.Errorf("line %d: Groups given twice", n+1)
			}
			seenGroups = true
			for i, g := range strings.Fields(val) {
				id, err := account.ParseID(g)
				if err != nil {
					return nil, fmt.Errorf("line %d: Groups: field %d: %w", n+1, i+1, err)
				}
				groups = append(groups, id)
			}
		}
	}
	switch {
	case uid == nil:
		return nil, errors.New("no Uid line")
	case gid == nil:
		return nil, errors.New("no Gid line")
	case !seenGroups:
		return nil, errors.New("no Groups line")
	}
	return &rules.Peer{UID: *uid, GIDs: append([]uint32{*gid}, groups...)}, nil
}

// testPeer is the peer a test request comes from, and where it came from:
// this process's user and groups, or the named user and the groups the
// user database gives it.
func testPeer(name string) (*rules.Peer, string, error) {
	if name == "" {
		p := &rules.Peer{UID: uint32(os.Geteuid()), GIDs: []uint32{uint32(os.Getegid())}}
		groups, err := os.Getgroups()
		if err != nil {
			return nil, "", err
		}
		for _, g := range groups {
			p.GIDs = append(p.GIDs, uint32(g))
		}
		return p, sourceSelf, nil
	}
	u, err := user.LookupId(name)
	if err != nil || strings.TrimLeft(name, "0123456789") != "" {
		u, err = user.Lookup(name)
	}
	if err != nil {
		return nil, "", err
	}
	uid, err := account.ParseID(u.Uid)
	if err != nil {
		return nil, "", fmt.Errorf("user %q has the uid %q in the user database: %w", name, u.Uid, err)
	}
	p := &rules.Peer{UID: uid}
	gids, err := u.GroupIds()
	if err != nil {
		return nil, "", fmt.Errorf("groups of %q: %w", name, err)
	}
	for _, g := range append([]string{u.Gid}, gids...) {
		if id, err := account.ParseID(g); err == nil {
			p.GIDs = append(p.GIDs, id)
		}
	}
	return p, sourceDB, nil
}
