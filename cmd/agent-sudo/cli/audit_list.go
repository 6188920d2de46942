package cli

import (
	"context"
	"errors"
	"flag"
	"io"
	"slices"
	"strings"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/config"
)

// auditListOptions are the listing's flags.
type auditListOptions struct {
	auditSource
	journal              journalFlags
	session, host        string
	daemonHost, uid      string
	since, until, status string
	json, follow, wide   bool
}

func auditListFlags(_ *invocation) (*flag.FlagSet, *auditListOptions) {
	o := &auditListOptions{}
	fset := auditListUsage().newFlagSet()
	o.addFlags(fset)
	fset.StringVar(&o.session, "session", "", "only requests whose session matches `glob` (* matches anything)")
	fset.StringVar(&o.host, "host", "", "only requests whose host (the agent's claim) matches `glob`")
	fset.StringVar(&o.daemonHost, "daemon-host", "", "only requests handled by a daemon whose host name (the DAEMON column) matches `glob`")
	fset.StringVar(&o.uid, "uid", "", "only requests from the requester with `uid` (as the kernel reported it)")
	o.journal.addFlags(fset)
	fset.StringVar(&o.since, "since", "", "only requests received at or after `time`: a duration ago (2h, 7d), a date (2026-11-20) or RFC 3339")
	fset.StringVar(&o.until, "until", "", "only requests received before `time`, in the same forms as --since")
	fset.StringVar(&o.status, "status", "", "only requests with `status` ok, denied, timeout, error, withdrawn, pending or running (comma-separated)")
	fset.BoolVar(&o.json, "json", false, "print JSON lines instead of a table")
	fset.BoolVar(&o.wide, "wide", false, "print every column in full (uid, host, duration, seconds) instead of fitting 80 columns")
	fset.BoolVar(&o.follow, "follow", false, "keep running and print each new request when its outcome is recorded")
	return fset, o
}

func auditListUsage() *usage {
	return &usage{
		name: "audit",
		synopsis: []string{
			"agent-sudo audit [flags]                   list requests, one row each",
			"agent-sudo audit show [flags] ID           every record of one request",
			"agent-sudo audit verify [flags] [FILE...]  check the log's hash chain",
		},
		text: `Read agent-sudod's audit log: which commands agents asked to run, who decided,
and what came out. Each row joins a request's records: when it was received,
its id, session, status, who decided, the exit codes, and the command.
Everything an agent wrote is escaped before it is printed.

The table fits 80 columns: ID is the shortest start of the id (at least 8
characters) that tells the rows apart, which 'audit show' takes, and a cell
too long for its column is cut, ending in "...". --wide prints every column
in full: the time with the year and seconds, the whole id, the uid the
kernel reported for the requester, the host, and how long the command ran.

The log is audit_log of the daemon's configuration (--config, default
` + config.DefaultPath + `), or --log FILE; its rotated files (FILE.1,
FILE.2.gz, ...) are read too, oldest first. It is readable by root and the adm
group. --log and --config may also come before show or verify.

--log may be given more than once, for the logs of several daemons (copied
with scp or rsync, say): their requests are merged by the time each was
received, and a DAEMON column shows the host whose daemon recorded it (the
daemon_host of its records; - in logs written before daemon_host existed).
--follow reads one log.

--journal-dir DIR (or --journal-file FILE) reads the daemons' journal
entries instead, as systemd-journal-remote collects them from many hosts on
a central one: the rows of every host, with the DAEMON column the host name
of the machine that sent each entry (its _HOSTNAME). The journal has no
entry for a request's arrival: TIME is that of its decision, or refusal.

A status is ok, denied, timeout or error as the agent was answered,
withdrawn (the agent went away first), pending (no decision recorded) or
running (allowed, no result recorded); pending and running also remain when
the daemon stopped before recording the outcome. With --follow, requests are
printed again when their outcome is recorded.

'agent-sudo help audit show' and 'agent-sudo help audit verify' describe the
subcommands. See docs/audit.md.
`,
		exits: []exitDoc{
			{"0", "success"},
			{"2", "usage error: a bad flag, flag value or argument"},
			{"65", "a line of the log is corrupt (the listing is still printed)"},
			{"66", "the log cannot be read"},
			{"74", "the output could not be written"},
			{"78", "the configuration cannot be loaded (pass --log)"},
			{"130", "interrupted (--follow ends this way)"},
		},
		args:         true, // refused by auditList, which knows the subcommands
		interspersed: true,
	}
}

func auditHelp(inv *invocation, w io.Writer) error {
	fset, _ := auditListFlags(inv)
	return auditListUsage().write(w, fset)
}

