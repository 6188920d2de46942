package audit

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/agent-sudo/agent-sudo/internal/boundedline"
	"github.com/agent-sudo/agent-sudo/internal/termtext"
	"github.com/agent-sudo/agent-sudo/proto"
)

// JournalSource is a journal to read agent-sudod's entries from: a
// directory, such as the one systemd-journal-remote writes on a central
// host, or journal files. ReadJournal reads it with journalctl; see
// docs/audit.md, "A central journal".
type JournalSource struct {
	// Dir is read with journalctl --directory.
	Dir string
	// Files are read with journalctl --file, each a file name or a glob.
	Files []string
	// Journalctl is the program run; "" looks journalctl up in PATH.
	Journalctl string
}

// String names the source in messages.
func (s JournalSource) String() string {
	if s.Dir != "" {
		return "the journal directory " + s.Dir
	}
	return "the journal files " + strings.Join(s.Files, ", ")
}

// JournalEntry is one audit entry of agent-sudod read from a journal.
type JournalEntry struct {
	// Time is when the entry was written (__REALTIME_TIMESTAMP).
	Time time.Time
	// Hostname is _HOSTNAME: the host name of the machine whose journald
	// received the entry, as that machine stamped it. In a central journal
	// it is the sending host's word about itself (see docs/remote.md).
	Hostname string
	// MachineID is _MACHINE_ID, the sending machine's machine id.
	MachineID string
	// Cursor is the entry's journal cursor.
	Cursor string
	// Fields are the entry's other fields: AGENT_SUDO_* and MESSAGE.
	Fields map[string]string
}

// JournalEntryError reports an entry that could not be read; the other
// entries are still read.
type JournalEntryError struct {
	// N counts the entries from 1 in journalctl's output.
	N   int
	Err error
}

// Error returns "journal entry N: problem".
func (e *JournalEntryError) Error() string { return fmt.Sprintf("journal entry %d: %v", e.N, e.Err) }

// Unwrap returns the problem.
func (e *JournalEntryError) Unwrap() error { return e.Err }

// Bounds on what ReadJournal takes from journalctl.
const (
	// maxJournalEntry bounds one entry's JSON line: agent-sudod's entries
	// are a few kilobytes, and a pipeline field at most MaxJournalPipeline.
	maxJournalEntry = 1 << 20
)

// journalTypes are the values of AGENT_SUDO_AUDIT_TYPE ReadJournal asks
// for: every entry of the audit log (see Log.journal and Log.anchor).
var journalTypes = []string{"request", "decision", "exec", "result", "daemon", "opened", "closed"}

// journalFields are the fields journalctl prints besides its own
// (__REALTIME_TIMESTAMP, __CURSOR, ...): the audit entries' fields, and
// nothing else an entry may carry.
var journalFields = []string{
	"_HOSTNAME", "_MACHINE_ID", "MESSAGE",
	"AGENT_SUDO_AUDIT_TYPE", "AGENT_SUDO_AUDIT_LOG", "AGENT_SUDO_AUDIT_ERROR",
	"AGENT_SUDO_ID", "AGENT_SUDO_REF", "AGENT_SUDO_SESSION", "AGENT_SUDO_HOST", "AGENT_SUDO_PIPELINE",
	"AGENT_SUDO_PEER_UID", "AGENT_SUDO_PEER_PID",
	"AGENT_SUDO_VERDICT", "AGENT_SUDO_DECIDED_BY", "AGENT_SUDO_REASON",
	"AGENT_SUDO_STATUS", "AGENT_SUDO_EXIT_CODES", "AGENT_SUDO_DURATION_NS", "AGENT_SUDO_STOPPED_BY",
	"AGENT_SUDO_RECORD_HASH", "AGENT_SUDO_RECORD_SEQ",
	"AGENT_SUDO_DAEMON_EVENT", "AGENT_SUDO_VERSION", "AGENT_SUDO_DAEMON_PID", "AGENT_SUDO_INSTANCE", "AGENT_SUDO_CONFIG",
}

// journalctlArgs returns journalctl's arguments for src: every audit entry
// of agent-sudod, oldest first, as JSON lines, with fields of any size
// (--all: without it journalctl prints fields over 4 KiB as null). Only
// root's entries are agent-sudod's: _UID is set by journald from the
// sender's credentials, whereas SYSLOG_IDENTIFIER and every AGENT_SUDO_*
// field are what the sender wrote, and any local user (an agent) can send
// entries with them (logger --journald, systemd-cat), which
// systemd-journal-upload carries to a central journal with the daemon's.
func journalctlArgs(src JournalSource) []string {
	args := []string{"--no-pager", "--quiet", "--all", "--output=json", "--output-fields=" + strings.Join(journalFields, ",")}
	if src.Dir != "" {
		args = append(args, "--directory="+src.Dir)
	}
	for _, f := range src.Files {
		args = append(args, "--file="+f)
	}
	// Matches on one field are alternatives; on different fields, all
	// must hold.
	args = append(args, "_UID=0", "SYSLOG_IDENTIFIER=agent-sudod")
	for _, t := range journalTypes {
		args = append(args, "AGENT_SUDO_AUDIT_TYPE="+t)
	}
	return args
}

