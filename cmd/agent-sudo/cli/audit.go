package cli

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/config"
	"github.com/agent-sudo/agent-sudo/internal/glob"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// Exit statuses of audit besides the common ones (see the package
// documentation and the subcommands' help).
const (
	exitNotFound = 1  // show: no request has that id
	exitDataErr  = 65 // a corrupt line, or a broken chain (EX_DATAERR)
	exitNoInput  = 66 // the log cannot be read (EX_NOINPUT)
	exitConfig   = 78 // the configuration cannot be loaded (EX_CONFIG)
)

// auditDeps are the parts of the process the listing uses besides the
// invocation; tests replace them.
type auditDeps struct {
	now func() time.Time
	// loc is the time zone times are shown and dates read in.
	loc *time.Location
	// poll is how often --follow looks for new lines.
	poll time.Duration
}

func realAuditDeps() auditDeps {
	return auditDeps{now: time.Now, loc: time.Local, poll: time.Second}
}

// auditSource is where audit reads the log: --log, or audit_log of the
// configuration. Every audit subcommand takes these two flags, and they
// alone may also come before the subcommand's name.
type auditSource struct {
	log, config string
}

func (s *auditSource) addFlags(fset *flag.FlagSet) {
	fset.StringVar(&s.log, "log", "", "read the audit log `file` (default: audit_log of the configuration)")
	fset.StringVar(&s.config, "config", "", "daemon configuration `file` to take audit_log from (default "+config.DefaultPath+")")
}

// path is --log, or audit_log of the configuration.
func (s *auditSource) path() (string, error) {
	if s.log != "" {
		return s.log, nil
	}
	path, explicit := config.DefaultPath, false
	if s.config != "" {
		path, explicit = s.config, true
	}
	cfg, err := config.Load(path, explicit)
	if err != nil {
		return "", err
	}
	return cfg.AuditLog, nil
}

