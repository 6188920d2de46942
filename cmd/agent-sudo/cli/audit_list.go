package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/glob"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
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

// rowFilter is the listing's selection.
type rowFilter struct {
	session, host, daemonHost *glob.Pattern
	// uid, when set, is the requester's uid the rows must have.
	uid          *uint32
	since, until time.Time
	status       map[string]bool
}

// selected returns the summaries f matches, in order.
func (f rowFilter) selected(all []*audit.Summary) []*audit.Summary {
	var rows []*audit.Summary
	for _, s := range all {
		if f.match(s) {
			rows = append(rows, s)
		}
	}
	return rows
}

// knownStatuses are the statuses --status accepts.
func knownStatuses() []string {
	return []string{"ok", "denied", "timeout", "error", audit.StatusWithdrawn, audit.StatusPending, audit.StatusRunning}
}

// compileFilter compiles a --session or --host pattern: the rules' glob
// syntax, so a filter means what a rule's session pattern means.
func compileFilter(pattern string) (*glob.Pattern, error) {
	g, err := glob.Compile(pattern)
	if err != nil {
		return nil, err
	}
	return &g, nil
}

func newRowFilter(o *auditListOptions, deps auditDeps) (rowFilter, error) {
	var f rowFilter
	var err error
	if o.session != "" {
		if f.session, err = compileFilter(o.session); err != nil {
			return f, fmt.Errorf("--session: %w", err)
		}
	}
	if o.host != "" {
		if f.host, err = compileFilter(o.host); err != nil {
			return f, fmt.Errorf("--host: %w", err)
		}
	}
	if o.daemonHost != "" {
		if f.daemonHost, err = compileFilter(o.daemonHost); err != nil {
			return f, fmt.Errorf("--daemon-host: %w", err)
		}
	}
	if o.uid != "" {
		uid, err := parseUID(o.uid)
		if err != nil {
			return f, fmt.Errorf("--uid: %w", err)
		}
		f.uid = &uid
	}
	if o.since != "" {
		if f.since, err = parseWhen(o.since, deps); err != nil {
			return f, fmt.Errorf("--since: %w", err)
		}
	}
	if o.until != "" {
		if f.until, err = parseWhen(o.until, deps); err != nil {
			return f, fmt.Errorf("--until: %w", err)
		}
	}
	if !f.since.IsZero() && !f.until.IsZero() && !f.since.Before(f.until) {
		return f, fmt.Errorf("--since %s is not before --until %s", f.since.Format(time.RFC3339), f.until.Format(time.RFC3339))
	}
	if o.status != "" {
		f.status = map[string]bool{}
		for _, s := range strings.Split(o.status, ",") {
			if !slices.Contains(knownStatuses(), s) {
				return f, fmt.Errorf("--status %q: want one of %s (comma-separated)", s, strings.Join(knownStatuses(), ", "))
			}
			f.status[s] = true
		}
	}
	return f, nil
}

func (f rowFilter) match(s *audit.Summary) bool {
	switch {
	case f.session != nil && !f.session.Match(s.Session),
		f.host != nil && !f.host.Match(s.Host),
		f.daemonHost != nil && !f.daemonHost.Match(s.DaemonHost),
		f.uid != nil && (s.Peer == nil || s.Peer.UID != *f.uid),
		!f.since.IsZero() && s.Time.Before(f.since),
		!f.until.IsZero() && !s.Time.Before(f.until),
		f.status != nil && !f.status[s.Status]:
		return false
	}
	return true
}

// parseWhen reads a --since or --until value: a duration before now (with
// d for days), a date (midnight, local time), or an RFC 3339 time.
func parseWhen(v string, deps auditDeps) (time.Time, error) {
	if d, ok := parseAgo(v); ok {
		return deps.now().Add(-d), nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, v, deps.loc); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a duration ago (2h, 90m, 7d), a date (2026-11-20) or an RFC 3339 time (2026-11-20T14:30:00Z)", v)
}

// parseAgo reads a non-negative duration, allowing a leading number of
// days: "7d", "1d12h", "2h".
func parseAgo(v string) (time.Duration, bool) {
	var days int64
	if i := strings.IndexByte(v, 'd'); i > 0 {
		n, err := strconv.ParseInt(v[:i], 10, 32)
		if err != nil || n < 0 {
			return 0, false
		}
		days, v = n, v[i+1:]
	}
	var d time.Duration
	if v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 0 || v[0] == '+' {
			return 0, false
		}
	} else if days == 0 {
		return 0, false
	}
	return d + time.Duration(days)*24*time.Hour, true
}