// JournalStart runs journalctl: prog (journalctl from PATH when "") with
// args, until ctx ends; it returns the standard output and a wait that
// returns journalctl's failure with its message (internal/journalctl's
// Start, which the daemon does not link).
type JournalStart func(ctx context.Context, prog string, args []string) (stdout io.Reader, wait func() error, err error)

// ReadJournal yields the audit entries of agent-sudod in src, oldest
// first. It runs journalctl with start and reads its JSON output as it
// comes. An entry that cannot be read yields a *JournalEntryError and the
// reading goes on; journalctl missing, failing or the context ending yield
// an error and end it. Stopping the iteration stops journalctl.
func ReadJournal(ctx context.Context, src JournalSource, start JournalStart) iter.Seq2[JournalEntry, error] {
	return func(yield func(JournalEntry, error) bool) {
		if (src.Dir == "") == (len(src.Files) == 0) {
			yield(JournalEntry{}, errors.New("read the journal: give a directory or files, not both"))
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		out, wait, err := start(ctx, src.Journalctl, journalctlArgs(src))
		if err != nil {
			yield(JournalEntry{}, fmt.Errorf("read %s: %w", src, err))
			return
		}
		stopped := false
		defer func() {
			if stopped {
				cancel()
				_ = wait()
			}
		}()
		br := bufio.NewReaderSize(out, 64<<10)
		for n := 1; ; n++ {
			// journalctl ends every entry with a newline; a last line
			// without one was cut, and is read as an entry.
			line, size, err := boundedline.Read(br, maxJournalEntry)
			if err == io.EOF && size == 0 {
				break
			}
			if err != nil && err != io.EOF {
				stopped = true
				yield(JournalEntry{}, fmt.Errorf("read %s: journalctl's output: %w", src, err))
				return
			}
			var e JournalEntry
			var perr error
			if line == nil {
				perr = fmt.Errorf("%d bytes, longer than %d; skipped", size, maxJournalEntry)
			} else {
				e, perr = parseJournalEntry(bytes.TrimSuffix(line, []byte("\n")))
			}
			if perr != nil {
				if !yield(JournalEntry{}, &JournalEntryError{N: n, Err: perr}) {
					stopped = true
					return
				}
				continue
			}
			if !yield(e, nil) {
				stopped = true
				return
			}
		}
		if err := wait(); err != nil {
			if ctx.Err() != nil {
				yield(JournalEntry{}, fmt.Errorf("read %s: %w", src, ctx.Err()))
				return
			}
			yield(JournalEntry{}, fmt.Errorf("read %s: %s", src, termtext.Esc(err.Error())))
		}
	}
}

// parseJournalEntry reads one line of journalctl -o json. A field's value
// is a string, an array of byte values (a value that is not printable
// UTF-8), null (a value journalctl left out), or an array of those when the
// entry has the field more than once; an entry with a repeated field of
// its own is refused, as the log's reader refuses a repeated key.
func parseJournalEntry(line []byte) (JournalEntry, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return JournalEntry{}, fmt.Errorf("not a JSON object: %w", err)
	}
	e := JournalEntry{Fields: map[string]string{}}
	for k, v := range raw {
		s, ok, err := journalValue(v)
		if err != nil {
			return JournalEntry{}, fmt.Errorf("field %s: %w", termtext.Esc(k), err)
		}
		if !ok {
			continue
		}
		switch k {
		case "__REALTIME_TIMESTAMP":
			us, err := strconv.ParseInt(s, 10, 64)
			if err != nil || us < 0 {
				return JournalEntry{}, fmt.Errorf("__REALTIME_TIMESTAMP %q is not a time", termtext.Esc(s))
			}
			e.Time = time.UnixMicro(us).UTC()
		case "__CURSOR":
			e.Cursor = s
		case "_HOSTNAME":
			e.Hostname = s
		case "_MACHINE_ID":
			e.MachineID = s
		default:
			if strings.HasPrefix(k, "AGENT_SUDO_") || k == "MESSAGE" {
				e.Fields[k] = s
			}
		}
	}
	if e.Time.IsZero() {
		return JournalEntry{}, errors.New("no __REALTIME_TIMESTAMP")
	}
	return e, nil
}

// journalValue decodes one field's value; ok is false for null.
func journalValue(v json.RawMessage) (s string, ok bool, err error) {
	v = bytes.TrimSpace(v)
	switch {
	case bytes.Equal(v, []byte("null")):
		return "", false, nil
	case len(v) > 0 && v[0] == '"':
		if err := json.Unmarshal(v, &s); err != nil {
			return "", false, err
		}
		return s, true, nil
	case len(v) > 0 && v[0] == '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(v, &elems); err != nil {
			return "", false, err
		}
		b := make([]byte, 0, len(elems))
		for _, el := range elems {
			n, err := strconv.ParseUint(string(el), 10, 8)
			if err != nil {
				return "", false, errors.New("the field is repeated in the entry, or not a string")
			}
			b = append(b, byte(n))
		}
		return string(b), true, nil
	}
	return "", false, errors.New("not a string")
}

