package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/journalctl"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// journalFlags are --journal-dir and --journal-file: the listing and show
// read the daemons' journal entries, as a central journal collected them
// (docs/remote.md, "Many hosts, one audit"), instead of audit logs.
type journalFlags struct {
	dir   string
	files listFlag
}

func (j *journalFlags) addFlags(fset *flag.FlagSet) {
	fset.StringVar(&j.dir, "journal-dir", "", "read the daemons' entries in the journal `directory` (a central journal: /var/log/journal/remote) instead of an audit log")
	fset.Var(&j.files, "journal-file", "read the daemons' entries in the journal `file` (a glob, as journalctl --file takes it) instead of an audit log; repeatable")
}

// given tells whether a journal was named.
func (j *journalFlags) given() bool { return j.dir != "" || len(j.files) > 0 }

// source returns the journal to read, or why the flags do not name one.
func (j *journalFlags) source(src *auditSource) (audit.JournalSource, error) {
	switch {
	case j.dir != "" && len(j.files) > 0:
		return audit.JournalSource{}, errors.New("give --journal-dir or --journal-file, not both")
	case len(src.logs) > 0 || src.config != "":
		return audit.JournalSource{}, errors.New("--journal-dir and --journal-file read a journal instead of an audit log; they do not go with --log or --config")
	}
	return audit.JournalSource{Dir: j.dir, Files: j.files}, nil
}

// journalFailed reports a journal that cannot be read and returns the
// status: exitNoInput, or exitInterrupted.
func (inv *invocation) journalFailed(ctx context.Context, cmd string, err error) int {
	if ctx.Err() != nil {
		return inv.fail(exitInterrupted, "%s: interrupted", cmd)
	}
	hint := ""
	if errors.Is(err, journalctl.ErrNotFound) {
		hint = "; install systemd's journalctl, or read the hosts' audit logs with --log"
	}
	return inv.fail(exitNoInput, "%s: %v%s", cmd, err, hint)
}

// auditListJournal prints the requests in the journal src that filter
// selects, from every host that sent entries there, ordered by time, with
// the DAEMON column: the _HOSTNAME of the entries, the machine that sent
// them.
func auditListJournal(ctx context.Context, inv *invocation, out *errWriter, src audit.JournalSource, o *auditListOptions, filter rowFilter, deps auditDeps) int {
	j := audit.NewJournalJoiner()
	var all []*audit.Summary
	bad := false
	for e, err := range audit.ReadJournal(ctx, src, journalctl.Start) {
		var je *audit.JournalEntryError
		switch {
		case errors.As(err, &je):
			inv.say("audit: %v", je)
			bad = true
			continue
		case err != nil:
			return inv.journalFailed(ctx, "audit", err)
		}
		if s, created, _ := j.Add(e); created {
			all = append(all, s)
		}
	}
	slices.SortStableFunc(all, func(a, b *audit.Summary) int { return a.Time.Compare(b.Time) })
	printRows(inv, out, &table{loc: deps.loc, daemon: true, wide: o.wide}, filter.selected(all), o, termtext.Esc(src.String()))
	if bad {
		return exitDataErr
	}
	return 0
}

// auditShowJournal prints the journal entries of request id (or of the one
// request whose id starts with it) in src, from every host, oldest first.
func auditShowJournal(ctx context.Context, inv *invocation, out *errWriter, src audit.JournalSource, id string, asJSON bool) int {
	var entries []audit.JournalEntry
	bad := false
	for e, err := range audit.ReadJournal(ctx, src, journalctl.Start) {
		var je *audit.JournalEntryError
		switch {
		case errors.As(err, &je):
			inv.say("audit show: %v", je)
			bad = true
			continue
		case err != nil:
			return inv.journalFailed(ctx, "audit show", err)
		}
		if rid, ok := e.Fields["AGENT_SUDO_ID"]; ok && strings.HasPrefix(rid, id) {
			entries = append(entries, e)
		}
	}
	// The id itself, else the one id that starts with it.
	var ids []string
	exact := false
	for _, e := range entries {
		rid := e.Fields["AGENT_SUDO_ID"]
		exact = exact || rid == id
		if !slices.Contains(ids, rid) {
			ids = append(ids, rid)
		}
	}
	switch {
	case exact:
	case len(ids) == 1:
		id = ids[0]
	case len(ids) > 1:
		named := make([]string, 0, maxAmbiguous)
		for _, m := range ids[:min(len(ids), maxAmbiguous)] {
			named = append(named, termtext.Esc(m))
		}
		more := ""
		if len(ids) > maxAmbiguous {
			more = ", ..."
		}
		return inv.fail(exitNotFound, "audit show: %s is the start of %d request ids (%s%s); give more of the id",
			termtext.Esc(id), len(ids), strings.Join(named, ", "), more)
	}
	found := 0
	for _, e := range entries {
		if e.Fields["AGENT_SUDO_ID"] != id {
			continue
		}
		found++
		if asJSON {
			out.WriteString(journalEntryJSON(e))
			continue
		}
		if found > 1 {
			out.WriteString("\n")
		}
		out.WriteString(prettyJournalEntry(e))
	}
	switch {
	case found == 0 && bad:
		return inv.fail(exitDataErr, "audit show: no request %s found, and the journal has entries that could not be read", termtext.Esc(id))
	case found == 0:
		return inv.fail(exitNotFound, "audit show: no request %s in %s", termtext.Esc(id), termtext.Esc(src.String()))
	case bad:
		return exitDataErr
	}
	return 0
}