// table renders summaries as aligned columns. Every cell is escaped.
type table struct {
	loc *time.Location
	// daemon adds the DAEMON column, the host whose daemon wrote the
	// request's records, when several logs are read.
	daemon bool
	// wide shows every column in full (--wide). Otherwise the table has
	// the columns narrowColumns names and fits tableWidth: the ID column
	// shows the shortest prefix that tells the rows apart, and a cell too
	// long for its column is cut with an ellipsis.
	wide   bool
	widths []int // set by render, reused by row for --follow
	// idWidth is the width of the ID prefixes shown (narrow table).
	idWidth int
}

// The narrow table's bounds. Its columns are the ones a reader needs to
// find a request: when, which (the id prefix to pass to audit show), whose
// session, what became of it, who decided, how it exited and what it ran.
const (
	// tableWidth is the width the narrow table fits, that of the smallest
	// common terminal.
	tableWidth = 80
	// minIDPrefix is the shortest ID prefix shown.
	minIDPrefix = 8
	// shortTime is the narrow table's time format; --wide and show give
	// seconds and the year.
	shortTime = "01-02 15:04"
)

// Column titles.
const (
	colTime, colDaemon, colID, colUID, colSession, colHost  = "TIME", "DAEMON", "ID", "UID", "SESSION", "HOST"
	colStatus, colDecided, colExit, colDuration, colCommand = "STATUS", "DECIDED BY", "EXIT", "DURATION", "COMMAND"
)

// The narrow table is wider than tableWidth only when the ID prefixes that
// tell its rows apart leave too little room: a prefix that does not name
// one request would be of no use to audit show.

// header returns the column titles.
func (t *table) header() []string {
	var h []string
	if t.wide {
		h = []string{colTime, colID, colUID, colSession, colHost, colStatus, colDecided, colExit, colDuration, colCommand}
	} else {
		h = []string{colTime, colID, colSession, colStatus, colDecided, colExit, colCommand}
	}
	if t.daemon {
		h = slices.Insert(h, 1, colDaemon)
	}
	return h
}

func (t *table) cells(s *audit.Summary) []string {
	cmd, _ := termtext.CommandLine(s.Pipeline)
	if !t.wide {
		id := termtext.Esc(s.ID)
		if t.idWidth > 0 {
			id = prefix(id, t.idWidth)
		}
		cells := []string{
			s.Time.In(t.loc).Format(shortTime), orDash(id), orDash(termtext.Esc(s.Session)),
			termtext.Esc(s.Status), orDash(termtext.Esc(s.DecidedBy)), orDash(audit.JoinExitCodes(s.ExitCodes, ",")), orDash(cmd),
		}
		if t.daemon {
			cells = slices.Insert(cells, 1, orDash(termtext.Esc(s.DaemonHost)))
		}
		return cells
	}
	dur := "-"
	if s.Duration > 0 {
		dur = s.Duration.Round(time.Millisecond).String()
	}
	// The uid is the kernel's word for who asked; the session is a label
	// the agent chose.
	uid := "-"
	if s.Peer != nil {
		uid = strconv.FormatUint(uint64(s.Peer.UID), 10)
	}
	cells := []string{
		s.Time.In(t.loc).Format(time.DateTime), orDash(termtext.Esc(s.ID)), uid, orDash(termtext.Esc(s.Session)), orDash(termtext.Esc(s.Host)),
		termtext.Esc(s.Status), orDash(termtext.Esc(s.DecidedBy)), orDash(audit.JoinExitCodes(s.ExitCodes, ",")), dur, orDash(cmd),
	}
	if t.daemon {
		cells = slices.Insert(cells, 1, orDash(termtext.Esc(s.DaemonHost)))
	}
	return cells
}

// render returns the header and rows, aligned; the narrow table fitted to
// tableWidth.
func (t *table) render(rows []*audit.Summary) string {
	if !t.wide {
		t.idWidth = uniquePrefix(rows)
	}
	all := [][]string{t.header()}
	for _, s := range rows {
		all = append(all, t.cells(s))
	}
	t.widths = make([]int, len(all[0]))
	for _, r := range all {
		for i, c := range r {
			t.widths[i] = max(t.widths[i], termtext.Width(c))
		}
	}
	if !t.wide {
		t.fit()
	}
	var b strings.Builder
	for _, r := range all {
		b.WriteString(t.line(r))
	}
	return b.String()
}

