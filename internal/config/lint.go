package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agent-sudo/agent-sudo/internal/account"
	"github.com/agent-sudo/agent-sudo/internal/glob"
	"github.com/agent-sudo/agent-sudo/internal/rules"
	"github.com/agent-sudo/agent-sudo/internal/runner"
)

// Lint returns the rule linter's warnings about c's rules ([rules.Lint]),
// followed by those that depend on the rest of the configuration: an allow
// rule with forward_agent = true while unprivileged_user is empty. Such a
// rule hands the human's SSH agent to a command that runs as the requesting
// agent's own user, whose configuration files (~/.gitconfig, ~/.ssh/config)
// the agent writes and whose processes it can trace: the agent can make the
// command use the keys as it likes. And, when there are notifiers, that
// notify_user may use the agent socket ([NotifyUserWarning]).
func (c *Config) Lint() []rules.Warning {
	ws := rules.Lint(c.Rules, c.TrustedDirs())
	ws = append(ws, c.lintNotifyUser()...)
	ws = append(ws, c.lintNotRootOnly()...)
	if c.UnprivilegedUser != "" {
		return ws
	}
	for i, r := range c.Rules {
		if r.Action != rules.Allow || !r.ForwardAgent {
			continue
		}
		ws = append(ws, rules.Warning{Rule: ruleLabel(i, r.Name), Message: "forward_agent = true with unprivileged_user empty hands the human's SSH agent to a command running as the requesting agent's own user, " +
			"whose configuration (~/.gitconfig, ~/.ssh/config) the agent writes and whose processes it can trace; set unprivileged_user to an account agents cannot write to, or let a human decide"})
	}
	return ws
}

// NotifyUserWarning is the Rule of [Config.Lint]'s warning that
// notify_user may use the agent socket.
const NotifyUserWarning = "notify_user"

// lintNotifyUser warns when there are notifiers and notify_user may use
// the agent socket (the users and groups of "Who can connect" in
// docs/config.md): an agent running as that user can trace its notifiers
// and make them show or send anything. Names that do not resolve are left
// to the checks that refuse them.
func (c *Config) lintNotifyUser() []rules.Warning {
	if len(c.Notify) == 0 {
		return nil
	}
	t, err := runner.LookupTarget(c.NotifyUser)
	if err != nil {
		return nil
	}
	users, groups, groupKey := []string{"root"}, []string{c.SocketGroup}, "socket_group"
	if c.AllowedUsersSet || c.AllowedGroupsSet {
		users, groups, groupKey = c.AllowedUsers, c.AllowedGroups, "allowed_groups"
	}
	why := ""
	for _, u := range users {
		if uid, err := account.UID(u); err == nil && uid == t.UID {
			why = fmt.Sprintf("is listed in allowed_users as %q", u)
			break
		}
	}
	for _, g := range groups {
		if why != "" {
			break
		}
		if gid, err := account.GID(g); err == nil && (gid == t.GID || slices.Contains(t.Groups, gid)) {
			why = fmt.Sprintf("is a member of %s %q", groupKey, g)
		}
	}
	if why == "" {
		return nil
	}
	return []rules.Warning{{Rule: NotifyUserWarning, Message: fmt.Sprintf("%q %s, so it may use the agent socket: an agent running as %s can trace its notifiers "+
		"and make a notification show or send anything (even that a request was approved); notifications only inform, decide at a console, "+
		"and run notifiers as a user no agent runs as where you can (see docs/config.md, \"Notifiers\")", c.NotifyUser, why, c.NotifyUser)}}
}

// lintNotRootOnly warns, in direct mode, about each allow rule whose
// program someone other than root can change, as the daemon would flag it
// NOT ROOT-ONLY on the console (runner.Resolved.Untrusted): a program
// named exactly (a path, or a name found on secure_path) that resolves
// through such a directory or is such a file, or a program pattern whose
// directory ("/opt/tools/*") is such a directory. Whoever can write there
// can make the rule run their own code as root without a human. (In sudo
// mode such programs are refused at request time.) A program that does
// not exist when the configuration is read is not judged.
func (c *Config) lintNotRootOnly() []rules.Warning {
	if c.Exec == runner.ModeSudo {
		return nil
	}
	var ws []rules.Warning
	for i, r := range c.Rules {
		if r.Action != rules.Allow || len(r.Match) == 0 {
			continue
		}
		prog := r.Match[0]
		pg, err := glob.Compile(prog)
		if err != nil {
			continue
		}
		var res runner.Resolved
		pre := pg.Prefix()
		switch slash := strings.LastIndexByte(pre, '/'); {
		case pg.Literal():
			res, err = runner.Resolve(pre, c.SecurePath)
		case strings.HasPrefix(pre, "/") && slash > 0:
			res, err = runner.ResolveDir(pre[:slash])
		default:
			continue
		}
		if err != nil || len(res.Untrusted) == 0 {
			continue
		}
		w := res.Untrusted[0]
		ws = append(ws, rules.Warning{Rule: ruleLabel(i, r.Name), Message: fmt.Sprintf(
			"the program %q is NOT ROOT-ONLY: %s can be changed by someone other than root (%s), who can then make this allow rule run their own code as root without a human; install it in a root-owned directory, or let a human decide (action = \"ask\")",
			prog, w.Path, w.Why)})
	}
	return ws
}