// prettyJournalEntry renders one journal entry for "audit show", every
// value escaped: the host that sent it first, then what the daemon said.
func prettyJournalEntry(e audit.JournalEntry) string {
	f := e.Fields
	var b strings.Builder
	field := func(name, value string) {
		fmt.Fprintf(&b, "  %-15s %s\n", name+":", value)
	}
	opt := func(name, key string) {
		if v, ok := f[key]; ok {
			field(name, termtext.Esc(v))
		}
	}
	loc := orDash(termtext.Esc(f["AGENT_SUDO_AUDIT_LOG"]))
	if seq := f["AGENT_SUDO_RECORD_SEQ"]; seq != "" {
		loc += ", seq " + termtext.Esc(seq)
	}
	fmt.Fprintf(&b, "%s %s  (journal entry from %s: %s)\n", orDash(termtext.Esc(f["AGENT_SUDO_AUDIT_TYPE"])),
		e.Time.Format(time.RFC3339Nano), orDash(termtext.Esc(e.Hostname)), loc)
	field("id", orDash(termtext.Esc(f["AGENT_SUDO_ID"])))
	field("session", termtext.Esc(f["AGENT_SUDO_SESSION"]))
	field("host", termtext.Esc(f["AGENT_SUDO_HOST"]))
	field("daemon host", orDash(termtext.Esc(e.Hostname)))
	if uid, ok := f["AGENT_SUDO_PEER_UID"]; ok {
		field("peer", fmt.Sprintf("uid %s, pid %s", termtext.Esc(uid), orDash(termtext.Esc(f["AGENT_SUDO_PEER_PID"]))))
	}
	opt("request hash", "AGENT_SUDO_REF")
	if p := e.Pipeline(); p != nil {
		cmd, _ := termtext.CommandLine(p)
		field("command", cmd)
	}
	opt("verdict", "AGENT_SUDO_VERDICT")
	opt("by", "AGENT_SUDO_DECIDED_BY")
	opt("reason", "AGENT_SUDO_REASON")
	opt("status", "AGENT_SUDO_STATUS")
	opt("exit codes", "AGENT_SUDO_EXIT_CODES")
	if ns, err := strconv.ParseInt(f["AGENT_SUDO_DURATION_NS"], 10, 64); err == nil && ns > 0 {
		field("duration", time.Duration(ns).Round(time.Millisecond).String())
	}
	opt("stopped by", "AGENT_SUDO_STOPPED_BY")
	opt("record hash", "AGENT_SUDO_RECORD_HASH")
	if msg, ok := f["AGENT_SUDO_AUDIT_ERROR"]; ok {
		field("NOT IN THE LOG", termtext.Esc(msg))
	}
	opt("message", "MESSAGE")
	return b.String()
}

// journalEntryJSON returns e as one line of ASCII-only JSON: its fields as
// the journal has them, with __REALTIME_TIMESTAMP as an RFC 3339 time, and
// _HOSTNAME and _MACHINE_ID.
func journalEntryJSON(e audit.JournalEntry) string {
	m := make(map[string]string, len(e.Fields)+3)
	for k, v := range e.Fields {
		m[k] = v
	}
	m["time"] = e.Time.Format(time.RFC3339Nano)
	m["_HOSTNAME"], m["_MACHINE_ID"] = e.Hostname, e.MachineID
	b, err := json.Marshal(m)
	if err != nil {
		// Cannot happen: a map of strings.
		return fmt.Sprintf("{\"error\":%q}\n", err.Error())
	}
	return string(termtext.ASCIIJSON(b)) + "\n"
}

// parseUID reads --uid: a number.
func parseUID(v string) (uint32, error) {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a uid (a number: the uid the kernel reported for the requester)", v)
	}
	return uint32(n), nil
}

// locationOf is the JSON row's location: "file:line", or for a row read
// from a journal (no line) the log its entries name.
func locationOf(s *audit.Summary) string {
	if s.Line == 0 {
		return cmp.Or(s.File, "-")
	}
	return s.File + ":" + strconv.Itoa(s.Line)
}