// auditList is "agent-sudo audit" without a subcommand.
func auditList(ctx context.Context, inv *invocation, args []string, deps auditDeps) int {
	u := auditListUsage()
	fset, o := auditListFlags(inv)
	pos, code, ok := inv.parse(u, fset, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		if pos[0] == "show" || pos[0] == "verify" {
			return inv.fail(exitUsage, "audit: only --log and --config may come before %s; give its other flags after it: agent-sudo audit %s [flags] ...", pos[0], pos[0])
		}
		return inv.fail(exitUsage, "audit: unexpected argument %q; the subcommands are show and verify, see 'agent-sudo help audit'", pos[0])
	}
	filter, err := newRowFilter(o, deps)
	if err != nil {
		return inv.fail(exitUsage, "audit: %v", err)
	}
	if o.journal.given() {
		src, err := o.journal.source(&o.auditSource)
		if err == nil && o.follow {
			err = errors.New("--follow reads an audit log, not a journal (journalctl --directory DIR --follow does)")
		}
		if err != nil {
			return inv.fail(exitUsage, "audit: %v", err)
		}
		return inv.withOutput("audit", func(out *errWriter) int {
			return auditListJournal(ctx, inv, out, src, o, filter, deps)
		})
	}
	if o.follow && len(o.logs) > 1 {
		return inv.fail(exitUsage, "audit: --follow reads one log; give --log once (run one 'agent-sudo audit --follow' per log)")
	}
	paths, err := o.paths()
	if err != nil {
		return inv.fail(exitConfig, "audit: %v; pass --log FILE to read a log directly", err)
	}
	return inv.withOutput("audit", func(out *errWriter) int {
		if len(paths) > 1 {
			return auditListMerged(ctx, inv, out, paths, o, filter, deps)
		}
		return auditListPrint(ctx, inv, out, paths[0], o, filter, deps)
	})
}

// auditListMerged prints the requests of several logs (each with its
// rotated files) that filter selects, merged by the time each request was
// received, with the DAEMON column. Each log is joined on its own: two
// daemons may both have a request with the same id.
func auditListMerged(ctx context.Context, inv *invocation, out *errWriter, paths []string, o *auditListOptions, filter rowFilter, deps auditDeps) int {
	var all []*audit.Summary
	bad := false
	for _, path := range paths {
		files, err := audit.Files(path)
		if err != nil {
			return inv.unreadable("audit", err)
		}
		j := audit.NewJoiner()
		for e, err := range audit.Read(ctx, files...) {
			if err != nil {
				if code, stop := inv.readFailed(ctx, err, &bad); stop {
					return code
				}
				continue
			}
			if s, created, _ := j.Add(e); created {
				all = append(all, s)
			}
		}
	}
	// Stable: requests received at the same instant keep the order of
	// the logs as given, and each log its own order.
	slices.SortStableFunc(all, func(a, b *audit.Summary) int { return a.Time.Compare(b.Time) })
	printRows(inv, out, &table{loc: deps.loc, daemon: true, wide: o.wide}, filter.selected(all), o, strings.Join(paths, ", "))
	if bad {
		return exitDataErr
	}
	return 0
}

// auditListPrint prints the requests of the log at path and its rotated
// files that filter selects, and with --follow those recorded later.
func auditListPrint(ctx context.Context, inv *invocation, out *errWriter, path string, o *auditListOptions, filter rowFilter, deps auditDeps) int {
	j := audit.NewJoiner()
	var backlog []*audit.Summary
	caughtUp := false
	bad := false
	t := &table{loc: deps.loc, wide: o.wide}
	printBacklog := func() {
		caughtUp = true
		printRows(inv, out, t, filter.selected(backlog), o, path)
		backlog = nil
	}
	var entries func(yield func(audit.Entry, error) bool)
	if o.follow {
		entries = audit.Follow(ctx, path, audit.FollowOptions{Poll: deps.poll, CaughtUp: printBacklog})
	} else {
		files, err := audit.Files(path)
		if err != nil {
			return inv.unreadable("audit", err)
		}
		entries = audit.Read(ctx, files...)
	}
	for e, err := range entries {
		if err != nil {
			if code, stop := inv.readFailed(ctx, err, &bad); stop {
				return code
			}
			continue
		}
		s, created, done := j.Add(e)
		if s == nil {
			continue
		}
		if !caughtUp {
			if created {
				backlog = append(backlog, s)
			}
			continue
		}
		if done && filter.match(s) {
			if o.json {
				out.WriteString(jsonRow(s))
			} else {
				out.WriteString(t.row(s))
			}
		}
		if out.err != nil {
			break
		}
	}
	if o.follow {
		if out.err == nil && ctx.Err() != nil {
			return exitInterrupted
		}
	} else {
		printBacklog()
	}
	if bad {
		return exitDataErr
	}
	return 0
}

// readFailed handles an error from reading a log: a corrupt line is
// reported and skipped, and *bad set; an interruption or a log that cannot
// be read ends the listing with the status returned (stop true).
func (inv *invocation) readFailed(ctx context.Context, err error, bad *bool) (code int, stop bool) {
	var le *audit.LineError
	switch {
	case errors.As(err, &le):
		inv.corrupt("audit", le)
		*bad = true
		return 0, false
	case ctx.Err() != nil:
		return inv.fail(exitInterrupted, "audit: interrupted"), true
	default:
		return inv.unreadable("audit", err), true
	}
}

// printRows prints the selected rows as JSON lines or as a table; an empty
// table says that nothing in where matches, except while following.
func printRows(inv *invocation, out *errWriter, t *table, rows []*audit.Summary, o *auditListOptions, where string) {
	switch {
	case o.json:
		for _, s := range rows {
			out.WriteString(jsonRow(s))
		}
	case len(rows) == 0 && !o.follow:
		inv.say("audit: no request in %s matches", where)
	case len(rows) > 0 || o.follow:
		out.WriteString(t.render(rows))
	}
}