// auditSubcommand tells which audit subcommand args ask for and returns the
// arguments for it: show or verify when args name it, preceded by nothing
// but --log and --config; else the listing, with all of args.
func auditSubcommand(args []string) (string, []string) {
	fset := flag.NewFlagSet("audit", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	var src auditSource
	src.addFlags(fset)
	if fset.Parse(args) != nil || fset.NArg() == 0 {
		return "list", args
	}
	n := len(args) - fset.NArg()
	if name := fset.Arg(0); (name == "show" || name == "verify") && (n == 0 || args[n-1] != "--") {
		return name, append(slices.Clone(args[:n]), fset.Args()[1:]...)
	}
	return "list", args
}

// auditMain is "agent-sudo audit".
func auditMain(ctx context.Context, inv *invocation, args []string) int {
	return runAudit(ctx, inv, args, realAuditDeps())
}

// runAudit runs the audit subcommand args ask for; "audit help" shows the
// help, as "rules help" and "shim help" do.
func runAudit(ctx context.Context, inv *invocation, args []string, deps auditDeps) int {
	if len(args) == 1 && args[0] == "help" {
		return inv.showHelp(auditHelp)
	}
	switch sub, args := auditSubcommand(args); sub {
	case "show":
		return auditShowMain(ctx, inv, args)
	case "verify":
		return auditVerifyMain(ctx, inv, args)
	}
	return auditList(ctx, inv, args, deps)
}

// withOutput runs f with stdout behind an errWriter and returns f's
// status, or exitIO if writing failed.
func (inv *invocation) withOutput(cmd string, f func(out *errWriter) int) int {
	out := &errWriter{w: inv.stdout}
	code := f(out)
	if out.err != nil {
		return inv.fail(exitIO, "%s: write the output: %v", cmd, out.err)
	}
	return code
}

// auditListOptions are the listing's flags.
type auditListOptions struct {
	auditSource
	session, host        string
	since, until, status string
	json, follow         bool
}

func auditListFlags(_ *invocation) (*flag.FlagSet, *auditListOptions) {
	o := &auditListOptions{}
	fset := auditListUsage().newFlagSet()
	o.addFlags(fset)
	fset.StringVar(&o.session, "session", "", "only requests whose session matches `glob` (* matches anything)")
	fset.StringVar(&o.host, "host", "", "only requests whose host matches `glob`")
	fset.StringVar(&o.since, "since", "", "only requests received at or after `time`: a duration ago (2h, 7d), a date (2026-11-20) or RFC 3339")
	fset.StringVar(&o.until, "until", "", "only requests received before `time`, in the same forms as --since")
	fset.StringVar(&o.status, "status", "", "only requests with `status` ok, denied, timeout, error, withdrawn, pending or running (comma-separated)")
	fset.BoolVar(&o.json, "json", false, "print JSON lines instead of a table")
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
its session, status, who decided, the exit codes, how long it ran, and the
command. Everything an agent wrote is escaped before it is printed.

The log is audit_log of the daemon's configuration (--config, default
` + config.DefaultPath + `), or --log FILE; its rotated files (FILE.1,
FILE.2.gz, ...) are read too, oldest first. It is readable by root and the adm
group. --log and --config may also come before show or verify.

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

// auditShowOptions are the flags of audit show.
type auditShowOptions struct {
	auditSource
	json bool
}

func auditShowFlags(_ *invocation) (*flag.FlagSet, *auditShowOptions) {
	o := &auditShowOptions{}
	fset := auditShowUsage().newFlagSet()
	o.addFlags(fset)
	fset.BoolVar(&o.json, "json", false, "print the records themselves, one JSON line each, in ASCII")
	return fset, o
}

func auditShowUsage() *usage {
	return &usage{
		name:     "audit show",
		synopsis: []string{"agent-sudo audit show [flags] ID"},
		text: `Print every record of the request with id ID (all of them, if a client
reused the id), oldest first, every value escaped. With --json, print the
records as the log has them, each as one line of ASCII JSON.
`,
		exits: []exitDoc{
			{"0", "the request's records were printed"},
			{"1", "no request has that id"},
			{"2", "usage error: a bad flag or flag value, or not exactly one ID"},
			{"65", "a line of the log is corrupt"},
			{"66", "the log cannot be read"},
			{"74", "the output could not be written"},
			{"78", "the configuration cannot be loaded (pass --log)"},
			{"130", "interrupted"},
		},
		args:         true,
		interspersed: true,
	}
}

func auditShowHelp(inv *invocation, w io.Writer) error {
	fset, _ := auditShowFlags(inv)
	return auditShowUsage().write(w, fset)
}

// auditVerifyOptions are the flags of audit verify.
type auditVerifyOptions struct {
	auditSource
	anchors listFlag
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func auditVerifyFlags(_ *invocation) (*flag.FlagSet, *auditVerifyOptions) {
	o := &auditVerifyOptions{}
	fset := auditVerifyUsage().newFlagSet()
	o.addFlags(fset)
	fset.Var(&o.anchors, "anchor", "also check that the record with `hash` (from the journal) is in the log; repeatable")
	return fset, o
}

func auditVerifyUsage() *usage {
	return &usage{
		name:     "audit verify",
		synopsis: []string{"agent-sudo audit verify [flags] [FILE...]"},
		text: `Check that every line of the audit log is chained to the one before it, and
name the first line that was altered, removed, inserted or moved. Without
FILE it checks the configured log (--log, or audit_log of --config) and its
rotated files, oldest first; with FILE... the files given, in the order
given (oldest first).

Records cut off the end of the log can only be noticed with --anchor and a
hash from the journal (journalctl -o verbose AGENT_SUDO_AUDIT_TYPE=result
shows AGENT_SUDO_RECORD_HASH). See docs/audit.md.
`,
		exits: []exitDoc{
			{"0", "the chain is intact, and every --anchor is in it"},
			{"2", "usage error: a bad flag or flag value, or FILE with --log or --config"},
			{"65", "the chain is broken, a line is corrupt, or an anchor is missing"},
			{"66", "the log cannot be read"},
			{"74", "the output could not be written"},
			{"78", "the configuration cannot be loaded (pass --log or FILE)"},
			{"130", "interrupted"},
		},
		args:         true,
		interspersed: true,
	}
}

func auditVerifyHelp(inv *invocation, w io.Writer) error {
	fset, _ := auditVerifyFlags(inv)
	return auditVerifyUsage().write(w, fset)
}

// auditShowMain is "agent-sudo audit show".
func auditShowMain(ctx context.Context, inv *invocation, args []string) int {
	u := auditShowUsage()
	fset, o := auditShowFlags(inv)
	pos, code, ok := inv.parse(u, fset, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return inv.fail(exitUsage, "audit show: want exactly one request id, got %d arguments; see 'agent-sudo help audit show'", len(pos))
	}
	path, err := o.path()
	if err != nil {
		return inv.fail(exitConfig, "audit show: %v; pass --log FILE to read a log directly", err)
	}
	return inv.withOutput("audit show", func(out *errWriter) int {
		return auditShow(ctx, inv, out, path, pos[0], o.json)
	})
}

// auditVerifyMain is "agent-sudo audit verify".
func auditVerifyMain(ctx context.Context, inv *invocation, args []string) int {
	u := auditVerifyUsage()
	fset, o := auditVerifyFlags(inv)
	files, code, ok := inv.parse(u, fset, args)
	if !ok {
		return code
	}
	if len(files) > 0 && (o.log != "" || o.config != "") {
		return inv.fail(exitUsage, "audit verify: give either files or --log/--config, not both")
	}
	for _, a := range o.anchors {
		if !isHex64(strings.ToLower(a)) {
			return inv.fail(exitUsage, "audit verify: --anchor %q is not a SHA-256 in hex (64 hex digits)", a)
		}
	}
	if len(files) == 0 {
		path, err := o.path()
		if err != nil {
			return inv.fail(exitConfig, "audit verify: %v; pass --log FILE to read a log directly", err)
		}
		if files, err = audit.Files(path); err != nil {
			return inv.unreadable("audit verify", err)
		}
	}
	return inv.withOutput("audit verify", func(out *errWriter) int {
		return auditVerify(ctx, inv, out, files, o.anchors)
	})
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
	path, err := o.path()
	if err != nil {
		return inv.fail(exitConfig, "audit: %v; pass --log FILE to read a log directly", err)
	}
	return inv.withOutput("audit", func(out *errWriter) int {
		return auditListPrint(ctx, inv, out, path, o, filter, deps)
	})
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) WriteString(s string) {
	if e.err == nil {
		_, e.err = io.WriteString(e.w, s)
	}
}

// unreadable reports a log that cannot be read and returns the status.
func (inv *invocation) unreadable(cmd string, err error) int {
	hint := ""
	switch {
	case errors.Is(err, fs.ErrPermission):
		hint = "; the log is readable by root and the adm group"
	case errors.Is(err, fs.ErrNotExist):
		hint = "; pass --log FILE or --config FILE if agent-sudod writes it elsewhere"
	}
	return inv.fail(exitNoInput, "%s: cannot read the audit log: %v%s", cmd, err, hint)
}

// corrupt reports a corrupt line.
func (inv *invocation) corrupt(cmd string, le *audit.LineError) {
	inv.say("%s: %v; run 'agent-sudo audit verify'", cmd, le)
}

// auditVerify checks the chain of files, oldest first, and prints the
// result.
func auditVerify(ctx context.Context, inv *invocation, out *errWriter, files, anchors []string) int {
	res, err := audit.VerifyWith(ctx, audit.VerifyOptions{Anchors: anchors}, files...)
	var ce *audit.ChainError
	switch {
	case errors.As(err, &ce):
		return inv.fail(exitDataErr, "audit verify: %v", ce)
	case ctx.Err() != nil:
		return inv.fail(exitInterrupted, "audit verify: interrupted")
	case err != nil:
		return inv.unreadable("audit verify", err)
	}
	out.WriteString(fmt.Sprintf("ok: %d %s in %d %s\n", res.Records, plural(res.Records, "record"), res.Files, plural(res.Files, "file")))
	if res.Records > 0 {
		out.WriteString(fmt.Sprintf("last record: seq %d, hash %s\n", res.HeadSeq, res.Head))
	}
	if res.Records > 0 && res.Start != audit.Genesis {
		out.WriteString(fmt.Sprintf("note: the first file checked starts at record %d, continuing a file that was not checked (rotated away?); lines removed from the start of the first file would not show\n", res.StartSeq))
	}
	return 0
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// auditShow prints the records of request id from the log at path and its
// rotated files.
func auditShow(ctx context.Context, inv *invocation, out *errWriter, path, id string, asJSON bool) int {
	files, err := audit.Files(path)
	if err != nil {
		return inv.unreadable("audit show", err)
	}
	found, bad := 0, false
	for e, err := range audit.Read(ctx, files...) {
		var le *audit.LineError
		switch {
		case errors.As(err, &le):
			inv.corrupt("audit show", le)
			bad = true
			continue
		case ctx.Err() != nil:
			return inv.fail(exitInterrupted, "audit show: interrupted")
		case err != nil:
			return inv.unreadable("audit show", err)
		}
		if e.Record.ID != id {
			continue
		}
		found++
		if asJSON {
			out.WriteString(string(asciiJSON(e.Raw)) + "\n")
		} else {
			if found > 1 {
				out.WriteString("\n")
			}
			out.WriteString(prettyRecord(e))
		}
	}
	switch {
	case found == 0 && bad:
		return inv.fail(exitDataErr, "audit show: no request %s found, and the log has corrupt lines", esc(id))
	case found == 0:
		return inv.fail(exitNotFound, "audit show: no request %s in %s", esc(id), strings.Join(files, ", "))
	case bad:
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
	t := &table{loc: deps.loc}
	printBacklog := func() {
		caughtUp = true
		var rows []*audit.Summary
		for _, s := range backlog {
			if filter.match(s) {
				rows = append(rows, s)
			}
		}
		backlog = nil
		if o.json {
			for _, s := range rows {
				out.WriteString(jsonRow(s))
			}
			return
		}
		if len(rows) == 0 && !o.follow {
			inv.say("audit: no request in %s matches", path)
			return
		}
		out.WriteString(t.render(rows))
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
		var le *audit.LineError
		switch {
		case errors.As(err, &le):
			inv.corrupt("audit", le)
			bad = true
			continue
		case ctx.Err() != nil:
			return inv.fail(exitInterrupted, "audit: interrupted")
		case err != nil:
			return inv.unreadable("audit", err)
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

// rowFilter is the listing's selection.
type rowFilter struct {
	session, host *glob.Pattern
	since, until  time.Time
	status        map[string]bool
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

// esc escapes untrusted text for the terminal.
func esc(s string) string {
	e, _ := termtext.Escape(s)
	return e
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// table renders summaries as aligned columns. Every cell is escaped.
type table struct {
	loc    *time.Location
	widths []int // set by render, reused by row for --follow
}

// tableHeader returns the column titles.
func tableHeader() []string {
	return []string{"TIME", "ID", "UID", "SESSION", "HOST", "STATUS", "DECIDED BY", "EXIT", "DURATION", "COMMAND"}
}

func (t *table) cells(s *audit.Summary) []string {
	codes := make([]string, len(s.ExitCodes))
	for i, c := range s.ExitCodes {
		codes[i] = strconv.Itoa(c)
	}
	dur := "-"
	if s.Duration > 0 {
		dur = s.Duration.Round(time.Millisecond).String()
	}
	cmd, _ := termtext.CommandLine(s.Pipeline)
	// The uid is the kernel's word for who asked; the session is a label
	// the agent chose.
	uid := "-"
	if s.Peer != nil {
		uid = strconv.FormatUint(uint64(s.Peer.UID), 10)
	}
	return []string{
		s.Time.In(t.loc).Format(time.DateTime), orDash(esc(s.ID)), uid, orDash(esc(s.Session)), orDash(esc(s.Host)),
		esc(s.Status), orDash(esc(s.DecidedBy)), orDash(strings.Join(codes, ",")), dur, orDash(cmd),
	}
}

// render returns the header and rows, aligned.
func (t *table) render(rows []*audit.Summary) string {
	all := [][]string{tableHeader()}
	for _, s := range rows {
		all = append(all, t.cells(s))
	}
	t.widths = make([]int, len(all[0]))
	for _, r := range all {
		for i, c := range r {
			t.widths[i] = max(t.widths[i], displayWidth(c))
		}
	}
	var b strings.Builder
	for _, r := range all {
		b.WriteString(t.line(r))
	}
	return b.String()
}

// row returns one row aligned with the table already printed.
func (t *table) row(s *audit.Summary) string { return t.line(t.cells(s)) }

func (t *table) line(cells []string) string {
	var b strings.Builder
	for i, c := range cells {
		b.WriteString(c)
		if i == len(cells)-1 {
			break
		}
		w := 0
		if i < len(t.widths) {
			w = t.widths[i]
		}
		b.WriteString(strings.Repeat(" ", max(0, w-displayWidth(c))+2))
	}
	b.WriteString("\n")
	return b.String()
}

// displayWidth is the columns s, already escaped, takes: termtext.Width, the
// width function of the approval console, exact for what every terminal
// agrees on and an upper bound for the rest.
func displayWidth(s string) int {
	return termtext.Width(s)
}

// rowJSON is one request in --json output.
type rowJSON struct {
	ID         string      `json:"id"`
	Session    string      `json:"session"`
	Host       string      `json:"host"`
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
		ID: s.ID, Session: s.Session, Host: s.Host, Status: s.Status, Time: s.Time, DecidedBy: s.DecidedBy,
		Verdict: s.Verdict, ExitCodes: s.ExitCodes, DurationNS: int64(s.Duration), Pipeline: s.Pipeline,
		Reason: s.Reason, Privileged: s.Privileged, Message: s.Message, Peer: s.Peer, Ref: s.Ref,
		Location: s.File + ":" + strconv.Itoa(s.Line),
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
	return string(asciiJSON(b)) + "\n"
}

// asciiJSON rewrites every non-ASCII character of JSON text as a \u escape
// (a surrogate pair above U+FFFF), invalid UTF-8 as \ufffd, DEL as \u007f,
// and the other control characters as spaces: in valid JSON they can only be
// whitespace between tokens (a line from a tampered log may have a raw CR
// there). The JSON means the same, and nothing in it can act on a terminal.
func asciiJSON(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case r < 0x20:
			out = append(out, ' ')
		case r == 0x7f:
			out = append(out, `\u007f`...)
		case r < utf8.RuneSelf:
			out = append(out, b[0])
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		b = b[size:]
	}
	return out
}

// stdinRows renders a request's recorded stdin content for "audit show":
// UTF-8 text without NUL one escaped line per line of input (a last line
// without a newline is marked so), anything else as a hexdump whose
// characters column shows only printable ASCII. It returns the label and
// the rows.
func stdinRows(data []byte) (string, []string) {
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return "stdin (hex)", strings.Split(strings.TrimSuffix(hex.Dump(data), "\n"), "\n")
	}
	text, final := string(data), true
	if !strings.HasSuffix(text, "\n") {
		final = false
	}
	rows := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, r := range rows {
		rows[i] = "| " + esc(r)
	}
	if !final {
		rows = append(rows, "(no newline at the end)")
	}
	return "stdin (text)", rows
}

// prettyRecord renders one record for "audit show", every value escaped.
func prettyRecord(e audit.Entry) string {
	r := e.Record
	var b strings.Builder
	field := func(name, value string) {
		fmt.Fprintf(&b, "  %-15s %s\n", name+":", value)
	}
	fmt.Fprintf(&b, "%s %s  (%s, seq %d)\n", esc(string(r.Type)), r.Time.UTC().Format(time.RFC3339Nano), esc(e.Location()), r.Seq)
	field("id", orDash(esc(r.ID)))
	field("session", esc(r.Session))
	field("host", esc(r.Host))
	if r.Peer != nil {
		field("peer", fmt.Sprintf("uid %d, pid %d, %s", r.Peer.UID, r.Peer.PID, orDash(esc(r.Peer.Exe))))
	}
	if r.Ref != "" {
		field("request hash", esc(r.Ref))
	}
	envLines := func(name string, env map[string]string) {
		if len(env) == 0 {
			field(name, "(none)")
			return
		}
		for i, k := range slices.Sorted(maps.Keys(env)) {
			label := ""
			if i == 0 {
				label = name + ":"
			}
			fmt.Fprintf(&b, "  %-15s %s=%s\n", label, esc(k), esc(env[k]))
		}
	}
	switch {
	case r.Request != nil:
		q := r.Request
		if q.Refused != "" {
			field("refused", esc(q.Refused))
		}
		if q.Pipeline != nil {
			cmd, _ := termtext.CommandLine(q.Pipeline)
			field("command", cmd)
		}
		if q.Reason != "" {
			field("reason", esc(q.Reason))
		}
		if q.Privileged != nil {
			field("privileged", strconv.FormatBool(*q.Privileged))
		}
		if q.ForwardAgent != nil && *q.ForwardAgent {
			field("forward agent", "true")
		}
		if q.Cwd != "" {
			field("cwd", esc(q.Cwd))
		}
		if !q.RequestTime.IsZero() {
			field("request time", q.RequestTime.Format(time.RFC3339Nano))
		}
		if q.Env != nil {
			envLines("env ("+esc(q.EnvValues)+")", q.Env)
		}
		if q.StdinBytes > 0 || q.StdinSHA256 != "" {
			field("stdin", fmt.Sprintf("%d bytes, sha256 %s", q.StdinBytes, esc(q.StdinSHA256)))
		}
		if len(q.Stdin) > 0 {
			label, rows := stdinRows(q.Stdin)
			for i, row := range rows {
				if i == 0 {
					fmt.Fprintf(&b, "  %-15s %s\n", label+":", row)
				} else {
					fmt.Fprintf(&b, "  %-15s %s\n", "", row)
				}
			}
		}
	case r.Decision != nil:
		field("verdict", esc(r.Decision.Verdict))
		field("by", orDash(esc(r.Decision.By)))
		if r.Decision.Message != "" {
			field("message", esc(r.Decision.Message))
		}
	case r.Exec != nil:
		x := r.Exec
		for i, st := range x.Stages {
			// Each hop quoted on its own, so that a file name containing
			// " -> " reads as one name.
			chain := st.Chain
			if len(chain) == 0 { // records written before chains were kept
				chain = []string{st.Path}
				if st.Link != "" {
					chain = []string{st.Link, st.Path}
				}
			}
			field(fmt.Sprintf("stage %d", i+1), quoteChain(chain))
			if st.SHA256 != "" {
				field("  file", fmt.Sprintf("dev %d, inode %d, sha256 %s", st.Dev, st.Ino, esc(st.SHA256)))
			}
			for _, w := range st.Writable {
				field("  WARNING", fmt.Sprintf("not root-only: %s %s", quote(w.Path), esc(w.Why)))
			}
			argv, _ := termtext.CommandLine([][]string{st.Argv})
			field("  argv", argv)
		}
		field("run as", fmt.Sprintf("%s (uid %d, gid %d)", esc(x.RunAs.User), x.RunAs.UID, x.RunAs.GID))
		mode := esc(x.Mode)
		if x.SudoPath != "" {
			mode += " (" + esc(x.SudoPath) + ")"
		}
		field("mode", mode)
		field("dir", quote(x.Dir))
		if len(x.DirChain) > 0 {
			field("  requested as", quoteChain(x.DirChain))
		}
		for _, w := range x.DirWritable {
			field("  WARNING", fmt.Sprintf("not root-only: %s %s", quote(w.Path), esc(w.Why)))
		}
		envLines("env ("+esc(x.EnvValues)+")", x.Env)
	case r.Result != nil:
		x := r.Result
		field("status", esc(string(x.Status)))
		if x.Message != "" {
			field("message", esc(x.Message))
		}
		codes := make([]string, len(x.ExitCodes))
		for i, c := range x.ExitCodes {
			codes[i] = strconv.Itoa(c)
		}
		field("exit codes", orDash(strings.Join(codes, " ")))
		if x.DurationNS > 0 {
			field("duration", time.Duration(x.DurationNS).String())
		}
		trunc := func(t bool) string {
			if t {
				return " (truncated)"
			}
			return ""
		}
		field("stdout", fmt.Sprintf("%d bytes%s, sha256 %s", x.StdoutBytes, trunc(x.StdoutTruncated), esc(x.StdoutSHA256)))
		for i, st := range x.Stages {
			field(fmt.Sprintf("stage %d stderr", i+1), fmt.Sprintf("%d bytes%s, sha256 %s", st.StderrBytes, trunc(st.StderrTruncated), esc(st.StderrSHA256)))
		}
	}
	return b.String()
}

// quote shell-quotes one untrusted string for audit show.
func quote(s string) string {
	q, _ := termtext.Quote(s)
	return q
}

// quoteChain renders a symlink chain, each hop quoted on its own.
func quoteChain(chain []string) string {
	parts := make([]string, len(chain))
	for i, c := range chain {
		parts[i] = quote(c)
	}
	return strings.Join(parts, " -> ")
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
