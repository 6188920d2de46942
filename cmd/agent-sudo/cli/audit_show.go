package cli

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agent-sudo/agent-sudo/internal/audit"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
)

// auditShowOptions are the flags of audit show.
type auditShowOptions struct {
	auditSource
	journal journalFlags
	json    bool
	// daemon prints the daemon's records instead of a request's.
	daemon bool
}

func auditShowFlags(_ *invocation) (*flag.FlagSet, *auditShowOptions) {
	o := &auditShowOptions{}
	fset := auditShowUsage().newFlagSet()
	o.addFlags(fset)
	fset.BoolVar(&o.json, "json", false, "print the records themselves, one JSON line each, in ASCII")
	fset.BoolVar(&o.daemon, "daemon", false, "print the daemon's records, each start and stop of the daemon, instead of a request's")
	o.journal.addFlags(fset)
	return fset, o
}

func auditShowUsage() *usage {
	return &usage{
		name:     "audit show",
		synopsis: []string{"agent-sudo audit show [flags] ID", "agent-sudo audit show --daemon [flags]"},
		text: `Print every record of the request with id ID (all of them, if a client
reused the id), oldest first, every value escaped. ID may be the start of
an id, as the listing shows it, when no other request's id starts the same
way; an id that is a record's whole id is that request, even when it also
starts longer ids. With --json, print the
records as the log has them, each as one line of ASCII JSON. With --log
given more than once, the logs are searched one after the other, in the
order given; each record names its file and line. With --daemon, print
instead the daemon's own records: each time it started serving, and each
time it stopped, with why; it takes no ID, and exits 1 when the log has no
daemon record. With --journal-dir DIR or --journal-file FILE, print
instead the request's journal entries, from every host that sent entries
there, each with the host name of the machine that sent it (--json: the
entries' fields).
`,
		exits: []exitDoc{
			{"0", "the request's records were printed"},
			{"1", "no request has that id, or several ids start with it"},
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

// auditShowMain is "agent-sudo audit show".
func auditShowMain(ctx context.Context, inv *invocation, args []string) int {
	u := auditShowUsage()
	fset, o := auditShowFlags(inv)
	pos, code, ok := inv.parse(u, fset, args)
	if !ok {
		return code
	}
	if o.daemon && len(pos) != 0 {
		return inv.fail(exitUsage, "audit show: --daemon takes no request id, got %d arguments; see 'agent-sudo help audit show'", len(pos))
	}
	if !o.daemon && len(pos) != 1 {
		return inv.fail(exitUsage, "audit show: want exactly one request id, got %d arguments; see 'agent-sudo help audit show'", len(pos))
	}
	id := ""
	if !o.daemon {
		if pos[0] == "" {
			return inv.fail(exitUsage, "audit show: the request id is empty; give the id, or its start, as the listing shows it")
		}
		id = pos[0]
	}
	if o.journal.given() {
		src, err := o.journal.source(&o.auditSource)
		if err == nil && o.daemon {
			err = errors.New("--daemon reads an audit log; journalctl --directory DIR AGENT_SUDO_AUDIT_TYPE=daemon shows the daemons' journal entries")
		}
		if err != nil {
			return inv.fail(exitUsage, "audit show: %v", err)
		}
		return inv.withOutput("audit show", func(out *errWriter) int {
			return auditShowJournal(ctx, inv, out, src, id, o.json)
		})
	}
	paths, err := o.paths()
	if err != nil {
		return inv.fail(exitConfig, "audit show: %v; pass --log FILE to read a log directly", err)
	}
	return inv.withOutput("audit show", func(out *errWriter) int {
		return auditShow(ctx, inv, out, paths, id, o.json, o.daemon)
	})
}

// auditShow prints the records of request id, or with daemon the daemon
// records, from the logs at paths and their rotated files, log by log, in
// the order given.
func auditShow(ctx context.Context, inv *invocation, out *errWriter, paths []string, id string, asJSON, daemon bool) int {
	var files []string
	for _, path := range paths {
		f, err := audit.Files(path)
		if err != nil {
			return inv.unreadable("audit show", err)
		}
		files = append(files, f...)
	}
	if !daemon {
		full, code, ok := resolveID(ctx, inv, files, id)
		if !ok {
			return code
		}
		id = full
	}
	found, bad := 0, false
	var sheet sheetRecords
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
		if daemon != (e.Record.Type == audit.TypeDaemon) || !daemon && e.Record.ID != id {
			continue
		}
		found++
		sheet.add(e.Record)
		if asJSON {
			out.WriteString(string(termtext.ASCIIJSON(e.Raw)) + "\n")
		} else {
			if found > 1 {
				out.WriteString("\n")
			}
			out.WriteString(prettyRecord(e))
		}
	}
	if text := sheet.sheetText(); !asJSON && !daemon && text != "" {
		out.WriteString("\n" + text)
	}
	switch {
	case found == 0 && daemon && bad:
		return inv.fail(exitDataErr, "audit show: no daemon record found, and the log has corrupt lines")
	case found == 0 && daemon:
		return inv.fail(exitNotFound, "audit show: no daemon record in %s (a log written before daemon records existed)", termtext.Esc(strings.Join(files, ", ")))
	case found == 0 && bad:
		return inv.fail(exitDataErr, "audit show: no request %s found, and the log has corrupt lines", termtext.Esc(id))
	case found == 0:
		return inv.fail(exitNotFound, "audit show: no request %s in %s", termtext.Esc(id), strings.Join(files, ", "))
	case bad:
		return exitDataErr
	}
	return 0
}

// maxAmbiguous is how many of the ids an ambiguous prefix matches are
// named in the message.
const maxAmbiguous = 5

// resolveID returns the id of the request arg names in files: arg itself
// when a record has that id, else the one id that starts with arg. When
// several ids start with arg, or a file cannot be read, it reports why and
// returns the status (ok false). A prefix that matches nothing is returned
// as it is, for the caller's "no request" message. Corrupt lines are left
// for the caller's reading to report.
func resolveID(ctx context.Context, inv *invocation, files []string, arg string) (id string, code int, ok bool) {
	var matches []string // distinct, in the order first seen
	seen := map[string]bool{}
	for e, err := range audit.Read(ctx, files...) {
		var le *audit.LineError
		switch {
		case errors.As(err, &le):
			continue
		case ctx.Err() != nil:
			return "", inv.fail(exitInterrupted, "audit show: interrupted"), false
		case err != nil:
			return "", inv.unreadable("audit show", err), false
		}
		rid := e.Record.ID
		if rid == arg {
			return arg, 0, true
		}
		if strings.HasPrefix(rid, arg) && !seen[rid] {
			seen[rid] = true
			matches = append(matches, rid)
		}
	}
	if len(matches) <= 1 {
		if len(matches) == 1 {
			return matches[0], 0, true
		}
		return arg, 0, true
	}
	named := make([]string, 0, maxAmbiguous)
	for _, m := range matches[:min(len(matches), maxAmbiguous)] {
		named = append(named, termtext.Esc(m))
	}
	more := ""
	if len(matches) > maxAmbiguous {
		more = ", ..."
	}
	return "", inv.fail(exitNotFound, "audit show: %s is the start of %d request ids (%s%s); give more of the id",
		termtext.Esc(arg), len(matches), strings.Join(named, ", "), more), false
}

// prettyRecord renders one record for "audit show", every value escaped.
func prettyRecord(e audit.Entry) string {
	r := e.Record
	var b strings.Builder
	field := func(name, value string) {
		fmt.Fprintf(&b, "  %-15s %s\n", name+":", value)
	}
	fmt.Fprintf(&b, "%s %s  (%s, seq %d)\n", termtext.Esc(string(r.Type)), r.Time.UTC().Format(time.RFC3339Nano), termtext.Esc(e.Location()), r.Seq)
	if d := r.Daemon; d != nil {
		// No request's: no id, session, host or peer.
		field("event", termtext.Esc(d.Event))
		if d.Reason != "" {
			field("reason", termtext.Esc(d.Reason))
		}
		field("version", termtext.Esc(d.Version))
		field("pid", strconv.Itoa(d.PID))
		field("config", orDash(termtext.Esc(d.Config)))
		field("instance", termtext.Esc(d.Instance))
		if r.DaemonHost != "" {
			field("daemon host", termtext.Esc(r.DaemonHost))
		}
		return b.String()
	}
	field("id", orDash(termtext.Esc(r.ID)))
	field("session", termtext.Esc(r.Session))
	field("host", termtext.Esc(r.Host))
	if r.DaemonHost != "" {
		field("daemon host", termtext.Esc(r.DaemonHost))
	}
	if r.Peer != nil {
		field("peer", fmt.Sprintf("uid %d, pid %d, %s", r.Peer.UID, r.Peer.PID, orDash(termtext.Esc(r.Peer.Exe))))
		peerFacts(&b, r.Peer)
	}
	if r.Ref != "" {
		field("request hash", termtext.Esc(r.Ref))
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
			fmt.Fprintf(&b, "  %-15s %s=%s\n", label, termtext.Esc(k), termtext.Esc(env[k]))
		}
	}
	switch {
	case r.Request != nil:
		q := r.Request
		if q.Refused != "" {
			field("refused", termtext.Esc(q.Refused))
		}
		if q.Pipeline != nil {
			cmd, _ := termtext.CommandLine(q.Pipeline)
			field("command", cmd)
		}
		if q.Reason != "" {
			field("reason", termtext.Esc(q.Reason))
		}
		if q.Privileged != nil {
			field("privileged", strconv.FormatBool(*q.Privileged))
		}
		if q.ForwardAgent != nil && *q.ForwardAgent {
			field("forward agent", "true")
		}
		if q.Cwd != "" {
			field("cwd", termtext.Esc(q.Cwd))
		}
		if !q.RequestTime.IsZero() {
			field("request time", q.RequestTime.Format(time.RFC3339Nano))
		}
		if q.Env != nil {
			envLines("env ("+termtext.Esc(q.EnvValues)+")", q.Env)
		}
		if q.StdinBytes > 0 || q.StdinSHA256 != "" {
			field("stdin", fmt.Sprintf("%d bytes, sha256 %s", q.StdinBytes, termtext.Esc(q.StdinSHA256)))
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
		field("verdict", termtext.Esc(r.Decision.Verdict))
		field("by", orDash(termtext.Esc(r.Decision.By)))
		if r.Decision.Message != "" {
			field("message", termtext.Esc(r.Decision.Message))
		}
		d := r.Decision
		if len(d.Approvals) == 0 {
			if d.Approver != nil {
				field("approver", approverText(d.Approver))
			}
			if d.Signed != nil {
				field("signed", signedText(d.Signed))
			}
			break
		}
		// A two-person request: every allow, in the order given, the last
		// one being By, Approver and Signed.
		n := len(d.Approvals) + 1
		for i, a := range d.Approvals {
			field(fmt.Sprintf("allow %d of %d", i+1, n), orDash(termtext.Esc(a.By)))
			field("  person", orDash(termtext.Esc(a.Identity)))
			allowSigning(field, a.Person, a.Signed)
		}
		field(fmt.Sprintf("allow %d of %d", n, n), orDash(termtext.Esc(d.By)))
		if d.Signed != nil && d.Signed.Person != "" {
			field("  person", termtext.Esc(d.Signed.Person))
		} else if d.Approver != nil && d.Approver.LoginUID != nil {
			field("  person", fmt.Sprintf("uid %d", *d.Approver.LoginUID))
		}
		allowSigning(field, d.Approver, d.Signed)
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
				field("  file", fmt.Sprintf("dev %d, inode %d, sha256 %s", st.Dev, st.Ino, termtext.Esc(st.SHA256)))
			}
			for _, w := range st.Writable {
				field("  WARNING", fmt.Sprintf("not root-only: %s %s", quote(w.Path), termtext.Esc(w.Why)))
			}
			argv, _ := termtext.CommandLine([][]string{st.Argv})
			field("  argv", argv)
		}
		field("run as", fmt.Sprintf("%s (uid %d, gid %d)", termtext.Esc(x.RunAs.User), x.RunAs.UID, x.RunAs.GID))
		mode := termtext.Esc(x.Mode)
		if x.SudoPath != "" {
			mode += " (" + termtext.Esc(x.SudoPath) + ")"
		}
		field("mode", mode)
		field("dir", quote(x.Dir))
		if len(x.DirChain) > 0 {
			field("  requested as", quoteChain(x.DirChain))
		}
		for _, w := range x.DirWritable {
			field("  WARNING", fmt.Sprintf("not root-only: %s %s", quote(w.Path), termtext.Esc(w.Why)))
		}
		envLines("env ("+termtext.Esc(x.EnvValues)+")", x.Env)
	case r.Result != nil:
		x := r.Result
		field("status", termtext.Esc(string(x.Status)))
		if x.StoppedBy != "" {
			field("stopped by", termtext.Esc(x.StoppedBy))
		}
		if x.Message != "" {
			field("message", termtext.Esc(x.Message))
		}
		field("exit codes", orDash(audit.JoinExitCodes(x.ExitCodes, " ")))
		if x.DurationNS > 0 {
			field("duration", time.Duration(x.DurationNS).String())
		}
		trunc := func(t bool) string {
			if t {
				return " (truncated)"
			}
			return ""
		}
		field("stdout", fmt.Sprintf("%d bytes%s, sha256 %s", x.StdoutBytes, trunc(x.StdoutTruncated), termtext.Esc(x.StdoutSHA256)))
		for i, st := range x.Stages {
			field(fmt.Sprintf("stage %d stderr", i+1), fmt.Sprintf("%d bytes%s, sha256 %s", st.StderrBytes, trunc(st.StderrTruncated), termtext.Esc(st.StderrSHA256)))
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
		rows[i] = "| " + termtext.Esc(r)
	}
	if !final {
		rows = append(rows, "(no newline at the end)")
	}
	return "stdin (text)", rows
}

// peerFacts writes the peer's ancestry (one process per line, the peer
// first, each with its pid, exe and the start of its argv, then what
// changed of the requester after it connected, if anything) and container
// identity, when the record has them, every value escaped.
func peerFacts(b *strings.Builder, p *audit.Peer) {
	row := func(label, value string) {
		fmt.Fprintf(b, "  %-15s %s\n", label, value)
	}
	if a := p.Ancestry; a != nil {
		for i, h := range a.Hops {
			label := ""
			if i == 0 {
				label = "ancestry:"
			}
			argv, _ := termtext.CommandLine([][]string{h.Argv})
			if h.ArgvCut {
				argv += " …"
			}
			row(label, fmt.Sprintf("pid %d, %s, comm %s, argv %s", h.PID, orDash(termtext.Esc(h.Exe)), termtext.Esc(h.Comm), orDash(argv)))
		}
		label := ""
		if len(a.Hops) == 0 {
			label = "ancestry:"
		}
		row(label, "(walk ended: "+termtext.Esc(a.End)+")")
		if a.Changed != "" {
			row("NOT VERIFIED:", termtext.Esc(a.Changed)+"; the processes above were read later, not who asked")
		}
	}
	if c := p.Container; c != nil {
		var ns []string
		for _, k := range c.SortedNS() {
			ns = append(ns, fmt.Sprintf("%s:[%d]", k, c.NS[k]))
		}
		v := "namespaces " + strings.Join(ns, " ")
		if c.InnerUID != nil {
			v += fmt.Sprintf(", uid %d inside", *c.InnerUID)
		}
		if c.InnerPID != 0 {
			v += fmt.Sprintf(", pid %d inside", c.InnerPID)
		}
		if c.InitPID != 0 {
			v += fmt.Sprintf(", init pid %d", c.InitPID)
		}
		if c.Cgroup != "" {
			v += ", cgroup " + termtext.Esc(c.Cgroup)
		}
		if c.Controller != nil {
			v += fmt.Sprintf(", counted as uid %d", *c.Controller)
		}
		row("container:", v)
	}
}

// allowSigning writes, under one allow of a two-person request, whether
// it was signed: the passkey (signedText), or not, from a console and who
// was behind it (approverText).
func allowSigning(field func(name, value string), console *audit.Person, signed *audit.SignedBy) {
	switch {
	case signed != nil:
		field("  signed", signedText(signed))
	case console != nil:
		field("  signed", "no: a console, "+approverText(console))
	default:
		field("  signed", "no")
	}
}

// signedText describes a passkey's signature of a decision: the approver
// it was enrolled as, its credential id (hex, as approve web list shows
// it) and the connection that carried it. Every value is escaped.
func signedText(s *audit.SignedBy) string {
	return fmt.Sprintf("passkey %s, credential %x, carried by %s", quote(s.Approver), s.Assertion.CredentialID, orDash(termtext.Esc(s.Relay)))
}

// approverText describes who was behind a deciding console: the kernel's
// login uid and terminal owner, then what its environment said, marked as
// such. Every value is escaped.
func approverText(a *audit.Person) string {
	var parts []string
	if a.LoginUID != nil {
		parts = append(parts, fmt.Sprintf("login uid %d", *a.LoginUID))
	} else {
		parts = append(parts, "no login uid")
	}
	if a.TTY != "" {
		t := "tty " + termtext.Esc(a.TTY)
		if a.TTYOwner != nil {
			t += fmt.Sprintf(" (owner uid %d)", *a.TTYOwner)
		}
		parts = append(parts, t)
	}
	if a.SudoUser != "" || a.SudoUID != "" {
		parts = append(parts, fmt.Sprintf("its environment says SUDO_USER=%s SUDO_UID=%s", termtext.Esc(a.SudoUser), termtext.Esc(a.SudoUID)))
	}
	return strings.Join(parts, ", ")
}