// JournalJoiner joins journal entries into one Summary per request, like
// [Joiner] joins records: the entries of each machine's log (its machine
// id, host name and AGENT_SUDO_AUDIT_LOG) are joined on their own, by
// AGENT_SUDO_REF, so that two hosts' requests with the same id stay apart.
// Entries of older daemons, without AGENT_SUDO_REF, join by id. The zero
// JournalJoiner is not usable; use NewJournalJoiner.
type JournalJoiner struct {
	logs map[string]*Joiner
}

// NewJournalJoiner returns an empty JournalJoiner.
func NewJournalJoiner() *JournalJoiner {
	return &JournalJoiner{logs: map[string]*Joiner{}}
}

// idRef marks a ref made up from the id, for entries without
// AGENT_SUDO_REF; it is removed from the summaries.
const idRef = "\x00id:"

// Add folds e into its request's Summary, as Joiner.Add does. The Summary's
// DaemonHost is e's Hostname, its File the log named by
// AGENT_SUDO_AUDIT_LOG and its Line 0; its Time is that of the first
// entry read (a decision or a refusal: the journal has no entry for a
// request's arrival). Entries of other kinds (daemon, opened, closed)
// return nil.
func (j *JournalJoiner) Add(e JournalEntry) (s *Summary, created, done bool) {
	key := e.MachineID + "\x00" + e.Hostname + "\x00" + e.Fields["AGENT_SUDO_AUDIT_LOG"]
	jn := j.logs[key]
	if jn == nil {
		jn = NewJoiner()
		j.logs[key] = jn
	}
	entry, ok := e.entry()
	if !ok {
		return nil, false, false
	}
	s, created, done = jn.Add(entry)
	if s == nil {
		return nil, false, false
	}
	if strings.HasPrefix(s.Ref, idRef) {
		s.Ref = ""
	}
	if s.Pipeline() == nil {
		if p := e.Pipeline(); p != nil {
			var q RequestSection
			if s.Request != nil {
				q = *s.Request
			}
			q.Pipeline = p
			s.Request = &q
		}
	}
	return s, created, done
}

// entry returns e as the Entry of the record it stands for, with what the
// entry says of it; ok is false for entries that are no request's.
func (e JournalEntry) entry() (Entry, bool) {
	f := e.Fields
	typ := Type(f["AGENT_SUDO_AUDIT_TYPE"])
	switch typ {
	case TypeRequest, TypeDecision, TypeExec, TypeResult:
	default:
		return Entry{}, false
	}
	r := &Record{Type: typ, Time: e.Time, ID: f["AGENT_SUDO_ID"], Ref: f["AGENT_SUDO_REF"],
		Session: f["AGENT_SUDO_SESSION"], Host: f["AGENT_SUDO_HOST"], DaemonHost: e.Hostname}
	if r.Ref == "" && typ != TypeRequest {
		r.Ref = idRef + r.ID
	}
	if uid, err := strconv.ParseUint(f["AGENT_SUDO_PEER_UID"], 10, 32); err == nil {
		pid, _ := strconv.ParseInt(f["AGENT_SUDO_PEER_PID"], 10, 32)
		r.Peer = &Peer{UID: uint32(uid), PID: int32(pid)}
	}
	pipeline := e.Pipeline()
	switch typ {
	case TypeRequest:
		// Refused, or not recorded: the request's only entry.
		refused := f["AGENT_SUDO_REASON"]
		if msg := f["AGENT_SUDO_AUDIT_ERROR"]; msg != "" {
			refused = cmp.Or(refused, "error") + " (NOT in the audit log: " + msg + ")"
		}
		r.Request = &RequestSection{Refused: cmp.Or(refused, "refused"), Pipeline: pipeline}
	case TypeDecision:
		r.Decision = &DecisionSection{Verdict: f["AGENT_SUDO_VERDICT"], By: f["AGENT_SUDO_DECIDED_BY"]}
	case TypeExec:
		r.Exec = &ExecSection{}
	case TypeResult:
		x := &ResultSection{Status: proto.Status(f["AGENT_SUDO_STATUS"])}
		if codes := f["AGENT_SUDO_EXIT_CODES"]; codes != "" {
			for c := range strings.SplitSeq(codes, ",") {
				n, err := strconv.Atoi(c)
				if err != nil {
					x.ExitCodes = nil
					break
				}
				x.ExitCodes = append(x.ExitCodes, n)
			}
		}
		x.DurationNS, _ = strconv.ParseInt(f["AGENT_SUDO_DURATION_NS"], 10, 64)
		r.Result = x
	}
	return Entry{File: f["AGENT_SUDO_AUDIT_LOG"], Hash: f["AGENT_SUDO_RECORD_HASH"], Record: r}, true
}

// Pipeline returns the command of the entry's AGENT_SUDO_PIPELINE, nil
// when it has none or it is not a JSON array of argv arrays.
func (e JournalEntry) Pipeline() [][]string {
	var p [][]string
	if s := e.Fields["AGENT_SUDO_PIPELINE"]; s != "" && json.Unmarshal([]byte(s), &p) == nil {
		return p
	}
	return nil
}