// fit narrows the columns, in shrinkOrder, until the table is at most
// tableWidth wide, or every column is as narrow as it goes.
func (t *table) fit() {
	// Each column in turn is cut down to the width here until the table
	// fits; the command keeps 24 columns until the others are as narrow
	// as they go.
	shrinkOrder := []struct {
		col   string
		width int
	}{{colCommand, 24}, {colDecided, 10}, {colSession, 8}, {colDaemon, 8}, {colCommand, 12}}
	h := t.header()
	total := 2 * (len(t.widths) - 1)
	for _, w := range t.widths {
		total += w
	}
	for _, s := range shrinkOrder {
		i := slices.Index(h, s.col)
		if total <= tableWidth {
			break
		}
		if i < 0 || t.widths[i] <= s.width {
			continue
		}
		cut := min(total-tableWidth, t.widths[i]-s.width)
		t.widths[i] -= cut
		total -= cut
	}
}

// uniquePrefix returns the length of the shortest prefix, at least
// minIDPrefix, that tells apart the escaped ids of rows with different
// ids; a request whose id was reused keeps the same prefix as its twin.
func uniquePrefix(rows []*audit.Summary) int {
	ids := map[string]bool{}
	longest := 0
	for _, s := range rows {
		id := termtext.Esc(s.ID)
		ids[id] = true
		longest = max(longest, utf8.RuneCountInString(id))
	}
	for n := minIDPrefix; n < longest; n++ {
		seen := make(map[string]bool, len(ids))
		clash := false
		for id := range ids {
			p := prefix(id, n)
			if seen[p] {
				clash = true
				break
			}
			seen[p] = true
		}
		if !clash {
			return n
		}
	}
	return max(longest, minIDPrefix)
}

// prefix returns the first n characters of s.
func prefix(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// ellipsis ends a cut cell. It is ASCII: U+2026 takes one column on most
// terminals and two on some, and the columns would not line up on either
// if its width were guessed.
const ellipsis = "..."

// clip returns s if it is at most w columns wide, else as much of it as
// fits before an ellipsis in w columns.
func clip(s string, w int) string {
	if termtext.Width(s) <= w {
		return s
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		rw := termtext.Width(string(r))
		if used+rw > w-len(ellipsis) {
			break
		}
		b.WriteRune(r)
		used += rw
	}
	b.WriteString(ellipsis)
	return b.String()
}

// row returns one row aligned with the table already printed.
func (t *table) row(s *audit.Summary) string { return t.line(t.cells(s)) }

func (t *table) line(cells []string) string {
	var b strings.Builder
	for i, c := range cells {
		w := 0
		if i < len(t.widths) {
			w = t.widths[i]
		}
		if !t.wide && w > 0 {
			c = clip(c, w)
		}
		b.WriteString(c)
		if i == len(cells)-1 {
			break
		}
		b.WriteString(strings.Repeat(" ", max(0, w-termtext.Width(c))+2))
	}
	b.WriteString("\n")
	return b.String()
}

// rowJSON is one request in --json output.
type rowJSON struct {
	ID         string      `json:"id"`
	Session    string      `json:"session"`
	Host       string      `json:"host"`
	DaemonHost string      `json:"daemon_host,omitempty"`
	Status     string      `json:"status"`
	Time       time.Time   `json:"time"`
	DecidedBy  string      `json:"decided_by"`
	Verdict    string      `json:"verdict,omitempty"`
	ExitCodes  []int       `json:"exit_codes"`
	DurationNS int64       `json:"duration_ns,omitempty"`
	Pipeline   [][]string  `json:"pipeline"`
	Reason     string      `json:"reason,omitempty"`
	Privileged *bool       `json:"privileged,omitempty"`
	Message    string      `json:"message,omitempty"`
	Peer       *audit.Peer `json:"peer,omitempty"`
	Ref        string      `json:"ref,omitempty"`
	Location   string      `json:"location"`
}

// jsonRow returns s as one line of ASCII-only JSON.
func jsonRow(s *audit.Summary) string {
	r := rowJSON{
		ID: s.ID, Session: s.Session, Host: s.Host, DaemonHost: s.DaemonHost, Status: s.Status, Time: s.Time, DecidedBy: s.DecidedBy,
		Verdict: s.Verdict, ExitCodes: s.ExitCodes, DurationNS: int64(s.Duration), Pipeline: s.Pipeline,
		Reason: s.Reason, Privileged: s.Privileged, Message: s.Message, Peer: s.Peer, Ref: s.Ref,
		Location: locationOf(s),
	}
	if r.ExitCodes == nil {
		r.ExitCodes = []int{}
	}
	if r.Pipeline == nil {
		r.Pipeline = [][]string{}
	}
	b, err := json.Marshal(r)
	if err != nil {
		// Cannot happen: every field is a plain value.
		return fmt.Sprintf("{\"id\":%q,\"error\":%q}\n", s.ID, err.Error())
	}
	return string(termtext.ASCIIJSON(b)) + "\n"
}
